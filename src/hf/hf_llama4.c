/*
 * hf_llama4.c — Llama 4's language model (model_type llama4_text, and llama4
 * through text_config; issue 31): the keys of Llama4TextConfig that the row's
 * generic reading (hf_read.c) cannot check, and Llama4ForCausalLM's parameters.
 *
 * Sources, huggingface/transformers:
 *  - configuration_llama4.py @ 008e574391258935f3ecc3035c882e73bbcac419,
 *    Llama4TextConfig.__post_init__: num_key_value_heads None -> num_attention_heads;
 *    no_rope_layers empty or None -> [int((i + 1) % no_rope_layer_interval != 0)];
 *    head_dim None -> hidden_size // num_attention_heads; moe_layers None ->
 *    range(interleave_moe_layer_step - 1, num_hidden_layers, interleave_moe_layer_step);
 *    layer_types None -> "chunked_attention" where no_rope_layers[i] else "full_attention".
 *  - modeling_llama4.py @ 000c33fdfde12e1ffafbfcdb3c926df5727a00b6: Llama4TextExperts
 *    (gate_up_proj [E, H, 2 intermediate_size], down_proj [E, intermediate_size, H]),
 *    Llama4TextMLP (gate_proj, up_proj, down_proj without bias), Llama4TextL2Norm (no
 *    weight), Llama4TextRMSNorm (a weight of H), Llama4Router (nn.Linear(H, E, bias=False)),
 *    Llama4TextMoe (experts, router, shared_expert = Llama4TextMLP(config): intermediate_size),
 *    Llama4TextAttention (q_proj [NH * D, H], k_proj / v_proj [KV * D, H], o_proj [H, NH * D],
 *    each with attention_bias; use_rope = config.no_rope_layers[layer_idx]), Llama4TextDecoderLayer
 *    (is_moe_layer = layer_idx in config.moe_layers, else Llama4TextMLP(intermediate_size_mlp);
 *    input_layernorm, post_attention_layernorm; attention_type = config.layer_types[layer_idx],
 *    a key of causal_mask_mapping: "full_attention" or "chunked_attention"), Llama4TextModel
 *    (embed_tokens [V, H], layers, norm), Llama4ForCausalLM (lm_head [V, H], tied by
 *    _tied_weights_keys under tie_word_embeddings).
 *
 * What is not modelled yet (and so refused by vc_hf_build, src/hf/hf.c, with the count): the
 * memory. Llama4TextMoe.forward does not route tokens: it repeats the tokens once per expert
 * (hidden_states.repeat(E, 1)), scales them by the router's scores (sigmoid of the top-k
 * logits scattered into -inf, 0 elsewhere) and Llama4TextExperts.forward runs torch.bmm over
 * all E x T rows -- neither the stacked-experts grouped_mm path nor the per-expert loop the
 * other MoE rows model. The attention applies the rotary embedding as complex numbers in
 * float32 (apply_rotary_emb: view_as_complex), the weightless L2 qk norm in float32 on the
 * rope layers, the temperature tuning on the NoPE layers, and a chunked causal mask
 * (create_chunked_causal_mask) whose cache (transformers' chunked layers, vLLM's
 * ChunkedLocalAttentionSpec) is not modelled either.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

/* Whether the config holds key with the value null. */
static bool l4_null(rd *r, const char *key) { return cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r->cfg, key)); }

/* A key's value, null read as absent. */
static const cJSON *l4_key(rd *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    return cJSON_IsNull(v) ? NULL : v;
}

static bool is_int(const cJSON *v) { return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble); }

int vc__hf_llama4_read(rd *r, arch *a)
{
    if (a->experts_impl == EXPERTS_PER_EXPERT) { /* Llama4TextExperts: stacked nn.Parameters, no per-expert modules */
        vc_set_error(r->err, VC_ERR_USAGE, O("experts_implementation"), "per_expert: %s's experts are stacked "
                     "(Llama4TextExperts' gate_up_proj / down_proj) and run by torch.bmm; there is no per-expert loop", r->fam);
        return -1;
    }
    if (a->imbalance > 1.0) { /* Llama4TextMoe.forward: hidden_states.repeat(E, 1), every token through every expert */
        vc_set_error(r->err, VC_ERR_USAGE, O("moe_imbalance"), "%s runs every token through every expert "
                     "(Llama4TextMoe: torch.bmm over all of them): no expert is busier than another", r->fam);
        return -1;
    }
    if (a->act > A_RELU) /* SparseMoE style llama4 runs silu, gelu, gelu_tanh or relu (ACT2FN's torch ones) */
        return vc__hf_bad(r, "hidden_act", "not modelled for Llama4TextMoe's experts (silu, gelu, gelu_pytorch_tanh or "
                      "relu)");
    /* num_key_value_heads: the class's 8 when absent, num_attention_heads when null (__post_init__; the
     * row reads both as the heads) */
    if (!cJSON_GetObjectItemCaseSensitive(r->cfg, "num_key_value_heads")) {
        a->KV = 8;
        if (a->NH % a->KV)
            return vc__hf_bad(r, "num_attention_heads", "%lld must be divisible by num_key_value_heads (absent: 8)",
                          (long long)a->NH);
    }
    /* head_dim: the class's 128 when absent (the row's default), hidden_size // num_attention_heads when null */
    if (l4_null(r, "head_dim")) {
        if (a->H % a->NH)
            return vc__hf_bad(r, "num_attention_heads", "%lld must divide hidden_size (%lld): head_dim is null",
                          (long long)a->NH, (long long)a->H);
        a->D = a->H / a->NH;
        a->R = a->D;
    }
    if (a->D % 2) /* apply_rotary_emb: reshape(*shape[:-1], -1, 2), view_as_complex */
        return vc__hf_bad(r, "head_dim", "%lld: the rotary embedding pairs the head's values (view_as_complex): it must be "
                      "even", (long long)a->D);
    /* moe_layers: the decoder layers built as Llama4TextMoe (`layer_idx in config.moe_layers`) */
    const cJSON *ml = l4_key(r, "moe_layers");
    if (ml) {
        if (!cJSON_IsArray(ml)) return vc__hf_bad(r, "moe_layers", "expected a list of layer indices");
        for (const cJSON *e = ml->child; e; e = e->next)
            if (!is_int(e) || e->valuedouble < 0 || e->valuedouble >= (double)a->N)
                return vc__hf_bad(r, "moe_layers", "expected layer indices from 0 to %lld (num_hidden_layers - 1)",
                              (long long)(a->N - 1));
        a->moe_layers = ml;
    }
    /* no_rope_layers: use_rope = no_rope_layers[layer_idx] (empty: the interval's) */
    const cJSON *nr = l4_key(r, "no_rope_layers");
    if (nr && !cJSON_IsArray(nr)) return vc__hf_bad(r, "no_rope_layers", "expected a list of 0 or 1 for each layer");
    if (nr && cJSON_GetArraySize(nr) > 0) {
        if (cJSON_GetArraySize(nr) < a->N)
            return vc__hf_bad(r, "no_rope_layers", "%d values for %lld layers: Llama4TextAttention indexes it by layer",
                          cJSON_GetArraySize(nr), (long long)a->N);
        for (const cJSON *e = nr->child; e; e = e->next)
            if (!cJSON_IsNumber(e) || (e->valuedouble != 0 && e->valuedouble != 1))
                return vc__hf_bad(r, "no_rope_layers", "expected 1 (rotary) or 0 (NoPE) for each layer");
        a->no_rope = nr;
    }
    /* layer_types: a key of causal_mask_mapping per layer */
    const cJSON *lt = l4_key(r, "layer_types");
    a->l4_types = lt;
    if (lt) {
        if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) < a->N)
            return vc__hf_bad(r, "layer_types", "expected a list of %lld layer types (\"full_attention\" or "
                          "\"chunked_attention\")", (long long)a->N);
        for (const cJSON *e = lt->child; e; e = e->next)
            if (!cJSON_IsString(e) || (strcmp(e->valuestring, "full_attention") && strcmp(e->valuestring, "chunked_attention")))
                return vc__hf_bad(r, "layer_types", "expected \"full_attention\" or \"chunked_attention\" for each layer "
                              "(Llama4TextModel's causal_mask_mapping has no other)");
    }
    /* attention_chunk_size: the chunked layers' window (None: no chunking) */
    const cJSON *cs = l4_key(r, "attention_chunk_size");
    if (cs && (!is_int(cs) || cs->valuedouble < 1 || cs->valuedouble > (double)MAX_SIZE))
        return vc__hf_bad(r, "attention_chunk_size", "expected a positive integer (at most 2^40) or null");
    /* Llama4TextConfig's attention_chunk_size=8192 when absent; null: None, modelled as no chunking (the
     * "chunked_attention" layers attend and cache as full ones) */
    a->chunk = cs ? (int64_t)cs->valuedouble : l4_null(r, "attention_chunk_size") ? 0 : 8192;
    /* the temperature tuning: a truth value (Python's: a number or a bool), floor_scale divides */
    const cJSON *tt = l4_key(r, "attn_temperature_tuning");
    if (tt && !cJSON_IsBool(tt) && !(cJSON_IsNumber(tt) && isfinite(tt->valuedouble)))
        return vc__hf_bad(r, "attn_temperature_tuning", "expected true or false");
    /* Llama4TextConfig's attn_temperature_tuning=True when absent; Python's truth of the value */
    a->temp_tuning = !tt ? !l4_null(r, "attn_temperature_tuning") : cJSON_IsBool(tt) ? cJSON_IsTrue(tt) : tt->valuedouble != 0;
    const cJSON *fs = l4_key(r, "floor_scale");
    if (fs && (!cJSON_IsNumber(fs) || !isfinite(fs->valuedouble) || fs->valuedouble <= 0))
        return vc__hf_bad(r, "floor_scale", "expected a positive number (it divides the positions)");
    const cJSON *as = l4_key(r, "attn_scale");
    if (as && (!cJSON_IsNumber(as) || !isfinite(as->valuedouble)))
        return vc__hf_bad(r, "attn_scale", "expected a number");
    return 0;
}

bool vc__hf_llama4_moe_layer(const arch *a, int64_t i)
{
    if (a->moe_layers) {
        for (const cJSON *e = a->moe_layers->child; e; e = e->next)
            if (e->valuedouble == (double)i) return true;
        return false;
    }
    /* range(step - 1, num_hidden_layers, step) */
    return i >= a->sparse_step - 1 && (i - (a->sparse_step - 1)) % a->sparse_step == 0;
}

int64_t vc__hf_llama4_chunk(const arch *a, int64_t i)
{
    if (a->chunk <= 0) return 0;
    if (a->l4_types) /* the config's layer_types: causal_mask_mapping[decoder_layer.attention_type] */
        return strcmp(cJSON_GetArrayItem(a->l4_types, (int)i)->valuestring, "chunked_attention") ? 0 : a->chunk;
    /* Llama4TextConfig.__post_init__: "chunked_attention" if no_rope_layers[i] else "full_attention" */
    return vc__hf_layer_rope(a, i) ? a->chunk : 0;
}

/* Every product is bounded by hf_read.c's check_sizes (vocab x hidden, the experts' 3 x E x H x
 * intermediate and the attention projections at most 2^48 elements each, at most 1024 layers):
 * the sum stays below 2^62. */
int64_t vc__hf_llama4_parameters(const arch *a, int64_t *active)
{
    const int64_t H = a->H, q = a->NH * a->D, kv = a->KV * a->D;
    /* Llama4TextAttention: q, k, v, o (+ their biases), and the two Llama4TextRMSNorm weights */
    const int64_t attn = 2 * H * q + 2 * H * kv + (a->qkv_bias ? q + 2 * kv + H : 0) + 2 * H;
    const int64_t expert = 3 * H * a->moe_I;           /* one expert's gate, up and down */
    const int64_t moe = a->E * H + (a->E + 1) * expert; /* router, experts, shared_expert */
    const int64_t dense = 3 * H * a->I;                 /* Llama4TextMLP(intermediate_size_mlp) */
    int64_t total = a->V * H * (a->tie ? 1 : 2) + H, idle = 0; /* embed_tokens, lm_head, norm */
    for (int64_t i = 0; i < a->N; i++) {
        bool m = vc__hf_llama4_moe_layer(a, i);
        total += attn + (m ? moe : dense);
        if (m) idle += (a->E - a->K) * expert; /* the experts a token's top-k leaves out */
    }
    *active = total - idle;
    return total;
}

/* ---- llama4: the vision tower and projector of Llama4ForConditionalGeneration, counted, not run.
 * Llama4VisionConfig's defaults (configuration_llama4.py @ 008e5743) and the modules' parameters
 * (modeling_llama4.py @ 000c33fd): Llama4VisionModel (patch_embedding = Llama4UnfoldConvolution: an
 * nn.Linear(num_channels x patch_size^2, hidden_size, bias=False); class_embedding [H];
 * positional_embedding_vlm [(image_size // patch_size)^2 + 1, H]; layernorm_pre, layernorm_post
 * (nn.LayerNorm: weight and bias); model.layers: Llama4VisionEncoderLayer (self_attn q/k/v/o_proj
 * nn.Linear(H, H) with biases, mlp fc1 (H -> intermediate_size) and fc2 with biases, input_layernorm
 * and post_attention_layernorm); vision_adapter.mlp = Llama4VisionMLP2 (fc1 nn.Linear(intermediate_size,
 * projector_input_dim), fc2 nn.Linear(projector_output_dim, projector_output_dim), no biases));
 * Llama4MultiModalProjector (linear_1 nn.Linear(vision_output_dim, text hidden_size, bias=False)).
 * No image is run: --image is refused (the tower's forward, pixel shuffle and the image tokens are
 * not written). */

static int l4v_int(rd *r, const cJSON *v, const char *key, int64_t def, int64_t *out)
{
    const cJSON *x = v ? cJSON_GetObjectItemCaseSensitive(v, key) : NULL;
    char path[96];
    snprintf(path, sizeof path, "vision_config.%s", key);
    if (!x || cJSON_IsNull(x)) {
        *out = def;
        return 0;
    }
    if (!is_int(x) || x->valuedouble < 1 || x->valuedouble > (double)MAX_SIZE) {
        vc_set_error(r->err, VC_ERR_MODEL, path, "expected a positive integer (at most 2^40)");
        return -1;
    }
    *out = (int64_t)x->valuedouble;
    return 0;
}

int vc__hf_llama4_vision_read(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split)
{
    if (o && (o->image_w > 0 || o->images > 0))
        return vc_set_error(r->err, VC_ERR_USAGE, O("image"), "%s: Llama4VisionModel's forward (the unfold patches, "
                            "the complex 2-D rotary, pixel shuffle) and the image tokens are not modelled: the tower's "
                            "weights are counted, no image is run", r->fam),
               -1;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, "vision_config");
    if (v && !cJSON_IsNull(v) && !cJSON_IsObject(v))
        return vc_set_error(r->err, VC_ERR_MODEL, "vision_config", "expected an object (Llama4VisionConfig's keys)"), -1;
    if (v && cJSON_IsNull(v)) v = NULL; /* Llama4Config.__post_init__: None -> Llama4VisionConfig() */
    if (l4v_int(r, v, "hidden_size", 768, &a->l4v.H) || l4v_int(r, v, "intermediate_size", 5632, &a->l4v.I) ||
        l4v_int(r, v, "num_hidden_layers", 34, &a->l4v.N) || l4v_int(r, v, "num_attention_heads", 16, &a->l4v.NH) ||
        l4v_int(r, v, "num_channels", 3, &a->l4v.cin) || l4v_int(r, v, "image_size", 448, &a->l4v.img) ||
        l4v_int(r, v, "patch_size", 14, &a->l4v.P) || l4v_int(r, v, "projector_input_dim", 4096, &a->l4v.pin) ||
        l4v_int(r, v, "projector_output_dim", 4096, &a->l4v.pout) ||
        l4v_int(r, v, "vision_output_dim", 7680, &a->l4v.vout))
        return -1;
    if (a->l4v.H % a->l4v.NH)
        return vc_set_error(r->err, VC_ERR_MODEL, "vision_config.num_attention_heads", "%lld must divide hidden_size "
                            "(%lld): Llama4VisionAttention's head_dim is hidden_size // num_attention_heads",
                            (long long)a->l4v.NH, (long long)a->l4v.H), -1;
    if (a->l4v.P > a->l4v.img)
        return vc_set_error(r->err, VC_ERR_MODEL, "vision_config.patch_size", "%lld is larger than image_size (%lld): "
                            "no patch", (long long)a->l4v.P, (long long)a->l4v.img), -1;
    /* every weight below 2^48 elements, as hf_read.c bounds the language model's */
    const int64_t lim = INT64_C(1) << 48, side = a->l4v.img / a->l4v.P;
    const struct { int64_t x, y; const char *key; } prods[] = {
        {a->l4v.H, a->l4v.H, "hidden_size"}, {a->l4v.H, a->l4v.I, "intermediate_size"},
        {a->l4v.cin * a->l4v.P, a->l4v.P * a->l4v.H, "patch_size"}, {side * side + 1, a->l4v.H, "image_size"},
        {a->l4v.I, a->l4v.pin, "projector_input_dim"}, {a->l4v.pout, a->l4v.pout, "projector_output_dim"},
        {a->l4v.vout, a->H, "vision_output_dim"}, {a->l4v.N, 1, "num_hidden_layers"},
    };
    for (size_t i = 0; i < sizeof prods / sizeof *prods; i++) {
        int64_t t;
        char path[96];
        snprintf(path, sizeof path, "vision_config.%s", prods[i].key);
        if (prods[i].x > lim || prods[i].y > lim || __builtin_mul_overflow(prods[i].x, prods[i].y, &t) || t > lim)
            return vc_set_error(r->err, VC_ERR_MODEL, path, "a weight of the vision tower would have more than 2^48 "
                                "elements"), -1;
    }
    if (a->l4v.N > 1024)
        return vc_set_error(r->err, VC_ERR_MODEL, "vision_config.num_hidden_layers", "%lld: more than 1024 layers",
                            (long long)a->l4v.N), -1;
    /* --serve --tp: vLLM's split of the tower (vllm-project/vllm vllm/model_executor/models/mllama4.py @ 00dd5493,
     * use_data_parallel only when multimodal_config.mm_encoder_tp_mode == "data", "weights" by default):
     * Llama4VisionAttention qkv_proj QKVParallelLinear(hidden, head_dim, num_heads, bias) ("assert self.num_heads %
     * self.tp_size == 0") and o_proj RowParallelLinear(bias); Llama4VisionMLP fc1 ColumnParallelLinear and fc2
     * RowParallelLinear, the encoder layers' with biases, the vision adapter's without; Llama4UnfoldConvolution.linear
     * and Llama4MultiModalProjector.linear_1 ColumnParallelLinear(gather_output=True); class_embedding,
     * positional_embedding_vlm (nn.Parameter) and the nn.LayerNorms whole. vllm/model_executor/layers/linear.py:
     * ColumnParallelLinear holds divide(output_size, tp) rows (divide asserts divisibility) and as many bias values,
     * RowParallelLinear divide(input_size, tp) columns and its whole bias. */
    a->l4v.tp = 1;
    if (split.tp > 1 && split.vllm) {
        const struct { int64_t x; const char *key; } divs[] = {
            {a->l4v.NH, "vision_config.num_attention_heads"}, {a->l4v.H, "vision_config.hidden_size"},
            {a->l4v.I, "vision_config.intermediate_size"}, {a->l4v.pin, "vision_config.projector_input_dim"},
            {a->l4v.pout, "vision_config.projector_output_dim"}, {a->H, "text_config.hidden_size"},
        };
        for (size_t i = 0; i < sizeof divs / sizeof *divs; i++)
            if (divs[i].x % split.tp)
                return vc_set_error(r->err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide %s (%lld): "
                                    "vLLM splits Llama 4's vision tower over the ranks (mllama4.py: its column- and "
                                    "row-parallel Linear layers, divide(size, tp_size))", (long long)split.tp, divs[i].key,
                                    (long long)divs[i].x), -1;
        a->l4v.tp = split.tp;
    }
    a->l4v.on = true;
    return 0;
}

static void l4v_weights(rd *r, cJSON *arr, const char *name, int64_t d0, int64_t d1, bool bias, bool linear)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(arr, o)) {
        cJSON_Delete(o);
        r->oom = true;
        return;
    }
    cJSON *shape = cJSON_AddArrayToObject(o, "shape");
    cJSON *n0 = cJSON_CreateNumber((double)d0), *n1 = d1 ? cJSON_CreateNumber((double)d1) : NULL;
    bool a0 = shape && n0 && cJSON_AddItemToArray(shape, n0), a1 = !d1 || (shape && n1 && cJSON_AddItemToArray(shape, n1));
    if (!a0) cJSON_Delete(n0);
    if (!a1) cJSON_Delete(n1);
    if (!a0 || !a1 || !cJSON_AddStringToObject(o, "type", "VisionWeights") || !cJSON_AddStringToObject(o, "name", name) ||
        !cJSON_AddBoolToObject(o, "frozen", true) || (bias && !cJSON_AddBoolToObject(o, "bias", true)) ||
        (d1 && !linear && !cJSON_AddBoolToObject(o, "linear", false)))
        r->oom = true;
}

void vc__hf_llama4_vision_write(rd *r, cJSON *arr, const arch *a)
{
    if (!a->l4v.on) return;
    const int64_t H = a->l4v.H, I = a->l4v.I, side = a->l4v.img / a->l4v.P, k = a->l4v.tp > 1 ? a->l4v.tp : 1;
    char nm[120];
    /* a rank's shards under vLLM's split (k > 1, vc__hf_llama4_vision_read): column-parallel rows / k with their
     * biases, row-parallel columns / k with the whole bias */
    l4v_weights(r, arr, "vision_model.patch_embedding.linear", H / k, a->l4v.cin * a->l4v.P * a->l4v.P, false, true);
    l4v_weights(r, arr, "vision_model.class_embedding", H, 0, false, false);
    l4v_weights(r, arr, "vision_model.positional_embedding_vlm", side * side + 1, H, false, false);
    l4v_weights(r, arr, "vision_model.layernorm_pre", H, 0, true, false);
    l4v_weights(r, arr, "vision_model.layernorm_post", H, 0, true, false);
    static const char *const proj[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"};
    for (int64_t l = 0; l < a->l4v.N && !r->oom; l++) {
        for (int j = 0; j < 4; j++) {
            snprintf(nm, sizeof nm, "vision_model.model.layers.%lld.%s", (long long)l, proj[j]);
            l4v_weights(r, arr, nm, j < 3 ? H / k : H, j < 3 ? H : H / k, true, true); /* q/k/v: QKVParallelLinear */
        }
        snprintf(nm, sizeof nm, "vision_model.model.layers.%lld.mlp.fc1", (long long)l);
        l4v_weights(r, arr, nm, I / k, H, true, true);
        snprintf(nm, sizeof nm, "vision_model.model.layers.%lld.mlp.fc2", (long long)l);
        l4v_weights(r, arr, nm, H, I / k, true, true);
        snprintf(nm, sizeof nm, "vision_model.model.layers.%lld.input_layernorm", (long long)l);
        l4v_weights(r, arr, nm, H, 0, true, false);
        snprintf(nm, sizeof nm, "vision_model.model.layers.%lld.post_attention_layernorm", (long long)l);
        l4v_weights(r, arr, nm, H, 0, true, false);
    }
    l4v_weights(r, arr, "vision_model.vision_adapter.mlp.fc1", a->l4v.pin / k, I, false, true);
    l4v_weights(r, arr, "vision_model.vision_adapter.mlp.fc2", a->l4v.pout, a->l4v.pout / k, false, true);
    l4v_weights(r, arr, "multi_modal_projector.linear_1", a->H / k, a->l4v.vout, false, true);
}
