/*
 * generate.c — --mode generate (issue 13; docs/inference.md): transformers'
 * GenerationMixin.generate() with greedy decoding as a plan.
 *
 * What it follows (transformers, read at the commits docs/inference.md names):
 *  - generation/utils.py GenerationMixin._sample: per step
 *      model_inputs = prepare_inputs_for_generation(input_ids, ...)  # input_ids[:, -cache_position.shape[0]:]
 *      outputs = model(**model_inputs)                                # logits_to_keep=1
 *      _update_model_kwargs_for_generation: attention_mask = cat([mask, mask.new_ones((B, 1))]),
 *                                           cache_position = cache_position[-1:] + 1
 *      next_token_logits = outputs.logits[:, -1, :].to(copy=True, dtype=torch.float32)
 *      next_tokens = argmax(next_token_logits, -1)
 *      next_tokens = next_tokens * unfinished_sequences + pad_token_id * (1 - unfinished_sequences)
 *      input_ids = cat([input_ids, next_tokens[:, None]], dim=-1)
 *      del outputs
 *    next_token_logits and next_tokens are locals: alive through the next
 *    step's forward until rebound after it.
 *  - cache_utils.py DynamicLayer.update: keys = cat([keys, key_states], -2)
 *    from an empty tensor (the prefill copies too; each step allocates the
 *    grown tensor before the old is freed); DynamicSlidingWindowLayer keeps a
 *    view of the last window - 1 tokens of the full tensor it returns (the
 *    storage stays); StaticLayer allocates zeros of max_cache_len at the
 *    first update and writes in place (index_copy_).
 *
 * The plan runs two forward passes: the prefill over the prompt (the LM head
 * on the last position only), and the last decoding step, whose live set is
 * the largest of all decoding steps (every step holds what the step before
 * held, one token longer); between them the caches and the loop's tensors
 * grow to the last step's lengths (a quantized cache, kvquant.c, also runs the
 * last step that requantizes, before the last one; a sliding layer whose prompt
 * passed its window, the first step: prefill_storage_held). Each pass uses the model loaded at its
 * input length (vc__model_twin); the marker event between the passes splits
 * the peaks (vc_sim.peak_pre / peak_post).
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ops.h"
#include "plan.h"
#include "release.h"
#include "serve_nccl.h"
#include "util.h"

const vc_model *vc__gen_input_model(const vc_build *b) { return b->gen.on ? b->gen.twin[0] : b->m; }

static int decoder_ids(const vc_model *m, size_t enc);
static bool encdec_contract(const vc_model *m, size_t enc);
static vc_status images_begin(vc_build *b, vc_error *err);
static vc_status encdec_begin(vc_build *b, size_t enc, vc_error *err);
static void encdec_emit(vc_build *b);
typedef struct loop_state loop_state;
static void decoder_step(vc_build *b, loop_state *ls, int64_t k);
static bool projection_of(const vc_model *m, size_t enc_end, int enc_val, int i);

vc_status vc__gen_begin(vc_build *b, vc_error *err)
{
    const vc_model *m = b->m;
    vc_gen *g = &b->gen;
    g->xval = -1;
    for (size_t i = 0; i < m->ninst; i++) /* an encoder-decoder: "Encoder-decoders" below */
        if (m->inst[i].name && !strcmp(m->inst[i].name, "encoder") && encdec_contract(m, i)) {
            bool t5 = false;
            for (size_t j = 0; j < m->ninst && !t5; j++) t5 = !strcmp(m->inst[j].kind->name, "T5Attention");
            if (g->profile)
                return vc_set_error(err, VC_ERR_USAGE, O("serve"), "%s",
                                    t5 ? "vLLM has no T5ForConditionalGeneration (vllm/model_executor/models/registry.py "
                                         "@0002bff0: its one encoder-decoder is WhisperForConditionalGeneration, the others "
                                         "were removed with the V0 engine)"
                                       : "vLLM's serving of an encoder-decoder is not modelled");
            return encdec_begin(b, i, err);
        }
    if (!vc_loss_row_get(m->loss)->causal || m->ninputs != 1 || m->val[0].dt != VC_DT_I64 || m->val[0].shape.nd != 1)
        return vc_set_error(err, VC_ERR_USAGE, g->profile ? O("serve") : O("mode"),
                            "generate needs a causal language model: a Hugging Face config.json, or a model file "
                            "with \"loss\": \"causal_lm\" and one int64 input of token ids [seq]");
    if (m->gen_json && m->sp) /* a decoding step's one token does not split over the ranks */
        return vc_set_error(err, VC_ERR_USAGE, O("sp"), "sequence parallelism is modelled for training and " OV("mode", "infer") ", not for generation");
    vc_status ist = images_begin(b, err); /* --image: "Images" below */
    if (ist) return ist;
    int64_t total;
    if (__builtin_add_overflow(b->o.prompt, b->o.new_tokens, &total) ||
        __builtin_add_overflow(total, g->image_tokens, &total) || total > VC_MAX_DIM_SIZE)
        return vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "prompt + new tokens pass 2^40");
    /* the model is fed prompt + new tokens - 1 tokens (the last one chosen is not fed back) */
    if (!g->profile && m->max_positions > 0 && total - 1 > m->max_positions)
        return vc_set_error(err, VC_ERR_USAGE, O("prompt"),
                            "prompt + new tokens - 1 (%lld tokens fed to the model%s) pass its %lld positions "
                            "(max_position_embeddings; no sliding window bounds its attention)", (long long)(total - 1),
                            g->image_tokens ? ", the image tokens included" : "", (long long)m->max_positions);
    g->beams = g->profile || b->o.num_beams < 1 ? 1 : b->o.num_beams;
    if (g->beams > 1 && (g->image_tokens || b->o.cache != VC_CACHE_DYNAMIC))
        return vc_set_error(err, VC_ERR_USAGE, O("num_beams"), "beam search is modelled with " OV("cache", "dynamic")
                            " and text prompts (DynamicLayer.reorder_cache), not %s",
                            g->image_tokens ? "with images" : "with another cache");
    g->on = true;
    g->nkv = 0;
    g->hybrid = false;
    /* vc_kv_update's callers (layers/llm.c, layers/mla.c) */
    static const char *const cached[] = {"RotaryAttention", "MLAttention"};
    for (size_t i = 0; i < m->ninst; i++) {
        /* the tower's instances (Qwen2.5-VL's vision RotaryAttention: no cache, layers/llm.c block_mask) */
        const bool tower = i >= g->tower_first && i < g->tower_end;
        for (size_t j = 0; j < sizeof cached / sizeof *cached; j++)
            if (!tower && !strcmp(m->inst[i].kind->name, cached[j])) g->nkv++;
        g->hybrid |= !strcmp(m->inst[i].kind->name, "GatedDeltaNet");
        /* HybridMambaAttentionDynamicCache.update (modeling_granitemoehybrid.py @ 00511f5d): the first update
         * keeps key_states and value_states themselves, as Qwen3NextDynamicCache's (dynamic_update) */
        g->hybrid |= !strcmp(m->inst[i].kind->name, "Mamba2Mixer");
        /* Lfm2HybridConvCache.update (modeling_lfm2.py @ 0096ba4f): the same */
        g->hybrid |= !strcmp(m->inst[i].kind->name, "ShortConv");
    }
    /* Qwen3NextModel.forward makes its own Qwen3NextDynamicCache whenever use_cache and no cache is
     * passed (modeling_qwen3_next.py @7515843b); generate()'s other cache classes have no state for
     * the Gated DeltaNet layers */
    /* GraniteMoeHybridForCausalLM.prepare_inputs_for_generation makes its HybridMambaAttentionDynamicCache
     * whenever no cache is passed (modeling_granitemoehybrid.py @ 00511f5d); another cache class has no
     * conv_states / ssm_states for its Mamba2 layers */
    bool mamba = false;
    for (size_t i = 0; i < m->ninst && !mamba; i++) mamba = !strcmp(m->inst[i].kind->name, "Mamba2Mixer");
    if ((mamba || g->hybrid) && g->beams > 1)
        return vc_set_error(err, VC_ERR_USAGE, O("num_beams"), "beam search over a model with Gated DeltaNet or Mamba2 "
                            "layers (their caches' reorder_cache) is not modelled");
    /* Lfm2Model.forward makes its Lfm2HybridConvCache whenever use_cache and no cache is passed (generate()
     * passes none: _supports_default_dynamic_cache is False for lfm2) */
    bool shortconv = false;
    for (size_t i = 0; i < m->ninst && !shortconv; i++) shortconv = !strcmp(m->inst[i].kind->name, "ShortConv");
    if (shortconv && !g->profile && b->o.cache != VC_CACHE_DYNAMIC)
        return vc_set_error(err, VC_ERR_USAGE, O("cache"), "a model with short convolution layers (lfm2) runs its own "
                            "Lfm2HybridConvCache: only " OV("cache", "dynamic"));
    if (mamba && !g->profile && b->o.cache != VC_CACHE_DYNAMIC)
        return vc_set_error(err, VC_ERR_USAGE, O("cache"), "a model with Mamba2 layers (granitemoehybrid, nemotron_h) runs its own "
                            "HybridMambaAttentionDynamicCache: only " OV("cache", "dynamic"));
    if (g->hybrid && !g->profile && b->o.cache != VC_CACHE_DYNAMIC)
        return vc_set_error(err, VC_ERR_USAGE, O("cache"), "a model with Gated DeltaNet layers (qwen3_next) runs its own "
                            "Qwen3NextDynamicCache: only " OV("cache", "dynamic"));
    /* --loss grpo with --grad-ckpt: TRL's unwrap_model_for_generation turns gradient checkpointing off around
     * generate() (trl/models/utils.py _unwrap_model_for_generation @ f2cd5771), so the decoder layers keep
     * past_key_values and the cache grows as without it (src/engine/grpo.c) */
    g->shift = 0;
    if (!g->profile) {
        g->prompt = b->o.prompt + g->image_tokens; /* the processor's input_ids: the image tokens and the text */
        g->steps = b->o.new_tokens;
        g->head_rows = 1;
        /* GenerationMixin._prefill ("The prefill" below): none for a one-token prompt */
        g->shift = g->prompt > 1 && vc_transformers_value(m->tf.release, VC_TF_PREFILL_BUT_LAST);
    }
    vc_model *t0 = NULL, *t1 = NULL;
    vc_status st = vc__model_twin(m, g->prompt - g->shift, &t0, err);
    if (st == VC_OK) st = g->image_tokens ? vc__model_twin_decode(m, g->head_rows, &t1, err)
                                          : vc__model_twin(m, g->head_rows, &t1, err);
    g->twin[0] = t0;
    g->twin[1] = t1;
    if (st != VC_OK) {
        if (!err->path[0]) snprintf(err->path, sizeof err->path, O("prompt"));
        return st;
    }
    return VC_OK;
}

void vc__gen_end(vc_build *b)
{
    for (int i = 0; i < 2; i++) {
        vc_model_free((vc_model *)b->gen.twin[i]);
        b->gen.twin[i] = NULL;
    }
}

/* cache.index_copy_(2, cache_position, x): in place, x read */
static void index_copy(vc_build *b, vc_t cache, vc_t x)
{
    vc_op *o = vc_op_begin(b, "index_copy_");
    int i = vc_op_in_nodiff(o, cache);
    vc_op_in_nodiff(o, x);
    vc_op_out_view(o, i, vc_numel_of(b, cache), true);
    vc_op_end(o);
}

/* ---- the cache (layer.h vc_kv_update) ---- */

static int64_t min64(int64_t a, int64_t c) { return a < c ? a : c; }

/* Tokens a sliding layer's cache holds as a view after `cum` tokens: the last window - 1. */
static int64_t kept(const vc_kv_slot *s, int64_t cum) { return s->window > 0 ? min64(cum, s->window - 1) : cum; }

/* --cache offloaded: DynamicCache(config, offloading=True) (generation/utils.py
 * _prepare_cache_for_generation, cache_implementation="offloaded"; cache_utils.py
 * at transformers@004999d9). Cache.update(layer_idx): prefetch(layer_idx + 1)
 * first (the next layer's cache, the first layer's after the last,
 * CacheLayerMixin.prefetch: keys.to(device) when it is initialized and on the
 * CPU: a new GPU tensor of what the host holds), then the layer's update
 * (DynamicLayer: cat(keys, key_states), the prefetched copy freed as keys is
 * rebound; a sliding layer keeps the last window - 1 tokens), then
 * offload(layer_idx) (keys.to("cpu")): the cat's result stays on the GPU only
 * while the attention holds it. The host-side copies are not GPU memory. */
static bool offloaded_update(vc_build *b, vc_kv_slot *s, vc_t *k, vc_t *v, int64_t *S, int64_t kpt, int64_t vpt,
                             vc_dtype dt)
{
    vc_gen *g = &b->gen;
    const int64_t L = g->seq;
    int idx = (int)(s - g->slot), nx = idx + 1 < g->nkv ? idx + 1 : 0;
    s->kpt = kpt;
    s->vpt = vpt;
    if (nx < g->nslot) {
        vc_kv_slot *n = &g->slot[nx];
        int64_t seen = nx < idx ? g->past + L : g->past; /* the first layer, after the last: updated this pass */
        if (n->k >= 0 && n->gk < 0) { /* initialized and on the host */
            int64_t t = kept(n, seen);
            n->gk = vc__op_new(b, "_to_copy", vc_n_sample(n->kpt * t), vc_dt_of(b, n->k));
            n->gv = vc__op_new(b, "_to_copy", vc_n_sample(n->vpt * t), vc_dt_of(b, n->v));
        }
    }
    int64_t in = kept(s, g->past);
    vc_numel nk = vc_n_sample(kpt * (in + L)), nv = vc_n_sample(vpt * (in + L));
    vc_t nk_t = vc__op_nograd(b, "cat", s->gk, *k, nk, dt);
    vc_t nv_t = vc__op_nograd(b, "cat", s->gv, *v, nv, dt);
    s->gk = s->gv = -1;
    s->k = *k = nk_t;
    s->v = *v = nv_t;
    s->len = in + L;
    *S = in + L;
    return true;
}

/* StaticLayer: zeros(B, Hkv, max_cache_len, D) at the first update, index_copy_ after;
 * the attention reads all max_cache_len positions under the 4-D mask */
static bool static_update(vc_build *b, vc_kv_slot *s, vc_t *k, vc_t *v, int64_t *S, int64_t kpt, int64_t vpt, vc_dtype dt)
{
    vc_gen *g = &b->gen;
    const int64_t L = g->seq, max_len = g->prompt + g->steps;
    if (s->k < 0) {
        s->k = vc__op_new(b, "zeros", vc_n_sample(kpt * max_len), dt);
        s->v = vc__op_new(b, "zeros", vc_n_sample(vpt * max_len), dt);
        s->len = max_len;
    }
    if (g->mask < 0) /* create_causal_mask: one bool [B, 1, L, max_cache_len] per forward */
        g->mask = vc__op_new(b, "causal_mask", vc_n_sample(L * max_len), VC_DT_BOOL);
    index_copy(b, s->k, *k);
    index_copy(b, s->v, *v);
    *k = s->k;
    *v = s->v;
    *S = max_len;
    return true;
}

/* DynamicLayer / DynamicSlidingWindowLayer.update: cat to what the layer keeps */
static bool dynamic_update(vc_build *b, vc_kv_slot *s, vc_t *k, vc_t *v, int64_t *S, int64_t kpt, int64_t vpt, vc_dtype dt)
{
    const int64_t L = b->gen.seq;
    if ((b->gen.hybrid || b->gen.encdec) && s->k < 0) {
        /* Qwen3NextDynamicCache.update (modeling_qwen3_next.py @7515843b), and the DynamicCache an
         * encoder-decoder's self_attention_cache is (below, "Encoder-decoders"): the first update keeps
         * key_states and value_states themselves (no copy); the attention reads them as they are */
        s->k = *k;
        s->v = *v;
        s->len = L;
        return false;
    }
    int64_t in = kept(s, b->gen.past); /* cached tokens the update concatenates to */
    vc_numel nk = vc_n_sample(kpt * (in + L)), nv = vc_n_sample(vpt * (in + L));
    vc_t nk_t = vc__op_nograd(b, "cat", s->k, *k, nk, dt);
    vc_t nv_t = vc__op_nograd(b, "cat", s->v, *v, nv, dt);
    s->k = *k = nk_t;
    s->v = *v = nv_t;
    s->len = in + L;
    *S = in + L;
    return true;
}

/* Between two emitted passes: each cache as it is before decoding step `step`
 * (the steps in between each allocate the grown tensor before freeing the old one). */
static void dynamic_grow(vc_build *b, vc_kv_slot *s, int64_t step)
{
    if (s->k < 0 || s->cross) return; /* the cross-attention's keys and values: the encoder's tokens, fixed */
    /* the storage after the step before: (what it kept) + 1 token; beam search: the step's reorder_cache made
     * a copy of what it keeps ("Beam search" below) */
    int64_t len = b->gen.beams > 1 ? kept(s, b->gen.prompt + step - 1) : kept(s, b->gen.prompt + step - 2) + 1;
    if (len == s->len) return;
    int64_t kpt = vc_numel_of(b, s->k).ps / s->len, vpt = vc_numel_of(b, s->v).ps / s->len;
    s->k = vc__op_nograd(b, "cat", s->k, -1, vc_n_sample(kpt * len), vc_dt_of(b, s->k));
    s->v = vc__op_nograd(b, "cat", s->v, -1, vc_n_sample(vpt * len), vc_dt_of(b, s->v));
    s->len = len;
}

static void offloaded_grow(vc_build *b, vc_kv_slot *s, int64_t step)
{
    if (s->gk < 0) return;
    /* the first layer's copy, prefetched by the step before: replaced by the grown one
     * (allocated here before the old is freed, at a low point of the loop; in the run the
     * two never coexist) */
    int64_t t = kept(s, b->gen.prompt + step - 1);
    s->gk = vc__op_nograd(b, "_to_copy", s->gk, -1, vc_n_sample(s->kpt * t), vc_dt_of(b, s->gk));
    s->gv = vc__op_nograd(b, "_to_copy", s->gv, -1, vc_n_sample(s->vpt * t), vc_dt_of(b, s->gv));
}

/* The cache formats of generate() (--cache; docs/inference.md "Cache formats"): what
 * GenerationMixin._prepare_cache_for_generation makes for cache_implementation, one row
 * each: the layer's update (vc_kv_update) and its state before a later step (NULL: none
 * to grow). Every row stores keys and values in the dtype key_states have (the model's:
 * DynamicLayer.lazy_initialization, StaticLayer.lazy_initialization); no transformers
 * cache casts them to another dtype (--kv-cache-dtype is vLLM's, --serve). */
typedef struct {
    const char *source;
    bool (*update)(vc_build *b, vc_kv_slot *s, vc_t *k, vc_t *v, int64_t *S, int64_t kpt, int64_t vpt, vc_dtype dt);
    void (*grow)(vc_build *b, vc_kv_slot *s, int64_t step);
} cache_row;

static const cache_row cache_rows[VC_CACHE__N] = {
    [VC_CACHE_DYNAMIC] = {"DynamicCache: DynamicLayer.update cat", dynamic_update, dynamic_grow},
    [VC_CACHE_STATIC] = {"StaticCache: StaticLayer zeros(max_cache_len), index_copy_", static_update, NULL},
    [VC_CACHE_OFFLOADED] = {"DynamicCache(offloading=True): prefetch, cat, offload", offloaded_update, offloaded_grow},
    [VC_CACHE_QUANTIZED] = {"QuantizedCache(backend=quanto): residual + requantized store", vc__kvq_update, vc__kvq_grow},
};

bool vc_serve_profile(const vc_build *b) { return b->gen.on && b->gen.profile; }

int32_t *vc_ssm_state(vc_build *b, bool *decode)
{
    vc_gen *g = &b->gen;
    *decode = false;
    if (!g->on || g->profile || b->st) return NULL;
    if (g->pass == 0 && g->cur_ssm >= g->nssm) { /* (a Mamba2 layer's slot is made before the prefill: vc__gen_emit) */
        GROW(g->ssm, g->nssm, g->cssm, b);
        if (b->st) return NULL;
        g->ssm[g->nssm][0] = g->ssm[g->nssm][1] = -1;
        g->nssm++;
    }
    if (g->cur_ssm >= g->nssm) { /* the decoding pass has the prefill's layers */
        b->st = VC_ERR_MODEL;
        return NULL;
    }
    *decode = g->pass > 0;
    return g->ssm[g->cur_ssm++];
}

int32_t *vc_kv_indexer(vc_build *b)
{
    bool decode;
    int32_t *s = vc_ssm_state(b, &decode);
    if (s) b->gen.indexer = true;
    return s;
}

static bool kv_update(vc_build *b, int64_t window, int64_t latent, int64_t paged, vc_t *k, vc_t *v, int64_t *S)
{
    vc_gen *g = &b->gen;
    if (!g->on || b->st) return false;
    /* a vision tower's attention ("Images" below: Gemma 3's SiglipAttention, a non-causal RotaryAttention) is
     * run by the prefill alone and takes no past_key_values */
    if (b->cur_inst >= 0 && (size_t)b->cur_inst >= g->tower_first && (size_t)b->cur_inst < g->tower_end) return false;
    const int64_t L = g->seq;
    if (g->profile) { /* vLLM's profiling run writes no cache: the layer's shape only, for the page size */
        GROW(g->slot, g->nslot, g->cslot, b);
        if (!b->st) g->slot[g->nslot++] = (vc_kv_slot){*k, *v, window, L, -1, -1, 0, 0, {-1, -1, -1, -1, -1, -1}, 0, latent, paged, false};
        return false;
    }
    vc_dtype dt = vc_dt_of(b, *k);
    int64_t kpt = vc_numel_of(b, *k).ps / L, vpt = vc_numel_of(b, *v).ps / L; /* per token and sample */
    if (g->pass == 0) {
        GROW(g->slot, g->nslot, g->cslot, b);
        if (b->st) return false;
        /* QuantizedCache makes no sliding-window layer (QuantizedCache.__init__) */
        int64_t w = b->o.cache == VC_CACHE_QUANTIZED ? 0 : window;
        g->slot[g->nslot++] = (vc_kv_slot){-1, -1, w, 0, -1, -1, 0, 0, {-1, -1, -1, -1, -1, -1}, 0, latent, paged, false};
    }
    if (g->cur >= g->nslot) { /* the decoding pass has the prefill's layers */
        b->st = VC_ERR_MODEL;
        return false;
    }
    vc_kv_slot *s = &g->slot[g->cur++];
    return cache_rows[b->o.cache].update(b, s, k, v, S, kpt, vpt, dt);
}

bool vc_kv_update(vc_build *b, int64_t window, vc_t *k, vc_t *v, int64_t *S) { return kv_update(b, window, 0, 0, k, v, S); }

/* A "chunked_attention" layer (Llama 4). transformers: DynamicCache(config) makes it a
 * DynamicSlidingWindowLayer(sliding_window=attention_chunk_size) ("from a cache point of view, both
 * sliding and chunked are the same", cache_utils.py @ 004999d9 DynamicCache.__init__): the last
 * chunk - 1 tokens kept. vLLM (--serve): ChunkedLocalAttentionSpec, but vllm/config/vllm.py disables
 * the hybrid KV cache manager for chunked local attention while vllm/envs.py defaults
 * VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE to 0 ("There is a latency regression when using
 * chunked local attention with the hybrid KV cache manager. Disabling it, by default"), and
 * unify_hybrid_kv_cache_specs (vllm/v1/core/kv_cache_utils.py) turns the spec into a
 * FullAttentionSpec: every token's K and V kept, as a full layer's. (Later releases default it to 1:
 * the hybrid manager's chunked pages are not modelled; docs/llm.md "Llama 4".) */
bool vc_kv_update_chunked(vc_build *b, int64_t chunk, vc_t *k, vc_t *v, int64_t *S)
{
    return kv_update(b, b->gen.profile ? 0 : chunk, 0, 0, k, v, S);
}

bool vc_serving(const vc_build *b) { return b->gen.profile; }

bool vc_kv_update_latent(vc_build *b, int64_t latent, vc_t *k, vc_t *v, int64_t *S)
{
    return kv_update(b, 0, latent, 0, k, v, S);
}

bool vc_kv_update_paged(vc_build *b, int64_t paged, vc_t *k, vc_t *v, int64_t *S)
{
    return kv_update(b, 0, 0, paged, k, v, S);
}

void vc_kv_end(vc_build *b)
{
    for (int i = 0; i < 2; i++) {
        if (b->gen.ret[i] >= 0 && !b->st) vc__extend_life(b, b->gen.ret[i]);
        b->gen.ret[i] = -1;
    }
}

/* Between two emitted passes: the caches as they are before decoding step `step`. */
static void grow_caches(vc_build *b, int64_t step)
{
    void (*grow)(vc_build *, vc_kv_slot *, int64_t) = cache_rows[b->o.cache].grow;
    for (int i = 0; grow && i < b->gen.nslot && !b->st; i++) grow(b, &b->gen.slot[i], step);
}

/* ---- the loop ---- */

struct loop_state {
    vc_t ids, mask, pos, unfinished, pad, logits32, next;
    int64_t len; /* tokens in ids and mask */
    vc_t probs;  /* do_sample (--loss grpo): _sample's probs, a local like next_token_logits; -1 */
    vc_t scores; /* next_token_scores when a logits processor made a tensor of its own (logits_processors), -1 */
};

/* LogitsProcessorList.__call__ (generation/logits_process.py, read through the code index without a pinned commit;
 * the form of transformers 4.4x to 5: `for processor in
 * self: scores = processor(input_ids, scores)`) over `scores`, the step's [rows, V] float32 (next_token_logits in
 * _sample, log_softmax's log_probs in _beam_search), at cur_len tokens of max_length, for the processors the config's
 * keys make (vc_hf_logits_processors, _get_logits_processor's order): NoRepeatNGramLogitsProcessor's
 * scores.clone() every step (the banned tokens' -inf written into it: index tensors of a few ids, not counted; the
 * n-grams found on the host from input_ids.tolist()); ForcedBOSTokenLogitsProcessor's torch.full_like(scores, -inf)
 * when cur_len == 1; ForcedEOSTokenLogitsProcessor's when cur_len == max_length - 1 (max_length: the decoder's
 * input length + max_new_tokens). Each output frees the previous one when the list's `scores` is rebound; the
 * caller's input stays its own. Returns the processed scores, `scores` itself when none made a tensor. */
static vc_t logits_processors(vc_build *b, vc_t scores, int64_t vocab, int64_t cur_len, int64_t max_length)
{
    const vc_hf_logits *lp = &b->m->gen_lp;
    /* NoBadWordsLogitsProcessor (after NoRepeatNGram in _get_logits_processor's order: the form read through the code
     * index, `if generation_config.bad_words_ids is not None: processors.append(NoBadWordsLogitsProcessor(...))`
     * between encoder_no_repeat_ngram_size and min_length), SequenceBiasLogitsProcessor.__call__: at its first call
     * _prepare_bias_variables makes length_1_bias = torch.zeros((V,)) (held by the processor); then every call
     * bias = torch.zeros_like(scores); bias += length_1_bias (in place); scores_processed = scores + bias (bias a
     * local, freed when it returns; the single-token sequences alone: src/hf/hf_bart.c) */
    const bool made[4] = {lp->ngram > 0, lp->bad, lp->bos && cur_len == 1, lp->eos && cur_len == max_length - 1};
    static const char *const op[4] = {"clone", "add", "full_like", "full_like"};
    vc_t s = scores;
    for (int i = 0; i < 4; i++) {
        if (!made[i]) continue;
        vc_t bias = -1;
        if (i == 1) {
            if (b->gen.lp_bias < 0) b->gen.lp_bias = vc__op_new(b, "zeros", vc_n_fixed(vocab), VC_DT_F32);
            bias = vc__op_nograd(b, "zeros_like", s, -1, vc_n_sample(vocab), VC_DT_F32);
        }
        vc_t t = vc__op_nograd(b, op[i], s, bias, vc_n_sample(vocab), VC_DT_F32);
        if (bias >= 0) vc__extend_life(b, bias);
        if (s != scores) vc__extend_life(b, s);
        s = t;
    }
    return s;
}

/* _sample after model(**model_inputs): the logits' copy, the next tokens, the grown ids and mask. */
static void step_end(vc_build *b, loop_state *ls, vc_t logits, int64_t vocab)
{
    b->cur_inst = b->cur_region = -1; /* outside the model */
    if (ls->mask >= 0) { /* an encoder-decoder's has none (its decoder_attention_mask is not given) */
        vc_t ones = vc__op_nograd(b, "new_ones", -1, -1, vc_n_sample(1), VC_DT_I64);
        ls->mask = vc__op_nograd(b, "cat", ls->mask, ones, vc_n_sample(ls->len + 1), VC_DT_I64);
    }
    vc_t last = vc__op_select(b, ls->pos, vc_n_fixed(1), true);
    ls->pos = vc__op_nograd(b, "add", last, -1, vc_n_fixed(1), VC_DT_I64);
    vc_t prev_logits = ls->logits32, prev_next = ls->next;
    ls->logits32 = vc__op_nograd(b, "_to_copy", logits, -1, vc_n_sample(vocab), VC_DT_F32);
    if (prev_logits >= 0) vc__extend_life(b, prev_logits); /* rebound now: freed after this op */
    /* next_token_scores = logits_processor(input_ids, next_token_logits): next_token_logits itself without a
     * processor; a tensor of the processors' own otherwise, held (a local) until the next step's is made. The plan's
     * next step after the first is the last one: the first's stands for the step before the last's when a tensor of
     * the same size was made there too (no_repeat_ngram_size: every step), or when it is that step */
    vc_t prev_scores = ls->scores, sc = logits_processors(b, ls->logits32, vocab, ls->len, b->gen.prompt + b->gen.steps);
    ls->scores = sc != ls->logits32 ? sc : -1;
    if (prev_scores >= 0 && (b->m->gen_lp.ngram > 0 || b->m->gen_lp.bad || b->gen.dstep[0] == 1))
        vc__extend_life(b, prev_scores);
    vc_t nt;
    if (b->m->loss == VC_LOSS_GRPO) {
        /* TRL's GRPOTrainer generates with GenerationConfig(do_sample=True, temperature 1.0, top_p 1.0,
         * top_k 0, repetition_penalty 1.0) (trl/trainer/grpo_trainer.py @f2cd5771 __init__): no logits
         * processor, so _sample takes probs = softmax(next_token_scores, -1) and torch.multinomial(probs, 1):
         * ATen's one-sample path (native/Distributions.cpp multinomial) q = empty_like(probs).exponential_(),
         * div_out(q, probs, q), argmax_out(result [B, 1] int64) */
        vc_t prev_probs = ls->probs;
        ls->probs = vc__op_nograd(b, "softmax", ls->logits32, -1, vc_n_sample(vocab), VC_DT_F32);
        if (prev_probs >= 0) vc__extend_life(b, prev_probs);
        vc_op *o = vc_op_begin(b, "multinomial");
        vc_op_in_nodiff(o, ls->probs);
        vc_op_ftemp(o, vc_n_sample(vocab), VC_DT_F32); /* q */
        nt = vc_op_out(o, vc_n_sample(1), VC_DT_I64);
        vc_op_end(o);
    } else {
        nt = vc__op_nograd(b, "argmax", sc, -1, vc_n_sample(1), VC_DT_I64);
    }
    vc_t a = vc__op_nograd(b, "mul", nt, ls->unfinished, vc_n_sample(1), VC_DT_I64);
    vc_t r = vc__op_nograd(b, "rsub", ls->unfinished, -1, vc_n_sample(1), VC_DT_I64);
    vc_t p = vc__op_nograd(b, "mul", ls->pad, r, vc_n_sample(1), VC_DT_I64);
    ls->next = vc__op_nograd(b, "add", a, p, vc_n_sample(1), VC_DT_I64);
    if (prev_next >= 0) vc__extend_life(b, prev_next);
    vc_t col = vc__op_view(b, ls->next, vc_n_sample(1), true);
    ls->ids = vc__op_nograd(b, "cat", ls->ids, col, vc_n_sample(ls->len + 1), VC_DT_I64);
    ls->len++;
    vc__extend_life(b, logits); /* del outputs: the logits live until the step's end */
}

/* The model's forward over b->m with the token ids `input`; the head (the
 * last Linear and what follows it) from `head` on runs on the last position
 * only (logits_to_keep=1), from the one-token model. */
static void forward_pass(vc_build *b, const vc_model *at, vc_t input, size_t head)
{
    const vc_model *m = b->m, *one = b->gen.twin[1];
    const int np = b->gen.npass;
    if (np == VC_GEN_PASSES) { /* internal: the passes a decoder-only generate() emits are fewer */
        if (!b->st) b->st = VC_ERR_MODEL;
        return;
    }
    b->gen.pass_from[np] = (int32_t)b->nop;
    b->gen.cur = 0;
    b->gen.cur_ssm = 0;
    b->gen.mask = -1;
    b->m = at;
    b->val_t[0] = input;
    /* a decoding step after the images' prefill: the tower not run ("Images" below), nor (mllama) the projections of
     * its output, whose keys / values the cache holds (vc_kv_cross) */
    if (b->gen.pass > 0 && b->gen.tower_end > b->gen.tower_first) {
        vc__emit_instances(b, 0, b->gen.tower_first);
        size_t from = b->gen.tower_end;
        for (size_t i = from; b->gen.xval >= 0 && i < head && !b->st; i++) {
            if (!projection_of(at, b->gen.tower_end, b->gen.xval, (int)i)) continue;
            vc__emit_instances(b, from, i);
            b->val_t[at->inst[i].out] = -1;
            from = i + 1;
        }
        if (b->gen.xval >= 0) b->val_t[b->gen.xval] = -1;
        vc__emit_instances(b, from, head);
    } else {
        vc__emit_instances(b, 0, head);
    }
    vc__end_model_forward(b); /* the base model returns its hidden states to the head */
    if (!b->st && at != one && !b->gen.capture) { /* hidden_states[:, -logits_to_keep:, :]: a view */
        int hv = m->inst[head].in[0];
        int64_t row = vc_shape_numel(&one->val[hv].shape);
        b->val_t[hv] = vc__op_select(b, b->val_t[hv], vc_n_sample(row), false);
    }
    b->m = one;
    if (!b->gen.capture) vc__emit_instances(b, head, m->ninst); /* a CUDA graph's capture: the hidden states out */
    vc__end_forward(b);
    b->gen.pass_to[np] = (int32_t)b->nop;
    b->gen.npass = np + 1;
    if (b->gen.mask >= 0) vc__extend_life(b, b->gen.mask);
    /* Qwen3VLModel.forward's image locals (vc_keep_forward) die when it returns; PaliGemma's without an image too
     * (its forward's inputs_embeds and causal_mask, layers/llm.c prefix_mask_4x) */
    if (b->gen.image_tokens || b->nfwd_keep) {
        for (size_t i = 0; i < b->nfwd_keep; i++) vc__extend_life(b, b->fwd_keep[i]);
        b->nfwd_keep = 0;
    }
    b->m = m;
}

/* Whether the first decoding step holds more cache than the steps after it: DynamicSlidingWindowLayer.update
 * (cache_utils.py @ 004999d9) keeps self.keys = full_key_states[:, :, -self.sliding_window + 1 :, :], a view, so
 * a sliding layer whose prompt passed its window keeps the prefill's whole cat result (the prompt's tokens)
 * until the first decoding step's torch.cat([self.keys, key_states]) rebinds it; every later step's storage is
 * window tokens (the step before's cat). The layers keep theirs until their own cat in that step, the step's
 * locals are those of any step: the first step then has a larger live set than the last, by up to
 * (prompt - window) tokens of each such layer's keys and values (the ids, the mask and the full layers' caches
 * are shorter by steps - 2 tokens). Both steps are emitted, and the decode peak is the larger. */
static bool prefill_storage_held(const vc_build *b)
{
    const vc_gen *g = &b->gen;
    /* beam search: the prefill's reorder_cache keeps an index_select copy of the window's tokens; _prefill ("The
     * prefill" below): the loop's first step, which rebinds the prompt's storage, is part of the prefill phase */
    if (g->shift || b->o.cache != VC_CACHE_DYNAMIC || g->hybrid || g->encdec || g->beams > 1) return false;
    for (int i = 0; i < g->nslot; i++)
        if (g->slot[i].window > 0 && !g->slot[i].cross && g->slot[i].k >= 0 && g->slot[i].len > g->slot[i].window)
            return true;
    return false;
}

/* ---- The prefill ----
 *
 * --transformers 5.0 (VC_TF_PREFILL_BUT_LAST, src/policy/release.c): GenerationMixin._prefill (generation/utils.py
 * @000034a44ef887621d9b36001a5eb7c46e64cb3f), which _sample and _beam_search call before their loop (beam search after
 * _expand_inputs_for_generation: B x N rows), whatever the cache class:
 *    prefill_input_ids = input_ids[:, :-1]                                  (a view; no prefill for a one-token prompt)
 *    model_kwargs["attention_mask"] = attention_mask[:, :prefill_len]       (a view)
 *    _get_initial_cache_position(prefill_len): cache_position = arange(prompt - 1)
 *    outputs = self(**prepare_inputs_for_generation(prefill_input_ids, ...)) (logits_to_keep=1, set by generate())
 *    _update_model_kwargs_for_generation: cat([the sliced mask, new_ones]) [B, prompt], dropped at once as
 *        model_kwargs["attention_mask"] = attention_mask puts the full mask back; cache_position[-1:] + 1
 *    return model_kwargs                                                    (outputs, the [B, 1, V] logits, freed)
 * The loop's first step then feeds the last prompt token (prepare_inputs_for_generation: input_ids[:, -1:] by the one
 * cache position) over the cache of prompt - 1 tokens. That step picks the first token: the plan's prefill phase is the
 * forward over prompt - 1 tokens and that step (as measure_llm.py --transformers 5.0 tags it); the decoding steps after
 * it hold what the old flow's held. The forward over prompt - 1 tokens is emitted here; the caller then emits the step
 * (g->pass 1: the slots the forward made, past prompt - 1, one token). */
static void prefill_but_last(vc_build *b, size_t head, vc_t prompt, vc_t mask, vc_t *pos)
{
    vc_gen *g = &b->gen;
    const int64_t L = g->prompt - 1;
    g->pass = 0;
    g->past = 0;
    g->seq = L;
    forward_pass(b, g->twin[0], vc__op_select(b, prompt, vc_n_sample(L), false), head);
    b->cur_inst = b->cur_region = -1;
    vc_t ones = vc__op_nograd(b, "new_ones", -1, -1, vc_n_sample(1), VC_DT_I64);
    vc__extend_life(b, vc__op_nograd(b, "cat", mask, ones, vc_n_sample(L + 1), VC_DT_I64));
    vc_t last = vc__op_select(b, *pos, vc_n_fixed(1), true);
    *pos = vc__op_nograd(b, "add", last, -1, vc_n_fixed(1), VC_DT_I64);
    vc__extend_life(b, b->val_t[b->m->output]); /* _prefill's outputs: freed when it returns */
    g->pass = 1;
    g->past = L;
    g->seq = 1;
}

/* ---- Beam search ----
 *
 * --num-beams N > 1: generate() with num_beams N (do_sample False) runs GenerationMixin._beam_search
 * (generation/utils.py @000034a44ef887621d9b36001a5eb7c46e64cb3f, the GENERATION_MODES_MAPPING's BEAM_SEARCH); an
 * encoder-decoder's ("Encoder-decoders" below, encdec_beams) the same over its decoder:
 *  - _expand_inputs_for_generation(expand_size=num_beams): input_ids and the attention mask repeat_interleave'd
 *    to batch x beams rows; every tensor of the model's forward and every cache then has B x N rows (the plan's
 *    rows: vc_plan_simulate multiplies the batch by N). The [B, P] originals (the caller's ids, the mask
 *    _prepare_attention_mask_for_generation made, freed as model_kwargs is rebound) are not planned;
 *  - before the loop (max_length = prompt + new tokens, T = max_length - prompt): running_sequences =
 *    torch.full((B, N, max_length), int64), sequences = its clone; running_beam_scores zeros (B, N) fp32,
 *    beam_scores full (B, N) fp32; is_sent_finished zeros (B, N) bool; is_early_stop_heuristic_unsatisfied ones
 *    (B, 1) bool; next_token_hits_stopping_criteria zeros (B, N) bool; running_beam_indices full (B, N, T) int32,
 *    beam_indices its clone; top_num_beam_mask cat(ones(N), zeros(beams_to_keep - N)) bool, with beams_to_keep =
 *    max(2, 1 + n_eos_tokens) x N (2N for the one eos token of the configs);
 *  - per step: flat_running_sequences = _flatten_beam_dim(running_sequences[:, :, :cur_len]) (a reshape of a
 *    strided slice: a copy [B x N, cur_len] int64), prepare_inputs_for_generation, the forward, then
 *    logits = outputs.logits[:, -1, :].to(copy=True, dtype=float32); log_probs = log_softmax(logits, -1) (fp32);
 *    the logits processors (none: the list is empty for these configs); del model_outputs; log_probs =
 *    log_probs + running_beam_scores[:, :, None] (a new [B, N x V] fp32; the reshape a view);
 *    _get_top_k_continuations: torch.topk(k=2N) (values fp32, indices int64 [B, 2N]), // vocab, % vocab,
 *    _gather_beams (torch.take_along_dim) of running_beam_indices ([B, 2N, T] int32) and running_sequences
 *    ([B, 2N, max_length] int64), the batch offset; the stopping criteria over _flatten_beam_dim(
 *    topk_running_sequences[:, :, :cur_len + 1]) (a copy but at the last step, whose slice is the whole) and
 *    StoppingCriteriaList's bool [B x 2N] tensors; _get_running_beams_for_next_iteration: topk(k=N) of the
 *    scores less 1e9 where a criterion hit, the three gathers (new running_sequences [B, N, max_length] before
 *    the old is rebound); _update_finished_beams: the length-penalised scores, cat of the finished and the top-K
 *    ([B, 3N, max_length] int64, [B, 3N] fp32, [B, 3N, T] int32, [B, 3N] bool), topk(k=N), the four gathers;
 *    then beam_idx = _flatten_beam_dim(running_beam_indices[..., cur_len - prompt]) (a copy, int32) and
 *    past_key_values.reorder_cache(beam_idx): CacheLayerMixin.reorder_cache (cache_utils.py, read at
 *    @67dd5524d384fdf6b20f6123e7a9d74e6ed96345, not at the @004999d9 of the cache's update) per layer
 *    self.keys = self.keys.index_select(0, beam_idx), then the values: a new copy of what the layer keeps
 *    (a sliding layer: its window's view copied, the cat's storage freed), the old one freed as it is rebound.
 *    logits, log_probs, the top-K tensors, next_token_hits_stopping_criteria and flat_running_sequences are the
 *    loop's locals: alive through the next step's forward until rebound after it;
 *  - _check_early_stop_heuristic and _beam_search_has_unfinished_sequences: [B, 1] tensors and 0-d flags (under
 *    one 512-byte block each, not planned). early_stopping and length_penalty change when the loop stops and which
 *    sequences are kept, not what a step allocates: the plan runs every step, the most memory. The outputs'
 *    sequences[:, :num_return_sequences] (num_return_sequences 1) are not planned either.
 * The plan: the prefill and the last decoding step (every step holds what the one before held, the caches and
 * the attention mask one token longer, the loop's state of fixed shape). The prefill is the loop's first step over
 * the whole prompt, as the greedy plan's above (and measure_llm.py's harness) run it; GenerationMixin._prefill at
 * @000034a (called by _sample and _beam_search alike) runs the model over input_ids[:, :-1] first and discards its
 * outputs, the loop's first step then feeding the last prompt token: not followed here, for greedy or beams. */
typedef struct {
    vc_t run_seq, seqs, run_scores, scores, fin, run_bidx, bidx, top_mask, early; /* _beam_search's state */
    vc_t flat, logits, logp, topk_lp, topk_seq, topk_bidx, hits;                  /* the loop's locals */
    vc_t mask, pos;
    int64_t len, ml, T, N;
} beam_state;

/* an op of one input and two outputs (torch.topk: values, indices) */
static vc_t topk2(vc_build *b, vc_t x, int64_t k, vc_t *idx)
{
    vc_op *o = vc_op_begin(b, "topk");
    vc_op_in_nodiff(o, x);
    vc_t v = vc_op_out(o, vc_n_sample(k), VC_DT_F32);
    *idx = vc_op_out(o, vc_n_sample(k), VC_DT_I64);
    vc_op_end(o);
    return v;
}

/* rebinding a name: the old tensor lives until the new one is made */
static void rebind(vc_build *b, vc_t *name, vc_t t)
{
    if (*name >= 0) vc__extend_life(b, *name);
    *name = t;
}

static void beam_step_end(vc_build *b, beam_state *bs, vc_t out, int64_t vocab, int64_t cur_len)
{
    vc_gen *g = &b->gen;
    const int64_t N = bs->N, ml = bs->ml, T = bs->T;
    b->cur_inst = b->cur_region = -1;
    /* _update_model_kwargs_for_generation: the mask one column longer (an encoder-decoder's has none: its
     * decoder_attention_mask is not given), cache_position advanced */
    if (bs->mask >= 0) {
        vc_t ones = vc__op_nograd(b, "new_ones", -1, -1, vc_n_sample(1), VC_DT_I64);
        bs->mask = vc__op_nograd(b, "cat", bs->mask, ones, vc_n_sample(bs->len + 1), VC_DT_I64);
    }
    bs->len++;
    vc_t last = vc__op_select(b, bs->pos, vc_n_fixed(1), true);
    bs->pos = vc__op_nograd(b, "add", last, -1, vc_n_fixed(1), VC_DT_I64);
    rebind(b, &bs->logits, vc__op_nograd(b, "_to_copy", out, -1, vc_n_sample(vocab), VC_DT_F32));
    vc_t lsm = vc__op_nograd(b, "_log_softmax", bs->logits, -1, vc_n_sample(vocab), VC_DT_F32);
    /* `log_probs = nn.functional.log_softmax(logits, dim=-1)` rebinds the name that held the previous step's
     * `log_probs + running_beam_scores[:, :, None]` (_beam_search @000034a reuses it): that sum is freed here, not
     * at this step's sum (which a logits processor's tensors reach: marian_gen_small's 2 beams, measured) */
    if (bs->logp >= 0) vc__extend_life(b, bs->logp);
    bs->logp = -1;
    /* log_probs = logits_processor(flat_running_sequences, log_probs): the input freed once rebound */
    vc_t lpp = logits_processors(b, lsm, vocab, cur_len, ml);
    if (lpp != lsm) vc__extend_life(b, lsm);
    vc__extend_life(b, out); /* del model_outputs */
    bs->logp = vc__op_nograd(b, "add", lpp, bs->run_scores, vc_n_sample(vocab), VC_DT_F32);
    /* _get_top_k_continuations */
    vc_t ind, lp = topk2(b, bs->logp, 2 * N, &ind);
    vc_t cbi = vc__op_nograd(b, "floor_divide", ind, -1, vc_n_sample(2), VC_DT_I64);
    vc_t tbi = vc__op_nograd(b, "take_along_dim", bs->run_bidx, cbi, vc_n_sample(2 * T), VC_DT_I32);
    vc_t tseq = vc__op_nograd(b, "take_along_dim", bs->run_seq, cbi, vc_n_sample(2 * ml), VC_DT_I64);
    vc_t ids = vc__op_nograd(b, "remainder", ind, -1, vc_n_sample(2), VC_DT_I64);
    index_copy(b, tseq, ids); /* topk_running_sequences[:, :, cur_len] = topk_ids */
    vc_t off = vc__op_new(b, "arange", vc_n_fixed(1), VC_DT_I64);
    vc_t offn = vc__op_nograd(b, "mul", off, -1, vc_n_fixed(1), VC_DT_I64);
    vc_t bmi = vc__op_nograd(b, "add", cbi, offn, vc_n_sample(2), VC_DT_I64);
    index_copy(b, tbi, bmi);
    rebind(b, &bs->topk_lp, lp);
    rebind(b, &bs->topk_seq, tseq);
    rebind(b, &bs->topk_bidx, tbi);
    /* the stopping criteria (_get_stopping_criteria: MaxLengthCriteria, EosTokenCriteria) over the flattened
     * topk_running_sequences[:, :, :cur_len + 1] */
    vc_t sin = cur_len + 1 < ml ? vc__op_nograd(b, "clone", bs->topk_seq, -1, vc_n_sample(2 * (cur_len + 1)), VC_DT_I64)
                                : bs->topk_seq;
    vc_t done = vc__op_new(b, "full", vc_n_sample(2), VC_DT_BOOL);
    vc_t maxl = vc__op_new(b, "full", vc_n_sample(2), VC_DT_BOOL);
    done = vc__op_nograd(b, "bitwise_or", done, maxl, vc_n_sample(2), VC_DT_BOOL);
    vc_t eos = vc__op_nograd(b, "isin", sin, -1, vc_n_sample(2), VC_DT_BOOL);
    rebind(b, &bs->hits, vc__op_nograd(b, "bitwise_or", done, eos, vc_n_sample(2), VC_DT_BOOL));
    /* _get_running_beams_for_next_iteration */
    vc_t hf = vc__op_nograd(b, "_to_copy", bs->hits, -1, vc_n_sample(2), VC_DT_F32);
    vc_t hm = vc__op_nograd(b, "mul", hf, -1, vc_n_sample(2), VC_DT_F32);
    vc_t trl = vc__op_nograd(b, "add", bs->topk_lp, hm, vc_n_sample(2), VC_DT_F32);
    vc_t nti;
    topk2(b, trl, 1, &nti);
    rebind(b, &bs->run_seq, vc__op_nograd(b, "take_along_dim", bs->topk_seq, nti, vc_n_sample(ml), VC_DT_I64));
    rebind(b, &bs->run_scores, vc__op_nograd(b, "take_along_dim", trl, nti, vc_n_sample(1), VC_DT_F32));
    rebind(b, &bs->run_bidx, vc__op_nograd(b, "take_along_dim", bs->topk_bidx, nti, vc_n_sample(T), VC_DT_I32));
    /* _update_finished_beams */
    vc_t did = vc__op_nograd(b, "bitwise_and", bs->hits, bs->top_mask, vc_n_sample(2), VC_DT_BOOL);
    vc_t tlp = vc__op_nograd(b, "div", bs->topk_lp, -1, vc_n_sample(2), VC_DT_F32);
    vc_t nd = vc__op_nograd(b, "bitwise_not", did, -1, vc_n_sample(2), VC_DT_BOOL);
    vc_t ndm = vc__op_nograd(b, "mul", nd, -1, vc_n_sample(2), VC_DT_F32);
    index_copy(b, tlp, ndm); /* topk_log_probs += (~did_top_num_beams_just_finished) * -1.0e9 */
    vc_t mseq = vc__op_nograd(b, "cat", bs->seqs, bs->topk_seq, vc_n_sample(3 * ml), VC_DT_I64);
    vc_t msc = vc__op_nograd(b, "cat", bs->scores, tlp, vc_n_sample(3), VC_DT_F32);
    vc_t mbi = vc__op_nograd(b, "cat", bs->bidx, bs->topk_bidx, vc_n_sample(3 * T), VC_DT_I32);
    vc_t mfin = vc__op_nograd(b, "cat", bs->fin, did, vc_n_sample(3), VC_DT_BOOL);
    vc_t mi;
    topk2(b, msc, 1, &mi);
    rebind(b, &bs->seqs, vc__op_nograd(b, "take_along_dim", mseq, mi, vc_n_sample(ml), VC_DT_I64));
    rebind(b, &bs->scores, vc__op_nograd(b, "take_along_dim", msc, mi, vc_n_sample(1), VC_DT_F32));
    rebind(b, &bs->bidx, vc__op_nograd(b, "take_along_dim", mbi, mi, vc_n_sample(T), VC_DT_I32));
    rebind(b, &bs->fin, vc__op_nograd(b, "take_along_dim", mfin, mi, vc_n_sample(1), VC_DT_BOOL));
    /* reorder_cache(beam_idx): each layer's keys, then values, index_select'ed (a copy of what it keeps); an
     * encoder-decoder's EncoderDecoderCache.reorder_cache (cache_utils.py @004999d972e478164dd7e8e508350937c803531e)
     * reorders its self_attention_cache's layers, then its cross_attention_cache's (the encoder's tokens) */
    vc_t beam_idx = vc__op_nograd(b, "clone", bs->run_bidx, -1, vc_n_sample(1), VC_DT_I32);
    for (int i = 0; i < 2 * g->nslot && !b->st; i++) {
        vc_kv_slot *s = &g->slot[i % g->nslot];
        if (s->k < 0 || s->cross != (i >= g->nslot)) continue;
        int64_t keep = s->cross ? s->len : kept(s, cur_len);
        int64_t kpt = vc_numel_of(b, s->k).ps / s->len, vpt = vc_numel_of(b, s->v).ps / s->len;
        s->k = vc__op_nograd(b, "index_select", s->k, beam_idx, vc_n_sample(kpt * keep), vc_dt_of(b, s->k));
        s->v = vc__op_nograd(b, "index_select", s->v, beam_idx, vc_n_sample(vpt * keep), vc_dt_of(b, s->v));
        s->len = keep;
    }
}

/* prompt: the expanded input_ids [B x N, P] (an encoder-decoder's: the decoder's), _beam_search's input_ids to its
 * return; an encoder-decoder's decoder runs as decoder_step runs it ("Encoder-decoders" below) */
static void beam_emit(vc_build *b, size_t head, int64_t vocab, vc_t prompt)
{
    const vc_model *m = b->m;
    vc_gen *g = &b->gen;
    const int64_t P = g->prompt, M = g->steps, N = g->beams;
    beam_state bs = {.N = N, .ml = P + M, .T = M, .len = P};
    for (vc_t *t = &bs.run_seq; t <= &bs.hits; t++) *t = -1;
    b->cur_inst = b->cur_region = -1;
    bs.mask = g->encdec ? -1 : vc__op_new(b, "ones", vc_n_sample(P), VC_DT_I64);
    bs.pos = vc__op_new(b, "arange", vc_n_fixed(P - g->shift), VC_DT_I64);
    vc_t pad = vc__op_new(b, "scalar_tensor", vc_n_fixed(1), VC_DT_I64);
    vc_t t1 = vc__op_new(b, "ones", vc_n_fixed(N), VC_DT_BOOL), t0 = vc__op_new(b, "zeros", vc_n_fixed(N), VC_DT_BOOL);
    bs.top_mask = vc__op_nograd(b, "cat", t1, t0, vc_n_fixed(2 * N), VC_DT_BOOL);
    /* _beam_search: _expand_inputs_for_generation, then _prefill ("The prefill" above), then the state below */
    if (g->shift) prefill_but_last(b, head, prompt, bs.mask, &bs.pos);
    bs.run_seq = vc__op_new(b, "full", vc_n_sample(bs.ml), VC_DT_I64);
    index_copy(b, bs.run_seq, prompt);
    bs.seqs = vc__op_nograd(b, "clone", bs.run_seq, -1, vc_n_sample(bs.ml), VC_DT_I64);
    bs.run_scores = vc__op_new(b, "zeros", vc_n_sample(1), VC_DT_F32);
    bs.scores = vc__op_new(b, "full", vc_n_sample(1), VC_DT_F32);
    bs.fin = vc__op_new(b, "zeros", vc_n_sample(1), VC_DT_BOOL);
    bs.early = vc__op_new(b, "ones", vc_n_fixed(1), VC_DT_BOOL);
    bs.hits = vc__op_new(b, "zeros", vc_n_sample(1), VC_DT_BOOL);
    bs.run_bidx = vc__op_new(b, "full", vc_n_sample(bs.T), VC_DT_I32);
    bs.bidx = vc__op_nograd(b, "clone", bs.run_bidx, -1, vc_n_sample(bs.T), VC_DT_I32);
    g->dstep[0] = M >= 2 ? M - 1 : 0;
    g->dstep[1] = 0;
    for (int pass = 0; pass < 2 && !b->st; pass++) {
        const int64_t k = pass ? g->dstep[0] : 0, cur_len = P + k;
        if (pass && !k) break;
        if (pass) {
            g->split_op = (int32_t)b->nop;
            b->cur_inst = b->cur_region = -1;
            if (bs.len < cur_len) { /* the steps before this one: caches, the mask and the last flat ids grown */
                grow_caches(b, k);
                if (bs.mask >= 0) bs.mask = vc__op_nograd(b, "cat", bs.mask, -1, vc_n_sample(cur_len), VC_DT_I64);
                bs.flat = vc__op_nograd(b, "cat", bs.flat, -1, vc_n_sample(cur_len - 1), VC_DT_I64);
                bs.len = cur_len;
            }
        }
        const bool one = pass || g->shift; /* the step feeds one token (after _prefill, the first step too) */
        g->pass = one;
        g->past = one ? cur_len - 1 : 0;
        g->seq = one ? 1 : P;
        /* flat_running_sequences: a copy of running_sequences[:, :, :cur_len] */
        rebind(b, &bs.flat, vc__op_nograd(b, "clone", bs.run_seq, -1, vc_n_sample(cur_len), VC_DT_I64));
        if (g->encdec) {
            loop_state ls = {bs.flat, -1, bs.pos, -1, -1, -1, -1, cur_len, -1, -1};
            decoder_step(b, &ls, k);
        } else {
            vc_t cur = one ? vc__op_select(b, bs.flat, vc_n_sample(1), false) : bs.flat;
            forward_pass(b, g->twin[one ? 1 : 0], cur, head);
        }
        beam_step_end(b, &bs, b->val_t[m->output], vocab, cur_len);
    }
    /* what _beam_search still holds when it returns */
    vc_t held[] = {prompt, pad, bs.run_seq, bs.seqs, bs.run_scores, bs.scores, bs.fin, bs.run_bidx, bs.bidx, bs.top_mask,
                   bs.early, bs.flat, bs.logits, bs.logp, bs.topk_lp, bs.topk_seq, bs.topk_bidx, bs.hits, bs.mask, bs.pos};
    for (size_t i = 0; i < sizeof held / sizeof *held; i++)
        if (held[i] >= 0) vc__extend_life(b, held[i]);
    for (int i = 0; i < g->nslot; i++) {
        if (g->slot[i].k >= 0) vc__extend_life(b, g->slot[i].k);
        if (g->slot[i].v >= 0) vc__extend_life(b, g->slot[i].v);
    }
    if (!g->encdec) b->val_t[0] = prompt;
}

void vc__gen_emit(vc_build *b)
{
    const vc_model *m = b->m;
    vc_gen *g = &b->gen;
    if (g->encdec) {
        encdec_emit(b);
        return;
    }
    const size_t head = vc__head_inst(m);
    const int64_t P = g->prompt, M = g->steps;
    const vc_t prompt = b->val_t[0];
    int64_t vocab = vc_shape_numel(&g->twin[1]->val[m->output].shape) / g->head_rows;
    if (g->profile) {
        /* vLLM profile_run: _dummy_run(max_num_tokens) (the model over the flat token batch), then
         * _dummy_sampler_run on the last token of each dummy request: compute_logits, and the
         * sampler's fp32 copy of them (Sampler: logits.to(torch.float32)); at --tp > 1 the logits'
         * all-gather first (src/engine/serve_nccl.c), the rank's logits dying with it */
        g->pass = 0;
        g->seq = P;
        forward_pass(b, g->twin[0], prompt, head);
        b->cur_inst = b->cur_region = -1;
        if (g->capture) { /* a CUDA graph's capture (serve_graphs.c): no logits, no sampler */
            b->val_t[0] = prompt;
            return;
        }
        vc_t logits = b->val_t[m->output];
        int64_t cols = vocab;
        if (b->o.tp > 1) logits = vc__vllm_gather_logits(b, logits, vocab, &cols);
        vc_t l32 = vc__op_nograd(b, "_to_copy", logits, -1, vc_n_sample(g->head_rows * cols), VC_DT_F32);
        vc__extend_life(b, logits);
        vc__extend_life(b, l32);
        b->val_t[0] = prompt;
        return;
    }
    if (g->beams > 1) {
        beam_emit(b, head, vocab, prompt);
        return;
    }
    loop_state ls = {prompt, -1, -1, -1, -1, -1, -1, P, -1, -1};
    b->cur_inst = b->cur_region = -1;
    /* generate(): the attention mask (ones), cache_position (arange), unfinished_sequences (ones) and the pad token */
    ls.mask = vc__op_new(b, "ones", vc_n_sample(P), VC_DT_I64);
    ls.pos = vc__op_new(b, "arange", vc_n_fixed(P - g->shift), VC_DT_I64);
    ls.unfinished = vc__op_new(b, "ones", vc_n_sample(1), VC_DT_I64);
    ls.pad = vc__op_new(b, "scalar_tensor", vc_n_fixed(1), VC_DT_I64);
    /* GraniteMoeHybridForCausalLM.prepare_inputs_for_generation: HybridMambaAttentionDynamicCache(config,
     * batch, self.dtype) before the prefill, its conv_states and ssm_states zeros for every Mamba2 layer
     * (layers/mamba2.c vc__mamba2_state), filled in place by the layers */
    for (size_t i = 0; i < m->ninst && !b->st; i++) {
        if (strcmp(m->inst[i].kind->name, "Mamba2Mixer")) continue;
        int64_t conv, ssm;
        vc__mamba2_state(m->inst[i].cfg, &conv, &ssm);
        GROW(g->ssm, g->nssm, g->cssm, b);
        if (b->st) break;
        g->ssm[g->nssm][0] = vc__op_new(b, "zeros", vc_n_sample(conv), vc_param_dt(b));
        g->ssm[g->nssm][1] = vc__op_new(b, "zeros", vc_n_sample(ssm), vc_param_dt(b));
        g->nssm++;
        g->nmamba++;
    }
    /* Lfm2Model.forward: Lfm2HybridConvCache(config, batch, self.dtype) before the prefill, a conv_cache entry
     * zeros [B, hidden, L_cache] for each of num_hidden_layers layers (modeling_lfm2.py @ 0096ba4f): one slot
     * per ShortConv layer, which the layers fill in place, then the attention layers' entries (never read) */
    int64_t sc_state = 0;
    int nsc = 0;
    for (size_t i = 0; i < m->ninst; i++)
        if (!strcmp(m->inst[i].kind->name, "ShortConv")) {
            sc_state = vc__shortconv_state(m->inst[i].cfg); /* hidden_size x conv_L_cache: the same in every layer */
            nsc++;
        }
    for (int i = 0; sc_state > 0 && i < nsc + g->nkv && !b->st; i++) {
        GROW(g->ssm, g->nssm, g->cssm, b);
        if (b->st) break;
        g->ssm[g->nssm][0] = vc__op_new(b, "zeros", vc_n_sample(sc_state), vc_param_dt(b));
        g->ssm[g->nssm][1] = -1;
        g->nssm++;
        g->nconv++;
    }
    g->pass = 0;
    g->past = 0;
    g->seq = P;
    if (g->shift) { /* _prefill, then the loop's first step over the last prompt token ("The prefill" above) */
        prefill_but_last(b, head, prompt, ls.mask, &ls.pos);
        forward_pass(b, g->twin[1], vc__op_select(b, ls.ids, vc_n_sample(1), false), head);
    } else {
        forward_pass(b, g->twin[0], prompt, head);
    }
    step_end(b, &ls, b->val_t[m->output], vocab);
    /* the decoding steps emitted: the last (every step holds what the one before held, one
     * token longer); a quantized cache also the last step that requantizes (the store's
     * old, dequantized and new copies at once), when that is an earlier one */
    /* the loop's step k requantizes when (k + shift) % C == 0: after _prefill ("The prefill") the residual holds k + 1
     * tokens at step k */
    int64_t C = vc__kvq_cycle(&b->o), kq = C * ((M - 1 + g->shift) / C) - g->shift;
    g->dstep[0] = M >= 2 ? M - 1 : 0;
    g->dstep[1] = 0;
    if (b->o.cache == VC_CACHE_QUANTIZED && kq >= 1 && kq < M - 1) {
        g->dstep[0] = kq;
        g->dstep[1] = M - 1;
    } else if (M > 2 && prefill_storage_held(b)) {
        g->dstep[0] = 1;
        g->dstep[1] = M - 1;
    }
    for (int i = 0; i < 2 && g->dstep[i] && !b->st; i++) {
        const int64_t k = g->dstep[i];
        if (i == 0) g->split_op = (int32_t)b->nop;
        else g->split2_op = (int32_t)b->nop;
        g->pass = 1 + i;
        g->past = P + k - 1;
        g->seq = 1;
        b->cur_inst = b->cur_region = -1;
        if (ls.len < P + k) { /* the steps before this one: caches, ids and mask grown */
            grow_caches(b, k);
            ls.mask = vc__op_nograd(b, "cat", ls.mask, -1, vc_n_sample(P + k), VC_DT_I64);
            ls.ids = vc__op_nograd(b, "cat", ls.ids, -1, vc_n_sample(P + k), VC_DT_I64);
            ls.len = P + k;
        }
        vc_t cur = vc__op_select(b, ls.ids, vc_n_sample(1), false); /* input_ids[:, -1:] */
        forward_pass(b, g->twin[1], cur, head);
        step_end(b, &ls, b->val_t[m->output], vocab);
    }
    /* what generate() still holds when it returns */
    vc_t held[] = {ls.ids, ls.mask, ls.pos, ls.unfinished, ls.pad, ls.logits32, ls.next, ls.probs};
    for (size_t i = 0; i < sizeof held / sizeof *held; i++) vc__extend_life(b, held[i]);
    for (int i = 0; i < g->nslot; i++) {
        const vc_kv_slot *s = &g->slot[i];
        bool host = b->o.cache == VC_CACHE_OFFLOADED; /* the cache is in host memory, but for a prefetched copy */
        if (host && s->gk < 0) continue;
        vc_t keep[] = {host ? s->gk : s->k, host ? s->gv : s->v, s->q[0], s->q[1], s->q[2], s->q[3], s->q[4], s->q[5]};
        for (size_t j = 0; j < sizeof keep / sizeof *keep; j++)
            if (keep[j] >= 0) vc__extend_life(b, keep[j]);
    }
    for (int i = 0; i < g->nssm; i++) /* Qwen3NextDynamicCache's conv and recurrent states */
        for (int j = 0; j < 2; j++)
            if (g->ssm[i][j] >= 0) vc__extend_life(b, g->ssm[i][j]);
    b->val_t[0] = prompt;
}

/* ---- Images ----
 *
 * generate() of a vision-language config.json run with --image (the Qwen3-VL and Qwen3.5 towers, src/hf/hf_vision.c), greedy, as
 * transformers runs it (generation/utils.py as above; modeling_qwen3_vl.py @00709b862bb8f14a5435bb7195592579168496e4
 * Qwen3VLForConditionalGeneration and Qwen3VLModel, which Qwen3_5ForConditionalGeneration and Qwen3_5Model
 * inherit, modular_qwen3_5.py @8940358af7421e958995b05136ca14ce54bef39c):
 *  - the processor's input_ids hold each image's tokens (image_token_id, grid_h x grid_w / merge_size^2 of them)
 *    with the text: the prompt is --prompt + the image tokens, as are the attention mask and the caches after it;
 *  - generate() keeps pixel_values and image_grid_thw in model_kwargs until it returns: the processor's batch,
 *    PixelValues (layers/vision.c) made before the prefill and held to the end;
 *  - prepare_inputs_for_generation: model_inputs["position_ids"] = None, and pixel_values = None once
 *    cache_position[0] != 0. The first step (the prefill) runs Qwen3VLModel.forward's image path:
 *    get_image_features (the tower, the merger, Qwen3-VL's deepstack mergers), masked_scatter into
 *    inputs_embeds, get_rope_index's 3-D positions (self.rope_deltas kept), the deepstack adds; every
 *    cache then covers the image tokens too;
 *  - a decoding step: inputs_embeds = embed_tokens(input_ids[:, -1:]) alone, no deepstack
 *    (deepstack_visual_embeds None), the positions arange(1) + cache_position[0] + rope_deltas (tensors of
 *    B int64: one 512-byte block each, not modelled): the model vc__model_twin_decode loads, its tower's
 *    instances (after embed_tokens, before the text rows' view) not run.
 * Qwen2.5-VL's (modeling_qwen2_5_vl.py @efa7189c5546a94e8c1194b2ccc6669e0f7ad65e) the same way:
 * Qwen2_5_VLForConditionalGeneration.prepare_inputs_for_generation sets pixel_values None once cache_position[0]
 * != 0, and its forward computes inputs_embeds = self.model.embed_tokens(input_ids) before self.visual (so the
 * tower sits between model.embed_tokens and model.text_embeds, src/hf/hf_layers.c); its vision attention
 * (RotaryAttention with block_mask, layers/llm.c) keeps no cache.
 * Gemma 3's (modeling_gemma3.py @0018aa647bb13801f061e2d1027c326f531b59fb) the same way:
 * Gemma3ForConditionalGeneration.prepare_inputs_for_generation passes pixel_values only while cache_position[0] == 0;
 * Gemma3Model.forward runs get_image_features (SigLIP, the projector's pooling to mm_tokens_per_image rows) and
 * masked_scatter in the prefill, inputs_embeds = embed_tokens(input_ids) first (src/hf/hf_layers.c embeds first);
 * the prompt holds the full_image_sequence (the image tokens and 4 more); the SigLIP attention keeps no cache.
 * Not modelled: create_causal_mask_mapping's token_type_ids or-mask in the prefill (may_have_image_input: two
 * [B, 1, P, P] bool masks, full and sliding, to the forward's end, and sdpa then called with a mask: repeat_kv and
 * no is_causal), as in training (docs/llm.md); a decoding step has none.
 * Llama 3.2 Vision's (modeling_mllama.py @ befb7955722ef3a9c152cb47efa0d87616709ec1, src/hf/hf_mllama.c) differs:
 * its images reach the language model through cross-attention layers, not image tokens in the prompt (one
 * <|image|> token an image, counted in --prompt). MllamaForConditionalGeneration.prepare_inputs_for_generation passes
 * pixel_values / aspect_ratio_ids / aspect_ratio_mask while cache_position[0] == 0 and cross_attention_mask every
 * step; so the prefill runs the tower and the projector (the one MllamaVision instance: tower_first, its output xval
 * = cross_attention_states), and each MllamaTextCrossSdpaAttention.forward with cross_attention_states runs k_proj /
 * v_proj and past_key_value.update(key_states, value_states, layer_idx) (vc_kv_cross: the DynamicCache layer of that
 * index, cross slots that never grow); a decoding step has cross_attention_states None, and the layer reads
 * past_key_value.key_cache / value_cache[layer_idx]: forward_pass skips the tower and every instance that projects
 * its output (projection_of, as decoder_step skips an encoder-decoder's). generate() keeps pixel_values and
 * cross_attention_mask in model_kwargs to its return (layers/mllama.c: persistent from the prefill); each step's
 * _prepare_cross_attention_mask covers every row so far (MllamaCrossMask, vc_gen_decoder's past). Greedy with
 * --cache dynamic only (the measured form). */

static vc_status images_begin(vc_build *b, vc_error *err)
{
    const vc_model *m = b->m;
    vc_gen *g = &b->gen;
    g->image_tokens = 0;
    g->tower_first = g->tower_end = 0;
    bool pix = false;
    for (size_t i = 0; i < m->ninst; i++) pix |= !strcmp(m->inst[i].kind->name, "PixelValues");
    for (size_t i = 0; i < m->ninst && !pix; i++) {
        if (strcmp(m->inst[i].kind->name, "MllamaVision")) continue;
        /* mllama ("Images" above): the tower's one instance, its output the cross-attention layers' keys / values */
        if (g->profile || b->o.cache != VC_CACHE_DYNAMIC || b->o.num_beams > 1)
            return vc_set_error(err, VC_ERR_USAGE, g->profile ? O("serve") : b->o.cache != VC_CACHE_DYNAMIC ? O("cache")
                                : O("num_beams"), "mllama: generate() with images is modelled greedy, with "
                                OV("cache", "dynamic"));
        g->tower_first = i;
        g->tower_end = i + 1;
        g->xval = m->inst[i].out;
        return VC_OK;
    }
    if (!pix) return VC_OK;
    if (g->profile)
        return vc_set_error(err, VC_ERR_USAGE, O("image"), "vLLM's serving of images (its encoder cache and the "
                            "profiling run's dummy images) is not modelled");
    /* src/hf/hf_layers.c build_layers: model.embed_tokens, the tower, model.text_embeds (the text rows' view);
     * model.inputs_embeds cats the tower's image embeddings (one row per image token) before them */
    size_t emb = m->ninst, text = m->ninst;
    int64_t rows = 0, seq = 0;
    for (size_t i = 0; i < m->ninst; i++) {
        const vc_inst *in = &m->inst[i];
        if (!in->name) continue;
        if (emb == m->ninst && !strcmp(in->name, "model.embed_tokens")) emb = i;
        if (text == m->ninst && !strcmp(in->name, "model.text_embeds")) text = i;
        if (!strcmp(in->name, "model.inputs_embeds") && !strcmp(in->kind->name, "Cat") && in->nin == 2) {
            rows = m->val[in->in[0]].shape.d[0];
            seq = rows + m->val[in->in[1]].shape.d[0];
        }
    }
    if (emb >= text || text == m->ninst || rows < 1)
        return vc_set_error(err, VC_ERR_MODEL, NULL, "generate with images: the language model's embeddings and the "
                            "vision tower were not found");
    g->tower_first = emb + 1;
    g->tower_end = text;
    /* the processor's image tokens: the prefill's sequence less --prompt's text (src/hf/hf.c: --prompt + the images'
     * tokens): one per embedding row, and the text the processor puts around them: Gemma3Processor's
     * full_image_sequence adds "\n\n", boi, eoi and "\n\n" to its one image a sample (src/hf/hf_vision.c
     * siglip_images: tokens = mm + 4), SmolVLMProcessor its tiles' row / column and global-image tokens
     * (src/hf/hf_idefics3.c images_of) */
    if (seq - b->o.prompt < rows)
        return vc_set_error(err, VC_ERR_MODEL, NULL, "generate with images: the prefill's %lld tokens are fewer than "
                            O("prompt") " (%lld) and the %lld image rows", (long long)seq, (long long)b->o.prompt,
                            (long long)rows);
    g->image_tokens = seq - b->o.prompt;
    return VC_OK;
}

/* ---- Encoder-decoders ----
 *
 * generate() of an encoder-decoder (T5ForConditionalGeneration: src/hf/hf_t5.c, layers/t5.c), greedy,
 * as transformers runs it (generation/utils.py @000034a44ef887621d9b36001a5eb7c46e64cb3f, GenerationMixin):
 *  - _prepare_attention_mask_for_generation: the encoder's attention_mask [B, P] int64 (ones, or
 *    inputs.ne(pad).long() where the prompt holds pad_token_id: default * ~can_infer + from_padding *
 *    can_infer), kept in model_kwargs to the end;
 *  - _prepare_encoder_decoder_kwargs_for_generation: encoder(input_ids, attention_mask, return_dict=True)
 *    once; model_kwargs["encoder_outputs"] keeps its last_hidden_state to the end, the encoder's other
 *    tensors die when it returns;
 *  - _prepare_decoder_input_ids_for_generation: torch.ones((B, 1), dtype=long) * decoder_start_token_id:
 *    the decoder's input_ids, one token;
 *  - _prepare_cache_for_generation: EncoderDecoderCache(DynamicCache(), DynamicCache());
 *  - _sample: per step prepare_inputs_for_generation (_cache_dependant_input_preparation: input_ids[:,
 *    cache_position], a new tensor once input_ids is longer than cache_position; then
 *    model_inputs["decoder_input_ids"] = input_ids.clone(); attention_mask, the encoder's, passed as is;
 *    no decoder_attention_mask), model(**model_inputs) (encoder_outputs given: the decoder only), then as a
 *    decoder-only model's (step_end) except that _update_model_kwargs_for_generation grows no mask.
 * The model's side (modeling_t5.py @6b8b757d, whose T5Attention reads the cache's key_cache[layer_idx]: the
 * list DynamicCache of its release, whose first update keeps the states themselves and later ones
 * torch.cat): each decoder self-attention's cache (vc_kv_update_self: the first step keeps the states,
 * later steps cat, old and new alive together), each cross-attention's (vc_kv_cross: k(encoder_hidden_states)
 * and v(...) at the first step, kept; is_updated then reuses them and the projections do not run), the
 * masks built from generate's attention_mask and the decoder's cache length, the position bias of every
 * step from cache_position (layers/t5.c, vc_gen_seq2seq).
 *
 * The contract with a model (any family): the instance named "encoder" returns the encoder's output, every
 * instance up to it is the encoder; the instance named "decoder_input_ids" (no inputs) stands for the
 * decoder's token ids, replaced by the loop's; an instance with parameters whose every input is the
 * encoder's output is a cross-attention's key or value projection (skipped after the first step, its
 * output then -1); the decoder's attention layers call vc_kv_update_self and vc_kv_cross; the output is the
 * logits of the decoder's positions (one per step).
 *
 * A model whose input is not token ids (whisper's float input_features [num_mel_bins, frames]) is run as
 * WhisperGenerationMixin.generate runs it (generation_whisper.py @000dccdb, short-form: src/hf/hf_whisper.c):
 * the encoder's input is the features' segment copy, generate's attention mask its default
 * ones(B, num_mel_bins), and the decoder starts from the decoder_input_ids it passes (the generation
 * config's init tokens, --prompt of them: the first step feeds them at once, the model loaded with a
 * decoder of that length, twin[0], the later steps with one, twin[1]).
 *
 * The plan: the first pass is the encoder, then the decoder's first step (the prefill peak); the second the
 * last decoding step, whose live set is the largest (the self-attention caches one token longer each
 * step, the cross-attention's fixed); the caches and the ids grow in between (dynamic_grow).
 *
 * --num-beams N > 1 (encdec_beams): the encoder over the batch's rows, then _expand_inputs_for_generation and
 * _beam_search ("Beam search" above) over the decoder; EncoderDecoderCache.reorder_cache copies the cross-attention's
 * keys and values every step as it copies the self-attention's. Measured: measure_llm.py --num-beams over
 * t5_replica.prepare_generation / whisper_replica.prepare_generation (bench/accuracy/llm/measured.json). */

/* Instance i: a projection of the encoder's output (a cross-attention's keys or values). */
static bool projection_of(const vc_model *m, size_t enc_end, int enc_val, int i)
{
    if (i < 0 || (size_t)i < enc_end || m->inst[i].np == 0 || m->inst[i].nin < 1) return false;
    for (int k = 0; k < m->inst[i].nin; k++)
        if (m->inst[i].in[k] != enc_val) return false;
    return true;
}

static bool encoder_projection(const vc_model *m, const vc_gen *g, int i) { return projection_of(m, g->enc_end, g->enc_val, i); }

/* The layers that may read such a projection, and at which inputs: those that take it from
 * vc_kv_cross after the first step (the projection is not run then), or only hold it as a local.
 * A family's cross-attention kind joins this list. */
static const struct { const char *kind; int first, last; } cross_readers[] = {
    {"T5Attention", 1, 2}, /* layers/t5.c: the keys and values */
    {"T5Return", 1, 7},    /* layers/t5.c: the locals a module's return releases */
    {"WhisperAttention", 1, 2}, /* layers/whisper.c: the keys and values */
};

/* m follows the contract from its "encoder" instance enc: a "decoder_input_ids" instance after it, and
 * every projection of the encoder's output read only by cross_readers. */
static bool encdec_contract(const vc_model *m, size_t enc)
{
    if (decoder_ids(m, enc) < 0) return false;
    const int ev = m->inst[enc].out;
    for (size_t i = enc + 1; i < m->ninst; i++) {
        if (!projection_of(m, enc + 1, ev, (int)i)) continue;
        for (size_t j = i + 1; j < m->ninst; j++)
            for (int k = 0; k < m->inst[j].nin; k++) {
                if (m->inst[j].in[k] != m->inst[i].out) continue;
                bool ok = false;
                for (size_t r = 0; r < sizeof cross_readers / sizeof *cross_readers && !ok; r++)
                    ok = !strcmp(m->inst[j].kind->name, cross_readers[r].kind) && k >= cross_readers[r].first &&
                         k <= cross_readers[r].last;
                if (!ok) return false;
            }
    }
    return true;
}

/* A decoder-only generate()'s pass (not --serve's profiling run): *past the tokens cached before it, the
 * length generate()'s 2-D attention_mask has past + the pass's tokens (PaliGemma's _update_causal_mask,
 * layers/llm.c prefix_mask_4x). */
bool vc_gen_decoder(const vc_build *b, int64_t *past)
{
    const bool on = b->gen.on && !b->gen.encdec && !b->gen.profile;
    *past = on ? b->gen.past : 0;
    return on;
}

bool vc_gen_seq2seq(const vc_build *b, int64_t *past)
{
    *past = b->gen.on && b->gen.encdec && !b->gen.profile ? b->gen.past : 0;
    return b->gen.on && b->gen.encdec && !b->gen.profile;
}

bool vc_kv_update_self(vc_build *b, vc_t *k, vc_t *v, int64_t *S)
{
    if (!b->gen.encdec) return false;
    return kv_update(b, 0, 0, 0, k, v, S);
}

bool vc_kv_cross(vc_build *b, int key_input, vc_t *k, vc_t *v)
{
    vc_gen *g = &b->gen;
    if (!g->on || !(g->encdec || g->xval >= 0) || g->profile || b->st || b->cur_inst < 0) return false;
    const vc_inst *in = &b->m->inst[b->cur_inst];
    const int kp = key_input >= 0 && key_input < in->nin ? b->m->val[in->in[key_input]].producer : -1;
    if (g->encdec ? !encoder_projection(b->m, g, kp) : !projection_of(b->m, g->tower_end, g->xval, kp)) return false;
    if (g->pass == 0) {
        GROW(g->slot, g->nslot, g->cslot, b);
        if (b->st) return false;
        vc_t ck = *k, cv = *v;
        if (!g->encdec) {
            /* mllama (MllamaTextCrossSdpaAttention.forward, modeling_mllama.py @ befb7955: with
             * cross_attention_states, past_key_value.update(key_states, value_states, layer_idx)): the layer's
             * DynamicLayer.update from empty, cat([keys, key_states], -2) (cache_utils.py @ 004999d9, as
             * dynamic_update): copies the cache keeps, the projections' outputs then free */
            ck = vc__op_nograd(b, "cat", *k, -1, vc_numel_of(b, *k), vc_dt_of(b, *k));
            cv = vc__op_nograd(b, "cat", *v, -1, vc_numel_of(b, *v), vc_dt_of(b, *v));
        }
        /* EncoderDecoderCache.cross_attention_cache.update: the first update keeps them */
        /* its tokens: the encoder's; mllama's the images' (k_proj's rows, N x T x num_patches a sample) */
        const int64_t S = g->encdec ? g->enc_len : b->m->val[in->in[key_input]].shape.d[0];
        g->slot[g->nslot++] = (vc_kv_slot){ck, cv, 0, S, -1, -1, 0, 0, {-1, -1, -1, -1, -1, -1}, 0, 0, 0, true};
    }
    if (g->cur >= g->nslot || !g->slot[g->cur].cross) { /* the decoding pass has the first step's layers */
        b->st = VC_ERR_MODEL;
        return false;
    }
    const vc_kv_slot *s = &g->slot[g->cur++];
    *k = s->k; /* is_updated: key_cache[layer_idx], value_cache[layer_idx] */
    *v = s->v;
    return true;
}

/* The decoder's input-ids instance after the encoder's "encoder" output, -1 none (not an encoder-decoder). */
static int decoder_ids(const vc_model *m, size_t enc)
{
    for (size_t i = enc + 1; i < m->ninst; i++)
        if (m->inst[i].name && !strcmp(m->inst[i].name, "decoder_input_ids") && m->inst[i].nin == 0) return (int)i;
    return -1;
}

static vc_status encdec_begin(vc_build *b, size_t enc, vc_error *err)
{
    const vc_model *m = b->m;
    vc_gen *g = &b->gen;
    if (b->o.cache != VC_CACHE_DYNAMIC)
        return vc_set_error(err, VC_ERR_USAGE, O("cache"), "an encoder-decoder's generate() is modelled with the "
                            "EncoderDecoderCache of two DynamicCaches it makes: only " OV("cache", "dynamic"));
    if (m->ninputs != 1)
        return vc_set_error(err, VC_ERR_USAGE, O("mode"), "generate needs an encoder-decoder with one input");
    /* the encoder's input: token ids [seq] (t5: --prompt their length), or features of a fixed length (whisper's
     * input_features [num_mel_bins, frames]: --prompt the decoder's forced prompt, the decoder_input_ids
     * WhisperGenerationMixin.generate passes to GenerationMixin.generate) */
    g->features = m->val[0].dt != VC_DT_I64;
    if (!g->features && m->val[0].shape.nd != 1)
        return vc_set_error(err, VC_ERR_USAGE, O("mode"), "generate needs an encoder-decoder with one int64 input of "
                            "token ids [seq], or one floating-point input of features");
    g->ids_inst = decoder_ids(m, enc);
    if (b->o.new_tokens > VC_MAX_DIM_SIZE)
        return vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "more than 2^40");
    g->on = g->encdec = true;
    g->enc_end = enc + 1;
    g->enc_val = m->inst[enc].out;
    g->enc_t = -1;
    g->lp_bias = -1;
    g->nkv = 0;
    g->hybrid = false;
    /* the decoder's first input: decoder_start_token_id (t5), the forced prompt (whisper) */
    g->prompt = g->features ? b->o.prompt : 1;
    g->steps = b->o.new_tokens;
    g->head_rows = 1;
    /* --num-beams: encdec_beams (the plan's rows batch x beams, what precedes the expansion written per batch) */
    g->beams = b->o.num_beams < 1 ? 1 : b->o.num_beams;
    if (g->beams > 65536)
        return vc_set_error(err, VC_ERR_USAGE, O("num_beams"), "an encoder-decoder's beam search is modelled up to "
                            "65536 beams, not %lld", (long long)g->beams);
    vc_model *t0 = NULL, *t1 = NULL;
    vc_status st;
    if (g->features) {
        /* the model with the prompt's decoder tokens (the encoder and the first step), and with one (each
         * later step feeds one) */
        st = vc__model_load_seq(m, g->prompt, &t0, err);
        if (st == VC_OK && g->prompt > 1) st = vc__model_load_seq(m, 1, &t1, err);
        for (int i = 0; i < 2 && st == VC_OK; i++) {
            const vc_model *t = i ? t1 : t0;
            if (t && (t->ninst != m->ninst || t->nval != m->nval || t->npar != m->npar))
                st = vc_set_error(err, VC_ERR_MODEL, NULL, "the model changes its structure with the decoder's length");
        }
    } else {
        /* the model at the prompt's length with a decoder of one token (each step feeds one): m's options with
         * --target-seq 1 (a copy of m's struct for vc__model_twin, which reads its text and options) */
        vc_model at = *m;
        at.hf.target_seq = 1;
        st = vc__model_twin(&at, b->o.prompt, &t0, err);
    }
    g->twin[0] = t0;
    g->twin[1] = t1;
    if (st != VC_OK && !err->path[0]) snprintf(err->path, sizeof err->path, O("prompt"));
    if (st == VC_OK) g->enc_len = t0->val[g->enc_val].shape.d[0]; /* the encoder's positions */
    return st;
}

/* One forward of the decoder: step k (0: the first, after the encoder). */
static void decoder_step(vc_build *b, loop_state *ls, int64_t k)
{
    const vc_model *m = b->m;
    vc_gen *g = &b->gen;
    b->cur_inst = b->cur_region = -1;
    /* prepare_inputs_for_generation: input_ids[:, cache_position] once input_ids is longer (a new tensor),
     * then .clone(): model_inputs["decoder_input_ids"], held through the forward */
    const int64_t n = k > 0 ? 1 : g->prompt; /* the tokens this step feeds */
    vc_t cur = k > 0 ? vc__op_nograd(b, "index", ls->ids, ls->pos, vc_n_sample(1), VC_DT_I64) : ls->ids;
    vc_t ids = vc__op_nograd(b, "clone", cur, -1, vc_n_sample(n), VC_DT_I64);
    g->cur = 0;
    g->mask = -1;
    b->m = k > 0 && g->twin[1] ? g->twin[1] : g->twin[0];
    b->val_t[g->enc_val] = g->enc_t; /* model_kwargs["encoder_outputs"] */
    size_t from = g->enc_end;
    for (size_t i = g->enc_end; i <= m->ninst && !b->st; i++) {
        bool ids_here = i < m->ninst && (int)i == g->ids_inst;
        bool skip = i < m->ninst && k > 0 && encoder_projection(m, g, (int)i); /* is_updated: not run */
        if (i < m->ninst && !ids_here && !skip) continue;
        vc__emit_instances(b, from, i);
        if (i < m->ninst) b->val_t[m->inst[i].out] = ids_here ? ids : -1;
        from = i + 1;
    }
    vc__end_forward(b);
    /* the forward's locals (vc_keep_forward: decoder_outputs, sequence_output) die when it returns */
    for (size_t i = 0; i < b->nfwd_keep; i++) vc__extend_life(b, b->fwd_keep[i]);
    b->nfwd_keep = 0;
    vc__extend_life(b, ids);
    b->m = m;
}

/* Beam search of an encoder-decoder: the tensors made before _expand_inputs_for_generation (the inputs, the
 * attention mask, the encoder's run and output, the decoder's start ids) have the batch's rows, the plan's being
 * batch x beams (vc_plan_simulate): a size floor((ps x batch + fx) / div) x mul is then written
 * floor((ps x batch x N + fx x N) / (div x N)) x mul, the same at every batch. */
static vc_numel batch_rows(vc_build *b, vc_numel n, int64_t N)
{
    int64_t d = n.div > 1 ? n.div : 1, dn, fx;
    if (n.ps == 0) return n;
    if (__builtin_mul_overflow(d, N, &dn) || dn > INT32_MAX || __builtin_mul_overflow(n.fx, N, &fx)) {
        b->st = VC_ERR_OVERFLOW;
        return n;
    }
    n.mul = n.div > 1 ? n.mul : 1;
    n.div = (int32_t)dn;
    n.fx = fx;
    return n;
}

static void rows_of_batch(vc_build *b, size_t nt, size_t nop, int64_t N)
{
    for (size_t i = 0; i < nt; i++)
        if (b->t[i].param < 0) b->t[i].n = batch_rows(b, b->t[i].n, N);
    for (size_t k = 0; k < nop; k++)
        for (int32_t i = 0; i < b->op[k].nit; i++) {
            item_t *it = &b->it[b->op[k].it0 + i];
            if (it->comp < 0 || (it->type != IT_FTEMP && it->type != IT_BTEMP)) {
                it->n = batch_rows(b, it->n, N);
                continue;
            }
            for (int32_t j = 0; j < b->comp[it->comp].np; j++) {
                part_t *p = &b->part[b->comp[it->comp].p0 + j];
                vc_numel n = batch_rows(b, (vc_numel){p->ps, p->fx, (int32_t)p->div, (int32_t)p->mul}, N);
                p->fx = n.fx;
                p->div = n.div;
                p->mul = n.mul;
            }
        }
}

/* GenerationMixin.generate with num_beams N of an encoder-decoder (generation/utils.py @000034a): after the encoder
 * (over the batch's rows), _prepare_decoder_input_ids_for_generation and the empty EncoderDecoderCache, generate()
 * calls _beam_search, whose first statement _expand_inputs_for_generation(expand_size=N, is_encoder_decoder=True)
 * (no tensor made in between) repeat_interleaves input_ids (the decoder's ids), model_kwargs' tensors (the attention
 * mask) and model_kwargs["encoder_outputs"]'s (last_hidden_state), each rebound (the originals freed; whisper's
 * decoder_input_ids stay held by WhisperGenerationMixin.generate); then _beam_search ("Beam search" above), the
 * decoder run as decoder_step runs it, the cross-attention's keys and values made from the expanded output at the
 * first step and, with the self-attention's, index_select'ed by every step's reorder_cache.
 * Which reorder runs (read for issue 31): _beam_search @000034a's step g calls the model's own _reorder_cache when
 * hasattr(self, "_reorder_cache") ("special models like RAG, RecurrentGemma"), else past_key_values.reorder_cache
 * (beam_idx); no _temporary_reorder_cache there. A transformers 5 modeling_mt5.py of huggingface/transformers
 * (initialization as init, a dict _tied_weights_keys, masking_utils; read through the code index, its commit not
 * given) has no _reorder_cache: MT5ForConditionalGeneration's methods are each "Copied from ...modeling_t5.
 * T5ForConditionalGeneration" (__init__, the embeddings' get/set, forward, prepare_decoder_input_ids_from_labels),
 * and MT5Stack ("Copied from ...T5Stack") takes only Cache objects (past_key_values.get_seq_length(),
 * .self_attention_cache; no from_legacy_cache), so the legacy tuples an old _reorder_cache returns could not be fed
 * back. modeling_whisper.py @efa7189c's WhisperForConditionalGeneration and generation_whisper.py @000dccdb's
 * WhisperGenerationMixin define none. modeling_t5.py @6b8b757d (4.x) still defines one (legacy tuples of every
 * layer's four index_select'ed tensors), but 4.x's _beam_search (generation/utils.py @1097d4b3) calls
 * _temporary_reorder_cache, which runs a model's _reorder_cache only for a tuple or list cache (and gptbigcode) and
 * past_key_values.reorder_cache for a Cache object, as generate()'s EncoderDecoderCache is: both releases reorder
 * through EncoderDecoderCache.reorder_cache, no release row. A transformers 5 modeling_t5.py or modeling_umt5.py
 * itself was not stored to read (the mt5 copy stands for them), nor 4.50 to 4.57, where _beam_search's hasattr test
 * may have met a T5 that still had its _reorder_cache. */
static void encdec_beams(vc_build *b, vc_t start, vc_t mask, const vc_t *wh, int64_t vocab)
{
    vc_gen *g = &b->gen;
    const int64_t D = g->prompt, N = g->beams;
    const size_t nt = b->nt, nop = b->nop;
    vc_t ids = vc__op_nograd(b, "repeat_interleave", start, -1, vc_n_sample(D), VC_DT_I64);
    if (g->features) vc__extend_life(b, start);
    mask = vc__op_nograd(b, "repeat_interleave", mask, -1, vc_n_sample(vc_numel_of(b, mask).ps), VC_DT_I64);
    g->enc_t = vc__op_nograd(b, "repeat_interleave", g->enc_t, -1, vc_numel_of(b, g->enc_t), vc_dt_of(b, g->enc_t));
    beam_emit(b, b->m->ninst, vocab, ids);
    /* generate()'s model_kwargs (the attention mask, encoder_outputs) and WhisperGenerationMixin.generate's locals,
     * held to the end */
    vc__extend_life(b, mask);
    vc__extend_life(b, g->enc_t);
    vc__extend_life(b, g->lp_bias); /* the logits processors' (logits_processors), -1 none */
    for (int i = 0; i < 5; i++) vc__extend_life(b, wh[i]);
    if (g->features) vc__extend_life(b, start);
    rows_of_batch(b, nt, nop, N);
}

static void encdec_emit(vc_build *b)
{
    const vc_model *m = b->m;
    vc_gen *g = &b->gen;
    const int64_t P = g->enc_len, M = g->steps, D = g->prompt;
    const vc_t prompt = b->val_t[0];
    const int64_t vocab = vc_shape_numel(&g->twin[0]->val[m->output].shape) / D; /* [D, V] a sample */
    b->cur_inst = b->cur_region = -1;
    vc_t attn_mask = -1, feats = prompt, dids = -1;
    vc_t wh[5] = {-1, -1, -1, -1, -1}; /* WhisperGenerationMixin.generate's locals, held to the end */
    if (g->features) {
        /* WhisperGenerationMixin.generate (generation_whisper.py @000dccdb), short-form (one segment of the
         * encoder's frames): _retrieve_init_tokens: torch.as_tensor(init_tokens, long).expand(B, -1) (one row);
         * _retrieve_max_frames_and_seek: max_frames = ones((B,), long) * frames, seek = zeros((B,), long);
         * seek_num_frames = (max_frames - seek).clamp(max=num_segment_frames); _get_input_segment: the per-sample
         * slices torch.cat(dim=0), a copy of the features; _prepare_decoder_input_ids: init_tokens[batch_idx_map] */
        const int64_t fe = vc_shape_numel(&m->val[0].shape);
        wh[0] = vc__op_new(b, "as_tensor", vc_n_fixed(D), VC_DT_I64);
        vc_t one = vc__op_new(b, "ones", vc_n_sample(1), VC_DT_I64);
        wh[1] = vc__op_nograd(b, "mul", one, -1, vc_n_sample(1), VC_DT_I64);
        wh[2] = vc__op_new(b, "zeros", vc_n_sample(1), VC_DT_I64);
        vc_t d = vc__op_nograd(b, "sub", wh[1], wh[2], vc_n_sample(1), VC_DT_I64);
        wh[3] = vc__op_nograd(b, "clamp", d, -1, vc_n_sample(1), VC_DT_I64);
        feats = wh[4] = vc__op_nograd(b, "cat", prompt, -1, vc_n_sample(fe), vc_dt_of(b, prompt));
        dids = vc__op_nograd(b, "index", wh[0], -1, vc_n_sample(D), VC_DT_I64);
        /* GenerationMixin._prepare_attention_mask_for_generation: not token ids: default_attention_mask =
         * torch.ones(inputs_tensor.shape[:2], dtype=torch.long), [B, num_mel_bins], kept in model_kwargs */
        attn_mask = vc__op_new(b, "ones", vc_n_sample(m->val[0].shape.d[0]), VC_DT_I64);
    } else {
        /* _prepare_attention_mask_for_generation (pad_token_id set): default_attention_mask = ones(B, P) long;
         * isin(inputs, pad).any(); attention_mask_from_padding = inputs.ne(pad).long(); the mask =
         * from_padding * can_infer + default * ~can_infer (the 0-d factors not counted) */
        vc_t dflt = vc__op_new(b, "ones", vc_n_sample(P), VC_DT_I64);
        vc__op_nograd(b, "isin", prompt, -1, vc_n_sample(P), VC_DT_BOOL);
        vc_t ne = vc__op_nograd(b, "ne", prompt, -1, vc_n_sample(P), VC_DT_BOOL);
        vc_t pad_mask = vc__op_nograd(b, "_to_copy", ne, -1, vc_n_sample(P), VC_DT_I64);
        vc_t x = vc__op_nograd(b, "mul", pad_mask, -1, vc_n_sample(P), VC_DT_I64);
        vc_t y = vc__op_nograd(b, "mul", dflt, -1, vc_n_sample(P), VC_DT_I64);
        attn_mask = vc__op_nograd(b, "add", x, y, vc_n_sample(P), VC_DT_I64);
        vc__extend_life(b, dflt); /* locals until the function returns */
        vc__extend_life(b, pad_mask);
    }
    /* the encoder, once */
    g->pass = 0;
    g->past = 0;
    g->seq = 1;
    b->m = g->twin[0];
    b->val_t[0] = feats;
    vc__emit_instances(b, 0, g->enc_end);
    vc__end_forward(b);
    for (size_t i = 0; i < b->nfwd_keep; i++) vc__extend_life(b, b->fwd_keep[i]);
    b->nfwd_keep = 0;
    g->enc_t = b->val_t[g->enc_val];
    b->m = m;
    b->cur_inst = b->cur_region = -1;
    /* _prepare_decoder_input_ids_for_generation: decoder_start_token_id as torch.ones((B, 1), dtype=torch.long)
     * * the start token; the decoder_input_ids given (whisper's forced prompt, WhisperGenerationMixin.
     * _prepare_decoder_input_ids: init_tokens[batch_idx_map], [B, D]) start with it and are kept as they are */
    vc_t ones = vc__op_new(b, "ones", vc_n_sample(1), VC_DT_I64);
    vc_t start = vc__op_nograd(b, "mul", ones, -1, vc_n_sample(1), VC_DT_I64);
    if (g->features) start = dids;
    if (g->beams > 1) {
        encdec_beams(b, start, attn_mask, wh, vocab);
        b->val_t[0] = prompt;
        return;
    }
    loop_state ls = {start, -1, -1, -1, -1, -1, -1, D, -1, -1};
    /* _sample: unfinished_sequences, the pad token, cache_position (one position) */
    ls.unfinished = vc__op_new(b, "ones", vc_n_sample(1), VC_DT_I64);
    ls.pad = vc__op_new(b, "scalar_tensor", vc_n_fixed(1), VC_DT_I64);
    ls.pos = vc__op_new(b, "arange", vc_n_fixed(D), VC_DT_I64);
    g->seq = D; /* the first step feeds the D tokens */
    decoder_step(b, &ls, 0);
    step_end(b, &ls, b->val_t[m->output], vocab);
    g->dstep[0] = M >= 2 ? M - 1 : 0;
    g->dstep[1] = 0;
    if (g->dstep[0] && !b->st) {
        const int64_t k = g->dstep[0];
        g->split_op = (int32_t)b->nop;
        g->pass = 1;
        g->past = D + k - 1; /* the decoder's tokens cached: the D first (start, prompt) and k - 1 generated */
        g->seq = 1;
        b->cur_inst = b->cur_region = -1;
        if (ls.len < D + k) { /* the steps before this one: caches and ids grown */
            grow_caches(b, k);
            ls.ids = vc__op_nograd(b, "cat", ls.ids, -1, vc_n_sample(D + k), VC_DT_I64);
            ls.len = D + k;
        }
        decoder_step(b, &ls, k);
        step_end(b, &ls, b->val_t[m->output], vocab);
    }
    /* what generate() still holds when it returns: the loop's tensors, model_kwargs' attention_mask and
     * encoder_outputs, the EncoderDecoderCache */
    vc_t held[] = {ls.ids, ls.pos, ls.unfinished, ls.pad, ls.logits32, ls.next, attn_mask, g->enc_t, ls.scores, g->lp_bias};
    for (size_t i = 0; i < sizeof held / sizeof *held; i++) vc__extend_life(b, held[i]);
    for (size_t i = 0; i < sizeof wh / sizeof *wh; i++) vc__extend_life(b, wh[i]);
    for (int i = 0; i < g->nslot; i++) {
        vc__extend_life(b, g->slot[i].k);
        vc__extend_life(b, g->slot[i].v);
    }
    b->val_t[0] = prompt;
}

/* ---- the longest prompt that fits (vramcalc.h vc_max_prompt) ---- */

/* 1: fits, 0: does not (or the prompt is out of range), -1: an error in err */
static int prompt_fits(const vc_model *m, const vc_options *o, int64_t prompt, int64_t capacity, vc_error *err)
{
    vc_options t = *o;
    t.prompt = prompt;
    vc_result r;
    vc_error e;
    memset(&e, 0, sizeof e);
    vc_status st = vc_estimate(m, &t, &r, &e);
    /* a prompt too long to size (2^63 bytes, an attention matrix past 2^56
     * elements) does not fit; an error at one token is the model's */
    if (st && st != VC_ERR_NOMEM && prompt > 1) return 0;
    if (st) {
        *err = e;
        return -1;
    }
    int fits = r.memory.total <= capacity;
    vc_result_free(&r);
    return fits;
}

vc_status vc_max_prompt(const vc_model *m, const vc_options *o, int64_t capacity, int64_t *max_prompt, int *estimates,
                        vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    *max_prompt = 0;
    if (estimates) *estimates = 0;
    vc_options full_o; /* the legacy struct's size (vramcalc.h) */
    vc_status in_st = vc__options_in(&o, &full_o, err);
    if (in_st) return in_st;
    if (o->mode != VC_MODE_GENERATE)
        return vc_set_error(err, VC_ERR_USAGE, O("max_context"), "needs " OV("mode", "generate"));
    if (capacity < 0) return vc_set_error(err, VC_ERR_USAGE, O("gpu"), "capacity must not be negative");
    /* prompt + new tokens stay within 2^40 and the model's positions */
    const int64_t limit = m->max_positions > 0 ? m->max_positions - o->new_tokens + 1 : VC_MAX_DIM_SIZE - o->new_tokens;
    int n = 0, f;
    if (limit < 1) return VC_OK;
    /* lo fits, hi does not: doubling from 1, then bisection (the total grows with the prompt) */
    int64_t lo = 0, hi = -1, g = 1;
    while (hi < 0) {
        n++;
        if ((f = prompt_fits(m, o, g, capacity, err)) < 0) return err->code;
        if (!f) {
            hi = g;
            break;
        }
        lo = g;
        if (g == limit) break;
        g = g > limit / 2 ? limit : 2 * g;
    }
    while (hi > 0 && hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        n++;
        if ((f = prompt_fits(m, o, mid, capacity, err)) < 0) return err->code;
        if (f) lo = mid;
        else hi = mid;
    }
    *max_prompt = lo;
    if (estimates) *estimates = n;
    return VC_OK;
}
