/*
 * hf_layers.c — an arch (src/hf/hf_arch.h) written as the layers of a vramcalc
 * model (issue 12; split out of src/hf/hf.c).
 *
 * Layers are named as the HF modules are (model.embed_tokens, model.layers >
 * self_attn.q_proj, mlp.down_proj, lm_head, ...), projections are Linear
 * layers, and the kinds of layers/llm.c do the rest. Every architecture
 * follows its modeling_*.py at huggingface/transformers
 * 5dd4a63548857797727ae73eeb6a6e886ea02a3e; the module each layer stands for
 * is named in the code below.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "model.h"
#include "util.h"

typedef struct {
    rd *r;
    cJSON *arr;       /* the list being written */
    const char *last; /* the name of the last layer written */
} wr;

static const char *const act_json[] = {"silu", "gelu", "gelu_tanh", "relu", "new", "fast", "quick_gelu" /* the Qwen2-VL tower's (hf_vision.c) */, "relu2",
                                             "xielu"};

cJSON *vc__hf_layer(rd *r, cJSON *arr, const char *type, const char *name)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddItemToArray(arr, o)) {
        cJSON_Delete(o);
        r->oom = true;
        return NULL;
    }
    if (!cJSON_AddStringToObject(o, "type", type) || (name && !cJSON_AddStringToObject(o, "name", name))) r->oom = true;
    return o;
}
void vc__hf_num(rd *r, cJSON *o, const char *k, double v)
{
    if (o && !cJSON_AddNumberToObject(o, k, v)) r->oom = true;
}
void vc__hf_flag(rd *r, cJSON *o, const char *k, bool v)
{
    if (o && !cJSON_AddBoolToObject(o, k, v)) r->oom = true;
}
void vc__hf_str(rd *r, cJSON *o, const char *k, const char *v)
{
    if (o && !cJSON_AddStringToObject(o, k, v)) r->oom = true;
}
void vc__hf_ins(rd *r, cJSON *o, const char *a, const char *b, const char *c, const char *d)
{
    if (!o) return;
    const char *v[4] = {a, b, c, d};
    int n = 0;
    while (n < 4 && v[n]) n++;
    cJSON *arr = cJSON_CreateStringArray(v, n);
    if (!arr || !cJSON_AddItemToObject(o, "inputs", arr)) {
        cJSON_Delete(arr);
        r->oom = true;
    }
}

static cJSON *add_layer(wr *w, const char *type, const char *name)
{
    w->last = name;
    return vc__hf_layer(w->r, w->arr, type, name);
}
static void num(wr *w, cJSON *o, const char *k, double v) { vc__hf_num(w->r, o, k, v); }
static void flag(wr *w, cJSON *o, const char *k, bool v) { vc__hf_flag(w->r, o, k, v); }
static void str(wr *w, cJSON *o, const char *k, const char *v) { vc__hf_str(w->r, o, k, v); }
/* "inputs": [a, b, ...] (NULL-terminated) */
static void ins(wr *w, cJSON *o, const char *a, const char *b, const char *c, const char *d) { vc__hf_ins(w->r, o, a, b, c, d); }

static cJSON *linear(wr *w, const char *name, const char *in, int64_t nin, int64_t nout, bool bias)
{
    cJSON *o = add_layer(w, "Linear", name);
    if (in) ins(w, o, in, NULL, NULL, NULL);
    num(w, o, "in_features", (double)nin);
    num(w, o, "out_features", (double)nout);
    flag(w, o, "bias", bias);
    const char *role = w->r->sp > 1 ? vc__hf_sp_role(name) : NULL; /* hf_tp.c */
    if (role) num(w, o, role, (double)w->r->sp);
    return o;
}

/* A SparseMoE layer (layers/llm.c) of the row's experts: its sizes and style; the caller adds the style's keys */
static cJSON *sparse_moe(wr *w, const arch *a, const char *name, const char *style)
{
    cJSON *o = add_layer(w, "SparseMoE", name);
    num(w, o, "hidden_size", (double)a->H);
    num(w, o, "intermediate_size", (double)a->moe_I);
    num(w, o, "num_experts", (double)a->E);
    num(w, o, "top_k", (double)a->K);
    str(w, o, "style", style);
    return o;
}

static cJSON *rmsnorm(wr *w, const arch *a, const char *name, const char *in)
{
    cJSON *o = add_layer(w, "HFRMSNorm", name);
    if (in) ins(w, o, in, NULL, NULL, NULL);
    num(w, o, "hidden_size", (double)a->H);
    num(w, o, "eps", a->eps);
    if (a->f->norm == NORM_RMS_GEMMA) str(w, o, "variant", "gemma");
    if (a->f->norm == NORM_RMS_F32) str(w, o, "variant", "gpt_oss");
    if (a->f->norm == NORM_RMS_OLMO) str(w, o, "variant", "olmo");
    if (a->f->norm == NORM_COHERE) str(w, o, "variant", "cohere");
    if (a->liger & LIGER_RMS_NORM) { /* --liger: _patch_rms_norm_module (hf.c liger_family) */
        flag(w, o, "liger", true);
        if (a->liger_copy) flag(w, o, "liger_in_place", false);
    }
    return o;
}

static cJSON *layernorm(wr *w, const arch *a, const char *name, const char *in)
{
    cJSON *o = add_layer(w, "LayerNorm", name);
    if (in) ins(w, o, in, NULL, NULL, NULL);
    num(w, o, "normalized_shape", (double)a->H);
    num(w, o, "eps", a->eps);
    if (a->f->norm == NORM_LAYER_1P) flag(w, o, "one_plus", true);
    return o;
}

/* The decoder template's norm: nn.LayerNorm (weight and bias) for a NORM_LAYER row (Starcoder2DecoderLayer's and
 * PhimoeDecoderLayer's input_layernorm / post_attention_layernorm, Starcoder2Model.norm, PhimoeModel.norm) or a
 * NORM_LAYER_1P row (NemotronDecoderLayer's, NemotronModel.norm: NemotronLayerNorm1P), else
 * the row's RMSNorm. */
static cJSON *decoder_norm(wr *w, const arch *a, const char *name, const char *in)
{
    return a->f->norm == NORM_LAYER || a->f->norm == NORM_LAYER_1P ? layernorm(w, a, name, in) : rmsnorm(w, a, name, in);
}

/* The token embedding; with --sp, VocabParallelEmbedding's reduce-scatter
 * to the rank's part of the sequence (layers/embedding.c). */
static void embedding(wr *w, const arch *a, const char *name)
{
    cJSON *o = add_layer(w, "Embedding", name);
    num(w, o, "num_embeddings", (double)(a->V + a->ml.vextra)); /* mllama: vocab_size + 8 rows (hf_mllama.c) */
    num(w, o, "embedding_dim", (double)a->H);
    if (a->sp > 1) num(w, o, "sequence_scatter", (double)a->sp);
}

static void dropout(wr *w, const char *name, double p)
{
    if (p <= 0) return; /* nn.Dropout(0.0) returns its input (F.dropout: p == 0) */
    cJSON *o = add_layer(w, "Dropout", name);
    num(w, o, "p", p);
}

static void act_layer(wr *w, const arch *a, const char *name)
{
    if (a->act == A_GELU_NEW || a->act == A_GELU_FAST || a->act == A_GELU_QUICK) {
        /* quick_gelu (CLIP's): QuickGELUActivation, input * torch.sigmoid(1.702 * input) (layers/llm.c) */
        cJSON *o = add_layer(w, "NewGELU", name);
        str(w, o, "variant", a->act == A_GELU_NEW ? "new" : a->act == A_GELU_FAST ? "fast" : "quick");
    } else if (a->act == A_SILU) {
        add_layer(w, "SiLU", name);
    } else if (a->act == A_RELU) {
        add_layer(w, "ReLU", name);
    } else if (a->act == A_XIELU) {
        add_layer(w, "XIELU", name); /* XIELUActivation (layers/activation.c) */
    } else if (a->act == A_RELU2) {
        /* ReLUSquaredActivation.forward (activations.py @ 9e7da07b): relu_applied = nn.functional.relu(input);
         * squared = torch.square(relu_applied) (layers/activation.c Square) */
        char sq[128];
        snprintf(sq, sizeof sq, "%s.square", name);
        /* forward's argument `input` (the layer before, up_proj's output) lives until it returns */
        str(w, cJSON_GetArrayItem(w->arr, cJSON_GetArraySize(w->arr) - 1), "held_until", sq);
        add_layer(w, "ReLU", name);
        add_layer(w, "Square", sq);
    } else {
        cJSON *o = add_layer(w, "GELU", name);
        str(w, o, "approximate", a->act == A_GELU_TANH ? "tanh" : "none");
    }
}

/* The attention core: LlamaAttention.forward from the projections to o_proj. */
static void attn_core(wr *w, const arch *a, const char *name, bool fused, const char *q, const char *k, const char *v,
                      const char *rope, bool causal, int64_t window)
{
    cJSON *o = add_layer(w, "RotaryAttention", name);
    if (a->R == 0) rope = NULL; /* rotary_pct / partial_rotary_factor 0: no rotary embedding */
    /* (rope NULL with a->R > 0: a NoPE layer, SmolLM3's use_rope 0) */
    if (fused) ins(w, o, q, rope, NULL, NULL);
    else ins(w, o, q, k, v, rope);
    num(w, o, "num_heads", (double)a->NH);
    num(w, o, "num_kv_heads", (double)a->KV);
    num(w, o, "head_dim", (double)a->D);
    num(w, o, "rotary_dim", rope ? (double)a->R : 0);
    if (fused) flag(w, o, "fused_qkv", true);
    flag(w, o, "causal", causal);
    if (a->f->qk_norm && (!a->f->keys[K_USE_QK_NORM].key || a->use_qk_norm)) {
        flag(w, o, "qk_norm", true);
        num(w, o, "qk_norm_eps", a->eps);
        if (a->f->qk_norm == QK_WHOLE) flag(w, o, "qk_norm_whole", true);
        if (a->f->qk_norm == QK_WHOLE && a->qk_gather > 1) num(w, o, "qk_norm_gather", (double)a->qk_gather); /* hf_tp.c */
        if (a->f->qk_norm == QK_HEADS) flag(w, o, "qk_norm_heads", true);
        if (a->f->qk_norm_rope) flag(w, o, "qk_norm_after_rope", true); /* HunYuan: after apply_rotary_pos_emb */
        if (a->f->norm == NORM_COHERE) str(w, o, "qk_norm_variant", "cohere"); /* CohereLayerNorm */
    }
    if (a->f->qk_norm && a->f->norm == NORM_RMS_GEMMA) str(w, o, "qk_norm_variant", "gemma"); /* Gemma3RMSNorm */
    if (a->f->qk_norm && a->f->norm == NORM_RMS_OLMO) str(w, o, "qk_norm_variant", "olmo"); /* Olmo3RMSNorm */
    if (a->f->half_rope && rope) str(w, o, "rope_style", "gpt_oss"); /* _apply_rotary_emb: chunk(2) */
    if ((a->liger & LIGER_ROPE) && rope) flag(w, o, "liger_rope", true); /* --liger: liger_rotary_pos_emb (hf.c liger_family) */
    if (a->f->interleaved_rope && rope) str(w, o, "rope_style", "glm4"); /* Glm4's apply_rotary_pos_emb */
    if (a->f->vision == VIS_GLM4V && rope) flag(w, o, "mrope", true); /* Glm4v's apply_multimodal_rotary_pos_emb */
    /* Olmo2's float32 products, .to(q_type); not under vLLM, whose Olmo2Attention rotates with its own get_rope
     * (vllm/model_executor/models/olmo2.py @ 028aedf6) */
    if (a->f->rope_f32 && rope && !a->vllm) flag(w, o, "rope_f32", true);
    if (a->f->rope_upcast && rope && !a->vllm) { /* Cohere's q.float(), k.float() (layers/llm.c) */
        flag(w, o, "rope_f32", true);
        flag(w, o, "rope_upcast", true);
    }
    if (window > 0) num(w, o, "sliding_window", (double)window);
    if (window > 0 && a->mask_4x) flag(w, o, "sliding_mask_4x", true); /* release.c VC_TF_SLIDING_FLOAT_MASK */
    if (a->eager) flag(w, o, "eager", true);
    if (a->f->sinks) flag(w, o, "sinks", true); /* GptOssAttention.sinks */
    /* sdpa_attention_forward takes no softcap: attn_logit_softcapping applies under eager only */
    if (a->eager && a->attn_cap > 0) num(w, o, "softcap", a->attn_cap);
    if (a->p_attn > 0) num(w, o, "dropout", a->p_attn);
    /* Qwen3NextAttention: attn_output * sigmoid(gate) (its Qwen3NextRMSNorm q/k norms: the gemma variant above) */
    if (a->f->hybrid) flag(w, o, "output_gate", true);
    /* Gemma3Model.forward (modeling_gemma3.py @ 0018aa64) with images: create_causal_mask_mapping's token_type_ids
     * or-mask (may_have_image_input: training, and generate()'s prefill with pixel_values; not its decoding steps),
     * the language model's full and sliding masks (layers/llm.c image_masks); transformers' eager path is not run
     * with them here */
    if (a->f->vision == VIS_SIGLIP && a->vis.patches > 0 && !a->vis.decode && causal && !a->eager)
        flag(w, o, "image_mask", true);
    /* PaliGemmaForConditionalGeneration.forward (modeling_paligemma.py @ efa7189c): its _update_causal_mask's float
     * mask in every layer, with or without an image (layers/llm.c prefix_mask_4x) */
    if (a->f->vision == VIS_PALIGEMMA && causal && !a->eager) flag(w, o, "prefix_mask", true);
    /* PaliGemma 2: Gemma2Model.forward's HybridCache outside training (modeling_gemma2.py @ efa7189c; layers/llm.c
     * hybrid_update) */
    if (a->f->vision == VIS_PALIGEMMA && a->f->text_type && causal && !a->eager) flag(w, o, "hybrid_cache", true);
}

int64_t vc__hf_layer_window(const arch *a, int64_t i)
{
    if (a->layer_types) { /* the config's own list (the layer_types its class's __post_init__ would write) */
        const cJSON *t = cJSON_GetArrayItem(a->layer_types, (int)i);
        return cJSON_IsString(t) && !strcmp(t->valuestring, "sliding_attention") ? a->window : 0;
    }
    switch (a->f->window) {
    case WIN_ALTERNATE: return i % 2 ? 0 : a->window; /* Gemma2: layer_idx % 2 == 0 slides */
    case WIN_FROM_LAYER: return i >= a->window_layers ? a->window : 0;
    case WIN_ALTERNATE_BELOW: return i % 2 == 0 && i < a->window_layers ? a->window : 0;
    case WIN_NOPE: return vc__hf_layer_rope(a, i) ? 0 : a->window;
    case WIN_PATTERN: return (i + 1) % a->window_pattern ? a->window : 0; /* "sliding_attention" if (i + 1) % pattern */
    default: return a->window;
    }
}

bool vc__hf_layer_rope(const arch *a, int64_t i)
{
    if (a->f->nope_full) return !a->window || vc__hf_layer_window(a, i) > 0; /* exaone4: global NoPE with a window */
    if (a->f->rope_sliding) return vc__hf_layer_window(a, i) > 0; /* Cohere2Attention: rotary where sliding_window */
    if (!a->f->nope) return true;
    if (a->no_rope) return cJSON_GetArrayItem(a->no_rope, (int)i)->valuedouble != 0; /* no_rope_layers[i]: use_rope */
    return (i + 1) % a->nope_interval != 0; /* SmolLM3Config: int((layer_idx + 1) % no_rope_layer_interval != 0) */
}

bool vc__hf_layer_linear(const arch *a, int64_t i)
{
    if (!a->f->hybrid) return false;
    if (a->hybrid_types) return !strcmp(cJSON_GetArrayItem(a->hybrid_types, (int)i)->valuestring, "linear_attention");
    /* Qwen3NextConfig.__post_init__: "linear_attention" if bool((i + 1) % interval_pattern) */
    return (i + 1) % a->full_interval != 0;
}

/* Qwen3NextGatedDeltaNet (modeling_qwen3_next.py at 7515843b): in_proj_qkvz and in_proj_ba
 * (nn.Linear, no bias) on the normed hidden states, the rest of its forward (conv1d, the gated
 * delta rule, the gated RMSNorm) in layers/deltanet.c, out_proj. */
static void linear_attn(wr *w, const arch *a, const char *in)
{
    const int64_t kd = a->lin_kh * a->lin_kd, vd = a->lin_vh * a->lin_vd;
    cJSON *o;
    if (a->f->gdn_split) { /* Qwen3_5GatedDeltaNet (modular_qwen3_5.py @ 8940358a): in_proj_qkv, _z, _b, _a */
        linear(w, "linear_attn.in_proj_qkv", NULL, a->H, 2 * kd + vd, false);
        linear(w, "linear_attn.in_proj_z", in, a->H, vd, false);
        linear(w, "linear_attn.in_proj_b", in, a->H, a->lin_vh, false);
        linear(w, "linear_attn.in_proj_a", in, a->H, a->lin_vh, false);
        o = add_layer(w, "GatedDeltaNet", "linear_attn");
        ins(w, o, "linear_attn.in_proj_qkv", "linear_attn.in_proj_z", "linear_attn.in_proj_b", "linear_attn.in_proj_a");
        flag(w, o, "split_projections", true);
    } else {
        linear(w, "linear_attn.in_proj_qkvz", NULL, a->H, 2 * kd + 2 * vd, false);
        linear(w, "linear_attn.in_proj_ba", in, a->H, 2 * a->lin_vh, false);
        o = add_layer(w, "GatedDeltaNet", "linear_attn");
        ins(w, o, "linear_attn.in_proj_qkvz", "linear_attn.in_proj_ba", NULL, NULL);
    }
    num(w, o, "num_k_heads", (double)a->lin_kh);
    num(w, o, "num_v_heads", (double)a->lin_vh);
    num(w, o, "head_k_dim", (double)a->lin_kd);
    num(w, o, "head_v_dim", (double)a->lin_vd);
    num(w, o, "conv_kernel", (double)a->conv_k);
    num(w, o, "eps", a->eps);
    linear(w, "linear_attn.out_proj", NULL, vd, a->H, false);
}

static bool layer_is_moe(const arch *a, int64_t i)
{
    if (a->f->moe == MOE_MIXTRAL || a->f->moe == MOE_GPT_OSS || a->f->moe == MOE_MINIMAX || a->f->moe == MOE_PHIMOE ||
        a->f->moe == MOE_GRANITE || a->f->moe == MOE_HUNYUAN)
        return true;
    if (a->f->moe == MOE_DEEPSEEK) return i >= a->first_dense; /* DeepseekV3DecoderLayer: layer_idx >= first_k_dense_replace */
    if (a->f->moe == MOE_LFM2) return i >= a->first_dense;     /* Lfm2MoeDecoderLayer: layer_idx >= num_dense_layers */
    if (a->f->moe == MOE_LLAMA4) return vc__hf_llama4_moe_layer(a, i); /* layer_idx in config.moe_layers */
    if (a->f->moe == MOE_ERNIE) /* Ernie4_5_MoeDecoderLayer.__init__ (modeling_ernie4_5_moe.py @ 0233e509) */
        return (i + 1) % a->sparse_step == 0 && i >= a->first_dense && i <= a->moe_end;
    if (a->f->moe != MOE_QWEN2 || a->E < 1 || (i + 1) % a->sparse_step) return false;
    for (const cJSON *e = a->mlp_only ? a->mlp_only->child : NULL; e; e = e->next)
        if (cJSON_IsNumber(e) && e->valuedouble == (double)i) return false;
    return true;
}

/* residual + hidden_states (GraniteDecoderLayer: residual + hidden_states *
 * residual_multiplier, the product a new tensor) */
static void residual_add(wr *w, const arch *a, const char *name, const char *residual, const char *scale_name)
{
    if (a->f->mup) {
        cJSON *o = add_layer(w, "Scale", scale_name);
        num(w, o, "factor", a->resid_mult);
    }
    const char *prev = w->last;
    ins(w, add_layer(w, "Add", name), residual, prev, NULL, NULL);
}

/* DeepseekV3Attention (modeling_deepseek_v3.py @ 00b676f8): the query from
 * q_proj, or q_b_proj(q_a_layernorm(q_a_proj(x))) with q_lora_rank (a
 * DeepseekV3RMSNorm of q_lora_rank), compressed_kv = kv_a_proj_with_mqa(x),
 * then the MLAttention core (layers/mla.c: kv_a_layernorm, kv_b_proj, the
 * rotary part, sdpa) named self_attn so that its parameters carry the
 * module's names; o_proj follows in decoder_layer. On a tensor-parallel rank
 * q_a_proj and kv_a_proj_with_mqa are whole (vLLM's ReplicatedLinear), the
 * heads split. */
static void mla_attention(wr *w, const arch *a, int64_t i)
{
    /* GlmMoeDsaAttention in a "shared" layer (src/hf/hf_deepseek_v32.c): no indexer, the previous full layer's top-k */
    const bool shared = a->f->dsa_glm && vc__hf_glm_shared(w->r->cfg, i);
    const int64_t qk = a->NH * (a->qk_nope + a->D);
    if (a->q_lora) {
        linear(w, "self_attn.q_a_proj", NULL, a->H, a->q_lora, a->qkv_bias);
        cJSON *o = add_layer(w, "HFRMSNorm", "self_attn.q_a_layernorm");
        num(w, o, "hidden_size", (double)a->q_lora);
        num(w, o, "eps", 1e-6); /* DeepseekV3RMSNorm(config.q_lora_rank): its default eps */
        if (a->f->dsa && a->vllm && !shared) { /* DeepseekV32Indexer's parameters on vLLM's tensor-parallel split (src/hf/hf_deepseek_v32.c;
                          * modeling_deepseek_v32.py @ 01f8fa55): counted and stored; what the indexer computes is
                          * src/engine/serve.c's. Otherwise they are MLAttention's (layers/mla.c), which runs it under transformers */
            linear(w, "self_attn.indexer.wq_b", "self_attn.q_a_layernorm", a->q_lora, a->dsa.nh * a->dsa.hd, false);
            /* vLLM's wk_weights_proj (quant_config=None): wk and weights_proj in the model dtype */
            flag(w, linear(w, "self_attn.indexer.wk", "input_layernorm", a->H, a->dsa.hd, false), "quantizable", false);
            cJSON *kn = add_layer(w, "LayerNorm", "self_attn.indexer.k_norm");
            num(w, kn, "normalized_shape", (double)a->dsa.hd);
            num(w, kn, "eps", 1e-6);
            flag(w, linear(w, "self_attn.indexer.weights_proj", "input_layernorm", a->H, a->dsa.nh, false), "quantizable", false);
        }
        linear(w, "self_attn.q_b_proj", a->f->dsa ? "self_attn.q_a_layernorm" : NULL, a->q_lora, qk, false);
    } else {
        linear(w, "self_attn.q_proj", NULL, a->H, qk, false);
    }
    const char *q = w->last;
    linear(w, "self_attn.kv_a_proj_with_mqa", "input_layernorm", a->H, a->kv_lora + a->D, a->qkv_bias);
    cJSON *o = add_layer(w, "MLAttention", "self_attn");
    ins(w, o, q, "self_attn.kv_a_proj_with_mqa", "model.rotary_emb", NULL);
    num(w, o, "num_heads", (double)a->NH);
    num(w, o, "qk_nope_head_dim", (double)a->qk_nope);
    num(w, o, "qk_rope_head_dim", (double)a->D);
    num(w, o, "v_head_dim", (double)a->v_head);
    num(w, o, "kv_lora_rank", (double)a->kv_lora);
    if (shared && !a->vllm) { /* the index mask from the top-k the previous full layer returned (layers/mla.c) */
        flag(w, o, "index_shared", true);
        num(w, o, "index_topk", (double)a->dsa.topk);
    } else if (a->f->dsa && !a->vllm) { /* DeepseekV32Attention: the indexer reads q_resid and the normed hidden states */
        cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "inputs");
        if (in && (!cJSON_AddItemToArray(in, cJSON_CreateString("self_attn.q_a_layernorm")) ||
                   !cJSON_AddItemToArray(in, cJSON_CreateString("input_layernorm"))))
            w->r->oom = true;
        num(w, o, "index_n_heads", (double)a->dsa.nh);
        num(w, o, "index_head_dim", (double)a->dsa.hd);
        num(w, o, "index_topk", (double)a->dsa.topk);
        if (a->f->dsa_glm) str(w, o, "dsa_rope", "glm_moe_dsa"); /* GlmMoeDsaAttention's rotations (layers/mla.c) */
    }
    if (a->f->ds_v2) flag(w, o, "complex_rope", true); /* DeepseekV2Attention: apply_rotary_emb on freqs_cis */
    else flag(w, o, "rope_interleave", a->rope_interleave);
    if (a->p_attn > 0) num(w, o, "dropout", a->p_attn);
}

/* Llama4TextAttention (modeling_llama4.py @ 000c33fd) on the RotaryAttention just written: the
 * rope layers rotate q and k as complex numbers (apply_rotary_emb) and, with use_qk_norm, L2-normalize
 * them (Llama4TextL2Norm, no weight); the NoPE layers scale q by the temperature tuning
 * (attn_temperature_tuning); a "chunked_attention" layer's cache keeps attention_chunk_size - 1
 * tokens (DynamicCache: DynamicSlidingWindowLayer) and vLLM serves it as ChunkedLocalAttention
 * (layers/llm.c). */
static void llama4_attn(wr *w, const arch *a, int64_t i)
{
    cJSON *o = cJSON_GetArrayItem(w->arr, cJSON_GetArraySize(w->arr) - 1);
    bool rope = vc__hf_layer_rope(a, i);
    if (rope) str(w, o, "rope_style", "llama4");
    if (rope && a->use_qk_norm) { /* self.qk_norm = Llama4TextL2Norm(config.rms_norm_eps) */
        flag(w, o, "l2_qk_norm", true);
        num(w, o, "qk_norm_eps", a->eps);
    }
    if (!rope && a->temp_tuning) flag(w, o, "temperature_tuning", true);
    int64_t chunk = vc__hf_llama4_chunk(a, i);
    if (chunk > 0) num(w, o, "attention_chunk_size", (double)chunk);
}

/* One LlamaDecoderLayer (and its relatives: MistralDecoderLayer,
 * Qwen2/Qwen3DecoderLayer, GemmaDecoderLayer, Gemma2DecoderLayer with its
 * four norms, Phi3DecoderLayer with fused projections and residual
 * dropouts, MixtralDecoderLayer / Qwen2MoeDecoderLayer with the sparse MoE
 * block, SmolLM3DecoderLayer with its NoPE layers, GraniteDecoderLayer with
 * residual_multiplier, Olmo2DecoderLayer with its norms after attention and
 * MLP and none before) inside the Sequential w->arr. */
static void decoder_layer(wr *w, const arch *a, int64_t i)
{
    bool fused = a->f->attn == ATTN_FUSED, post = a->f->place == PLACE_SUBLAYER;
    /* Glm4DecoderLayer (models/glm4/modeling_glm4.py @ 00d01786): Gemma2's four norms at the same places, its names */
    bool glm = a->f->place == PLACE_SANDWICH_GLM4, g2 = a->f->place == PLACE_SANDWICH || glm;
    int64_t q = a->NH * a->D, kv = a->KV * a->D;
    const char *rope = vc__hf_layer_rope(a, i) ? "model.rotary_emb" : NULL;
    if (rope && a->f->local_rope && vc__hf_layer_window(a, i) > 0) rope = "model.rotary_emb_local"; /* Gemma3: rope_local_base_freq */
    const char *in = post ? "input" : "input_layernorm"; /* what the projections read */
    /* LlamaDecoderLayer.forward: hidden_states = self.input_layernorm(hidden_states), then
     * self.self_attn(hidden_states=hidden_states, ...): the normed tensor is the attention's
     * argument and the layer's local until the attention returns, its output projection (o_proj,
     * linear_attn's out_proj) the last layer of it here */
    cJSON *ln = post ? NULL : decoder_norm(w, a, "input_layernorm", NULL);
    /* CohereDecoderLayer.forward (modeling_cohere.py @ 0233e509531ace915c8241b4c16c8032a583279c; Cohere2DecoderLayer
     * alike): hidden_states = self.input_layernorm(hidden_states) feeds self_attn and then self.mlp, a local until
     * it is rebound to residual + hidden_states_attention + hidden_states_mlp */
    if (ln) str(w, ln, "held_until", a->parallel ? "residual" : vc__hf_layer_linear(a, i) ? "linear_attn.out_proj" : "self_attn.o_proj");
    if (vc__hf_layer_linear(a, i)) {
        linear_attn(w, a, in);
    } else if (a->f->attn == ATTN_MLA) {
        mla_attention(w, a, i);
        q = a->NH * a->v_head; /* o_proj: heads x v_head_dim -> hidden */
    } else if (fused) {
        linear(w, "self_attn.qkv_proj", NULL, a->H, q + 2 * kv, false);
        attn_core(w, a, "self_attn.attention", true, "self_attn.qkv_proj", NULL, NULL, rope, true,
                  vc__hf_layer_window(a, i));
    } else {
        /* Qwen3NextAttention: q_proj gives num_heads x head_dim x 2 (the query and its gate) */
        linear(w, "self_attn.q_proj", NULL, a->H, a->f->hybrid ? 2 * q : q, a->qkv_bias);
        linear(w, "self_attn.k_proj", in, a->H, kv, a->qkv_bias);
        linear(w, "self_attn.v_proj", in, a->H, kv, a->qkv_bias);
        attn_core(w, a, "self_attn.attention", false, "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", rope,
                  true, vc__hf_layer_window(a, i));
        if (a->f->moe == MOE_LLAMA4) llama4_attn(w, a, i);
        if (a->f->l4_scale) /* Ministral3Attention (modular_ministral3.py @ 00b364c7): q scaled after the rotation */
            flag(w, cJSON_GetArrayItem(w->arr, cJSON_GetArraySize(w->arr) - 1), "llama4_attn_scale", true);
    }
    if (!vc__hf_layer_linear(a, i)) linear(w, "self_attn.o_proj", NULL, q, a->H, a->o_bias);
    if (a->parallel) { /* the parallel block: the MLP on the same normed input, residual + attn + mlp */
        linear(w, "mlp.gate_proj", "input_layernorm", a->H, a->I, a->mlp_bias);
        act_layer(w, a, "mlp.act_fn");
        linear(w, "mlp.up_proj", "input_layernorm", a->H, a->I, a->mlp_bias);
        ins(w, add_layer(w, "Mul", "mlp.mul"), "mlp.act_fn", "mlp.up_proj", NULL, NULL);
        linear(w, "mlp.down_proj", NULL, a->I, a->H, a->mlp_bias);
        ins(w, add_layer(w, "Add", "residual"), "input", "self_attn.o_proj", "mlp.down_proj", NULL);
        return;
    }
    if (g2 || post) rmsnorm(w, a, glm ? "post_self_attn_layernorm" : "post_attention_layernorm", NULL);
    dropout(w, "resid_attn_dropout", a->p_resid);
    residual_add(w, a, "attn_residual", "input", "attn_residual_multiplier");
    const char *norm = glm ? "post_attention_layernorm" : g2 ? "pre_feedforward_layernorm" : post ? "attn_residual"
                                                                                            : "post_attention_layernorm";
    /* the MLP's argument (LlamaMLP.forward's x, the decoder layer's hidden_states) until it
     * returns: down_proj, after up_proj, its last reader (a MoE block is one layer here) */
    const bool l4 = a->f->moe == MOE_LLAMA4; /* Llama4TextDecoderLayer.feed_forward */
    cJSON *mn = post ? NULL : decoder_norm(w, a, norm, NULL);
    if (mn && !layer_is_moe(a, i))
        str(w, mn, "held_until", l4 ? "feed_forward.down_proj" : a->f->mlp == MLP_PLAIN && !a->f->up_down ? "mlp.c_proj" : "mlp.down_proj");
    if (layer_is_moe(a, i) && l4) {
        /* Llama4TextMoe: router (Llama4Router), experts (Llama4TextExperts: stacked, torch.bmm over every
         * expert), shared_expert (Llama4TextMLP of intermediate_size) */
        cJSON *o = sparse_moe(w, a, "feed_forward", "llama4");
        num(w, o, "shared_expert_intermediate_size", (double)a->moe_I);
        if (a->act <= A_RELU) str(w, o, "activation", act_json[a->act]);
    } else if (layer_is_moe(a, i) && a->f->moe == MOE_GPT_OSS) {
        /* GptOssMLP: GptOssTopKRouter (weight, bias), GptOssExperts (stacked, biased) */
        cJSON *o = sparse_moe(w, a, "mlp", "gpt_oss");
        if (a->imbalance > 1.0) num(w, o, "moe_imbalance", a->imbalance);
        str(w, o, "experts_implementation", "grouped_mm");
    } else if (layer_is_moe(a, i) && a->f->moe == MOE_GRANITE) {
        /* GraniteMoeMoE: input_linear, output_linear (GraniteMoeParallelExperts), router (GraniteMoeTopKGating) */
        cJSON *o = sparse_moe(w, a, "block_sparse_moe", "granitemoe");
        if (a->act != A_SILU) str(w, o, "activation", act_json[a->act]);
        if (a->imbalance > 1.0) num(w, o, "moe_imbalance", a->imbalance);
        if (a->shared_I > 0) {
            /* GraniteMoeSharedDecoderLayer (modular_granitemoeshared.py @ a878fc03): moe_hidden_states +
             * self.shared_mlp(hidden_states), GraniteMoeSharedMLP: input_linear [2 x shared, H], chunk(2),
             * activation(chunk 0) * chunk 1, output_linear [H, shared] */
            linear(w, "shared_mlp.input_linear", norm, a->H, 2 * a->shared_I, false);
            o = add_layer(w, "GatedActivation", "shared_mlp.activation");
            flag(w, o, "fused", true);
            str(w, o, "activation", act_json[a->act]);
            linear(w, "shared_mlp.output_linear", NULL, a->shared_I, a->H, false);
            ins(w, add_layer(w, "Add", "shared_mlp.add"), "block_sparse_moe", "shared_mlp.output_linear", NULL, NULL);
        }
    } else if (layer_is_moe(a, i) && a->f->moe == MOE_PHIMOE) {
        /* PhimoeSparseMoeBlock: router (PhimoeTopKRouter, sparsemixer), experts (PhimoeExperts, stacked) */
        cJSON *o = sparse_moe(w, a, "mlp", "phimoe");
        if (a->act != A_SILU) str(w, o, "activation", act_json[a->act]);
        if (a->jitter > 0) num(w, o, "input_jitter_noise", a->jitter);
        if (a->imbalance > 1.0) num(w, o, "moe_imbalance", a->imbalance);
        str(w, o, "experts_implementation", "grouped_mm");
    } else if (layer_is_moe(a, i) && a->f->moe == MOE_ERNIE) {
        /* Ernie4_5_MoeSparseMoeBlock: gate (Ernie4_5_MoeTopKRouter, float32, moe_statics), experts
         * (Ernie4_5_MoeExperts, stacked), shared_experts (layers/llm.c moe_ernie_emit) */
        cJSON *o = sparse_moe(w, a, "mlp", "ernie4_5_moe");
        /* transformers: gate.weight and moe_statics float32 (_keep_in_fp32_modules_strict), the router off autocast;
         * vLLM's Ernie4_5_MoeMoE (ernie45_moe.py @ 0028a751): a ReplicatedLinear gate and the bias in the model's
         * dtype */
        if (!a->vllm) flag(w, o, "router_f32", true);
        if (a->shared_I) num(w, o, "shared_expert_intermediate_size", (double)a->shared_I);
        if (a->act != A_SILU) str(w, o, "activation", act_json[a->act]);
        if (a->imbalance > 1.0) num(w, o, "moe_imbalance", a->imbalance);
        str(w, o, "experts_implementation", "grouped_mm");
    } else if (layer_is_moe(a, i) && a->f->moe == MOE_HUNYUAN) {
        /* HunYuanMoEV1Moe: shared_mlp, gate (HunYuanMoEV1Gate: wg built float32), experts (HunYuanMoEV1Experts,
         * stacked) (layers/llm.c moe_grouped_emit) */
        cJSON *o = sparse_moe(w, a, "mlp", "hunyuan_v1_moe");
        if (!a->vllm) flag(w, o, "router_f32", true);
        num(w, o, "shared_expert_intermediate_size", (double)a->shared_I);
        if (a->act != A_SILU) str(w, o, "activation", act_json[a->act]);
        if (a->imbalance > 1.0) num(w, o, "moe_imbalance", a->imbalance);
        str(w, o, "experts_implementation", "grouped_mm");
    } else if (layer_is_moe(a, i) && a->f->moe == MOE_MINIMAX) {
        /* MiniMaxM2SparseMoeBlock: gate (MiniMaxM2TopKRouter), experts (MiniMaxM2Experts, stacked),
         * e_score_correction_bias (layers/llm.c moe_minimax_emit) */
        cJSON *o = sparse_moe(w, a, "mlp", "minimax_m2");
        /* vLLM's MiniMaxM2MoE (minimax_m2.py @ 01d99586): gate a ReplicatedLinear(params_dtype=torch.float32) on
         * hidden_states.to(torch.float32), e_score_correction_bias a float32 parameter */
        if (a->vllm) flag(w, o, "router_f32", true);
        if (a->act != A_SILU) str(w, o, "activation", act_json[a->act]);
        if (a->imbalance > 1.0) num(w, o, "moe_imbalance", a->imbalance);
        str(w, o, "experts_implementation", "grouped_mm");
    } else if (layer_is_moe(a, i)) {
        bool mx = a->f->moe == MOE_MIXTRAL, ds = a->f->moe == MOE_DEEPSEEK;
        cJSON *o = sparse_moe(w, a, mx ? "block_sparse_moe" : "mlp",
                              mx ? "mixtral" : a->f->ds_v2 ? "deepseek_v2" : ds ? "deepseek_v3" : "qwen2_moe");
        if (!a->f->ds_v2) flag(w, o, "norm_topk_prob", a->norm_topk); /* DeepseekV2Moe does not read it */
        if (a->f->ds_v2) { /* DeepseekV2Moe: topk_method, its groups; shared_experts of moe_intermediate_size x n_shared_experts */
            str(w, o, "topk_method", a->topk_method ? "group_limited_greedy" : "greedy");
            if (a->topk_method) {
                num(w, o, "n_group", (double)a->n_group);
                num(w, o, "topk_group", (double)a->topk_group);
            }
            num(w, o, "shared_expert_intermediate_size", (double)(a->moe_I * a->n_shared));
        } else if (ds) { /* DeepseekV3MoE: the groups; shared_experts, an MLP of moe_intermediate_size x n_shared_experts */
            num(w, o, "n_group", (double)a->n_group);
            num(w, o, "topk_group", (double)a->topk_group);
            num(w, o, "shared_expert_intermediate_size", (double)(a->moe_I * a->n_shared));
        }
        if (a->shared_I) num(w, o, "shared_expert_intermediate_size", (double)a->shared_I);
        if (a->imbalance > 1.0) num(w, o, "moe_imbalance", a->imbalance);
        str(w, o, "experts_implementation", a->experts_impl == EXPERTS_PER_EXPERT ? "per_expert" : "grouped_mm");
        if (a->liger & LIGER_SWIGLU) flag(w, o, "liger", true); /* --liger at 4.x: each expert's forward (hf.c liger_family) */
    } else if (a->f->mlp == MLP_PLAIN) {
        /* Starcoder2MLP.forward (modeling_starcoder2.py @ 73faa33f): c_fc, act, c_proj (bias=use_bias), then
         * dropout(residual_dropout): resid_mlp_dropout below */
        /* NemotronMLP.forward (modeling_nemotron.py @ 0233e509; ArceeMLP, modular_arcee.py @ 031734d9):
         * down_proj(act_fn(up_proj(x))), both with bias=mlp_bias */
        const bool ud = a->f->up_down;
        linear(w, ud ? "mlp.up_proj" : "mlp.c_fc", NULL, a->H, a->I, a->mlp_bias);
        act_layer(w, a, ud ? "mlp.act_fn" : "mlp.act");
        linear(w, ud ? "mlp.down_proj" : "mlp.c_proj", NULL, a->I, a->H, a->mlp_bias);
    } else if (a->f->mlp == MLP_GATED_FUSED) {
        linear(w, "mlp.gate_up_proj", NULL, a->H, 2 * a->I, false);
        cJSON *o = add_layer(w, "GatedActivation", "mlp.act_fn");
        flag(w, o, "fused", true);
        str(w, o, "activation", act_json[a->act]);
        linear(w, "mlp.down_proj", NULL, a->I, a->H, false);
    } else if (a->liger & (LIGER_SWIGLU | LIGER_GEGLU)) {
        /* --liger: LigerSwiGLUMLP.forward bound to the mlp (_patch_swiglu_module; Liger-Kernel
         * src/liger_kernel/transformers/swiglu.py @ ead96b61, LigerSwiGLUMLP.forward):
         * down_proj(LigerSiLUMulFunction.apply(gate_proj(x), up_proj(x))), both projections first; the gemma
         * families' LigerGEGLUMLP.forward (_patch_geglu_module, transformers/geglu.py) the same with
         * LigerGELUMulFunction (the tanh form) */
        linear(w, "mlp.gate_proj", NULL, a->H, a->I, a->mlp_bias);
        linear(w, "mlp.up_proj", norm, a->H, a->I, a->mlp_bias);
        cJSON *o = add_layer(w, "GatedActivation", "mlp.act_fn");
        ins(w, o, "mlp.gate_proj", "mlp.up_proj", NULL, NULL);
        if (a->liger & LIGER_GEGLU) str(w, o, "activation", "gelu_tanh");
        flag(w, o, "liger", true);
        linear(w, "mlp.down_proj", NULL, a->I, a->H, a->mlp_bias);
    } else {
        /* LlamaMLP.forward / Qwen2MLP.forward (modeling_llama.py,
         * modeling_qwen2.py; Mistral, Gemma, Qwen3 alike):
         * down_proj(act_fn(gate_proj(x)) * up_proj(x)) in Python's order:
         * gate_proj, act_fn (the gate is a temporary: freed here under
         * no_grad), up_proj, the product. */
        /* Llama4TextMLP(intermediate_size_mlp): feed_forward.gate_proj, ... (the same order) */
        linear(w, l4 ? "feed_forward.gate_proj" : "mlp.gate_proj", NULL, a->H, a->I, a->mlp_bias);
        act_layer(w, a, l4 ? "feed_forward.activation_fn" : "mlp.act_fn");
        linear(w, l4 ? "feed_forward.up_proj" : "mlp.up_proj", norm, a->H, a->I, a->mlp_bias);
        ins(w, add_layer(w, "Mul", l4 ? "feed_forward.mul" : "mlp.mul"), l4 ? "feed_forward.activation_fn" : "mlp.act_fn",
            l4 ? "feed_forward.up_proj" : "mlp.up_proj", NULL, NULL);
        linear(w, l4 ? "feed_forward.down_proj" : "mlp.down_proj", NULL, a->I, a->H, a->mlp_bias);
    }
    if (g2 || post) rmsnorm(w, a, glm ? "post_mlp_layernorm" : "post_feedforward_layernorm", NULL);
    dropout(w, "resid_mlp_dropout", a->p_resid);
    residual_add(w, a, "mlp_residual", "attn_residual", "mlp_residual_multiplier");
}

/* Lfm2DecoderLayer.forward (modeling_lfm2.py @ 0096ba4f): operator_norm, then Lfm2Attention (q/k/v_proj,
 * q_layernorm / k_layernorm per head, the rotary, sdpa, out_proj) or Lfm2ShortConv (in_proj, layers/shortconv.c,
 * out_proj), + residual; ffn_norm, Lfm2MLP: w2(F.silu(w1(x)) * w3(x)) in Python's order, + residual */
static void lfm2_layer(wr *w, const arch *a, int64_t i)
{
    const bool conv = vc__hf_lfm2_conv(a, i);
    const int64_t q = a->NH * a->D, kv = a->KV * a->D;
    str(w, rmsnorm(w, a, "operator_norm", NULL), "held_until", conv ? "conv.out_proj" : "self_attn.out_proj");
    if (conv) { /* under vLLM's --tp a rank's conv_dim / tp (hf_lfm2.c vc__hf_lfm2_unmodelled) */
        const int64_t cw = a->lf.tp > 1 ? a->H / a->lf.tp : a->H;
        linear(w, "conv.in_proj", NULL, a->H, 3 * cw, a->lf.bias);
        cJSON *o = add_layer(w, "ShortConv", "conv");
        num(w, o, "hidden_size", (double)cw);
        num(w, o, "L_cache", (double)a->lf.k);
        flag(w, o, "bias", a->lf.bias);
        if (a->lf.tp > 1) num(w, o, "tp", (double)a->lf.tp);
        linear(w, "conv.out_proj", NULL, cw, a->H, a->lf.bias);
    } else {
        linear(w, "self_attn.q_proj", NULL, a->H, q, false);
        linear(w, "self_attn.k_proj", "operator_norm", a->H, kv, false);
        linear(w, "self_attn.v_proj", "operator_norm", a->H, kv, false);
        attn_core(w, a, "self_attn.attention", false, "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                  "model.pos_emb", true, 0);
        linear(w, "self_attn.out_proj", NULL, q, a->H, false);
    }
    residual_add(w, a, "operator_residual", "input", NULL);
    if (layer_is_moe(a, i)) {
        /* lfm2_moe (modular_lfm2_moe.py @ 0c67e26d): Lfm2MoeSparseMoeBlock (layers/llm.c moe_lfm2_emit) */
        rmsnorm(w, a, "ffn_norm", NULL);
        cJSON *o = add_layer(w, "SparseMoE", "feed_forward");
        num(w, o, "hidden_size", (double)a->H);
        num(w, o, "intermediate_size", (double)a->moe_I);
        num(w, o, "num_experts", (double)a->E);
        num(w, o, "top_k", (double)a->K);
        str(w, o, "style", "lfm2_moe");
        flag(w, o, "norm_topk_prob", a->norm_topk);
        if (!a->lf.ebias) flag(w, o, "expert_bias", false);
        if (a->imbalance > 1.0) num(w, o, "moe_imbalance", a->imbalance);
        str(w, o, "experts_implementation", "grouped_mm");
        residual_add(w, a, "ffn_residual", "operator_residual", NULL);
        return;
    }
    str(w, rmsnorm(w, a, "ffn_norm", NULL), "held_until", "feed_forward.w2");
    linear(w, "feed_forward.w1", NULL, a->H, a->I, false);
    act_layer(w, a, "feed_forward.act");
    linear(w, "feed_forward.w3", "ffn_norm", a->H, a->I, false);
    ins(w, add_layer(w, "Mul", "feed_forward.mul"), "feed_forward.act", "feed_forward.w3", NULL, NULL);
    linear(w, "feed_forward.w2", NULL, a->I, a->H, false);
    residual_add(w, a, "ffn_residual", "operator_residual", NULL);
}

/* GPT2Block.forward (GPTBigCodeBlock.forward alike, with nn.Linear and one
 * kv head under multi_query): ln_1, attn (c_attn split into q, k, v; sdpa with
 * attn_pdrop; c_proj; resid_dropout), + residual, ln_2, mlp (c_fc, act,
 * c_proj, dropout), + residual. GPT-2's Conv1D keeps its weight as
 * [in, out] and computes addmm(bias, x, weight): the same tensors as a
 * Linear (the weight's shape is transposed, its size the same). */
static void gpt2_block(wr *w, const arch *a)
{
    layernorm(w, a, "ln_1", NULL);
    int64_t q = a->NH * a->D, kv = a->KV * a->D; /* H, or its 1/t on a tensor-parallel rank */
    /* GPT2Attention: c_attn [H, 3H]; GPTBigCodeAttention: [H, H + 2 kv_dim], kv_dim one head's with multi_query */
    linear(w, "attn.c_attn", NULL, a->H, q + 2 * kv, true);
    attn_core(w, a, "attn.attention", true, "attn.c_attn", NULL, NULL, NULL, true, 0);
    linear(w, "attn.c_proj", NULL, q, a->H, true);
    dropout(w, "attn.resid_dropout", a->p_resid);
    const char *prev = w->last;
    ins(w, add_layer(w, "Add", "attn_residual"), prev, "input", NULL, NULL);
    layernorm(w, a, "ln_2", NULL);
    linear(w, "mlp.c_fc", NULL, a->H, a->I, true);
    act_layer(w, a, "mlp.act");
    linear(w, "mlp.c_proj", NULL, a->I, a->H, true);
    dropout(w, "mlp.dropout", a->p_resid);
    prev = w->last;
    ins(w, add_layer(w, "Add", "mlp_residual"), "attn_residual", prev, NULL, NULL);
}

/* GPTNeoXLayer.forward: attention on input_layernorm(x) (one fused
 * query_key_value projection, partial rotary), post_attention_dropout;
 * parallel residual: mlp(post_attention_layernorm(x)) + attn + x, else
 * sequential. */
static void neox_layer(wr *w, const arch *a)
{
    layernorm(w, a, "input_layernorm", NULL);
    int64_t q = a->NH * a->D; /* H, or its 1/t on a tensor-parallel rank */
    linear(w, "attention.query_key_value", NULL, a->H, 3 * q, a->qkv_bias);
    attn_core(w, a, "attention.attention", true, "attention.query_key_value", NULL, NULL, "gpt_neox.rotary_emb", true, 0);
    linear(w, "attention.dense", NULL, q, a->H, a->o_bias);
    dropout(w, "post_attention_dropout", a->p_resid);
    const char *attn = w->last;
    if (!a->parallel) ins(w, add_layer(w, "Add", "attn_residual"), attn, "input", NULL, NULL);
    layernorm(w, a, "post_attention_layernorm", a->parallel ? "input" : "attn_residual");
    linear(w, "mlp.dense_h_to_4h", NULL, a->H, a->I, a->mlp_bias);
    act_layer(w, a, "mlp.act");
    linear(w, "mlp.dense_4h_to_h", NULL, a->I, a->H, a->mlp_bias);
    dropout(w, "post_mlp_dropout", a->p_resid);
    const char *mlp = w->last;
    cJSON *o = add_layer(w, "Add", "residual");
    if (a->parallel) ins(w, o, mlp, attn, "input", NULL); /* mlp_output + attn_output + hidden_states */
    else ins(w, o, mlp, "attn_residual", NULL, NULL);
}

/* OPTDecoderLayer.forward (modeling_opt.py): do_layer_norm_before (the
 * default): residual + dropout(self_attn(self_attn_layer_norm(x))), then
 * residual + dropout(fc2(act(fc1(final_layer_norm(h))))); without it the
 * two LayerNorms follow the residual adds. OPTAttention: q/k/v/out_proj
 * with enable_bias, no rotary. */
static void opt_layer(wr *w, const arch *a)
{
    bool pre = a->norm_before;
    int64_t q = a->NH * a->D, kv = a->KV * a->D; /* H, or its 1/t on a tensor-parallel rank */
    const char *in = pre ? "self_attn_layer_norm" : "input";
    if (pre) layernorm(w, a, "self_attn_layer_norm", NULL);
    linear(w, "self_attn.q_proj", NULL, a->H, q, a->qkv_bias);
    linear(w, "self_attn.k_proj", in, a->H, kv, a->qkv_bias);
    linear(w, "self_attn.v_proj", in, a->H, kv, a->qkv_bias);
    attn_core(w, a, "self_attn.attention", false, "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", NULL, true, 0);
    linear(w, "self_attn.out_proj", NULL, q, a->H, a->o_bias);
    dropout(w, "attn_dropout", a->p_resid);
    const char *prev = w->last;
    ins(w, add_layer(w, "Add", "attn_residual"), "input", prev, NULL, NULL);
    if (!pre) layernorm(w, a, "self_attn_layer_norm", NULL);
    const char *res = w->last;
    if (pre) layernorm(w, a, "final_layer_norm", NULL);
    linear(w, "fc1", NULL, a->H, a->I, a->mlp_bias);
    act_layer(w, a, "activation_fn");
    linear(w, "fc2", NULL, a->I, a->H, a->mlp_bias);
    dropout(w, "fc_dropout", a->p_resid);
    prev = w->last;
    ins(w, add_layer(w, "Add", "mlp_residual"), res, prev, NULL, NULL);
    if (!pre) layernorm(w, a, "final_layer_norm", NULL);
}

/* PhiDecoderLayer.forward (modeling_phi.py): one input_layernorm feeds both
 * PhiAttention (q/k/v_proj and dense with biases, partial rotary) and PhiMLP
 * (fc1, act, fc2); resid_dropout on each; attn_outputs + feed_forward +
 * residual. */
static void phi_layer(wr *w, const arch *a)
{
    int64_t q = a->NH * a->D, kv = a->KV * a->D; /* H, or its 1/t on a tensor-parallel rank */
    layernorm(w, a, "input_layernorm", NULL);
    linear(w, "self_attn.q_proj", NULL, a->H, q, a->qkv_bias);
    linear(w, "self_attn.k_proj", "input_layernorm", a->H, kv, a->qkv_bias);
    linear(w, "self_attn.v_proj", "input_layernorm", a->H, kv, a->qkv_bias);
    attn_core(w, a, "self_attn.attention", false, "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
              "model.rotary_emb", true, 0);
    linear(w, "self_attn.dense", NULL, q, a->H, a->o_bias);
    dropout(w, "resid_dropout_attn", a->p_resid);
    const char *attn = w->last;
    linear(w, "mlp.fc1", "input_layernorm", a->H, a->I, a->mlp_bias);
    act_layer(w, a, "mlp.activation_fn");
    linear(w, "mlp.fc2", NULL, a->I, a->H, a->mlp_bias);
    dropout(w, "resid_dropout_mlp", a->p_resid);
    const char *mlp = w->last;
    ins(w, add_layer(w, "Add", "residual"), attn, mlp, "input", NULL);
}

/* FalconDecoderLayer.forward (modeling_falcon.py @00dcc6dd): ln_attn and ln_mlp on the input
 * (new_decoder_architecture with num_ln_in_parallel_attn 2), else input_layernorm; FalconAttention
 * (query_key_value, the core in layers/llm.c's falcon_emit, dense); parallel_attn or
 * new_decoder_architecture: the MLP on the attention's normed input (or ln_mlp's),
 * mlp_output += attention_output (in place), dropout_add(mlp_output, residual, hidden_dropout);
 * otherwise residual = dropout_add(attention_output, residual, attention_dropout),
 * post_attention_layernorm, the MLP, dropout_add. FalconLinear without bias is input @ weight.T:
 * a Linear's tensors. */
static void falcon_layer(wr *w, const arch *a)
{
    int64_t q = a->NH * a->D, kv = a->KV * a->D; /* H, or its 1/t on a tensor-parallel rank */
    bool two = a->new_arch && a->num_ln == 2, par = a->parallel || a->new_arch;
    const char *ln = two ? "ln_attn" : "input_layernorm";
    layernorm(w, a, ln, NULL);
    if (two) layernorm(w, a, "ln_mlp", "input");
    linear(w, "self_attention.query_key_value", ln, a->H, q + 2 * kv, false);
    cJSON *o = add_layer(w, "RotaryAttention", "self_attention.attention");
    ins(w, o, "self_attention.query_key_value", "transformer.rotary_emb", NULL, NULL);
    num(w, o, "num_heads", (double)a->NH);
    num(w, o, "num_kv_heads", (double)a->KV);
    num(w, o, "head_dim", (double)a->D);
    flag(w, o, "fused_qkv", true);
    flag(w, o, "falcon", true);
    if (a->new_arch) flag(w, o, "kv_expand", true);
    linear(w, "self_attention.dense", NULL, q, a->H, false);
    const char *attn = w->last, *res = "input";
    if (!par) {
        dropout(w, "attention_dropout", a->p_attn);
        const char *prev = w->last;
        ins(w, add_layer(w, "Add", "attn_residual"), "input", prev, NULL, NULL);
        layernorm(w, a, "post_attention_layernorm", NULL);
        res = "attn_residual";
    }
    linear(w, "mlp.dense_h_to_4h", par ? (two ? "ln_mlp" : ln) : NULL, a->H, a->I, false);
    act_layer(w, a, "mlp.act");
    linear(w, "mlp.dense_4h_to_h", NULL, a->I, a->H, false);
    if (par) {
        o = add_layer(w, "Add", "mlp_output"); /* mlp_output += attention_output */
        ins(w, o, "mlp.dense_4h_to_h", attn, NULL, NULL);
        flag(w, o, "inplace", true);
    }
    dropout(w, "hidden_dropout", a->p_resid);
    const char *prev = w->last;
    ins(w, add_layer(w, "Add", "residual"), res, prev, NULL, NULL);
}

/* BertLayer.forward: BertSdpaSelfAttention (bidirectional, dropout on the
 * probabilities), BertSelfOutput (dense, dropout, LayerNorm(x + input)),
 * BertIntermediate (dense, gelu), BertOutput (dense, dropout, LayerNorm). */
static void bert_layer(wr *w, const arch *a)
{
    int64_t q = a->NH * a->D; /* H, or its 1/t on a tensor-parallel rank */
    linear(w, "attention.self.query", NULL, a->H, q, true);
    linear(w, "attention.self.key", "input", a->H, q, true);
    linear(w, "attention.self.value", "input", a->H, q, true);
    attn_core(w, a, "attention.self.attention", false, "attention.self.query", "attention.self.key", "attention.self.value",
              NULL, false, 0);
    linear(w, "attention.output.dense", NULL, q, a->H, true);
    dropout(w, "attention.output.dropout", a->p_resid);
    const char *prev = w->last;
    ins(w, add_layer(w, "Add", "attention.output.residual"), prev, "input", NULL, NULL);
    layernorm(w, a, "attention.output.LayerNorm", NULL);
    linear(w, "intermediate.dense", NULL, a->H, a->I, true);
    act_layer(w, a, "intermediate.intermediate_act_fn");
    linear(w, "output.dense", NULL, a->I, a->H, true);
    dropout(w, "output.dropout", a->p_resid);
    prev = w->last;
    ins(w, add_layer(w, "Add", "output.residual"), prev, "attention.output.LayerNorm", NULL, NULL);
    layernorm(w, a, "output.LayerNorm", NULL);
}

/* "shape": [d0, d1], a per-sample shape (Reshape, Parameter) */
static void shape2(wr *w, cJSON *o, int64_t d0, int64_t d1)
{
    if (!o) return;
    const int64_t d[2] = {d0, d1};
    cJSON *sh = cJSON_CreateArray();
    bool ok = sh && cJSON_AddItemToObject(o, "shape", sh);
    if (!ok) cJSON_Delete(sh);
    for (int i = 0; ok && i < 2; i++) {
        cJSON *x = cJSON_CreateNumber((double)d[i]);
        ok = x && cJSON_AddItemToArray(sh, x);
        if (!ok) cJSON_Delete(x);
    }
    if (!ok) w->r->oom = true;
}

/* ViTAttention (modeling_vit.py @ 005db820; Dinov2Attention is ViT's): the normed input's layer norm, then
 * ViTSelfAttention's key, value, query (in that order, qkv_bias) on it, the sdpa interface (no mask, not causal,
 * dropout attention_probs_dropout_prob in training), ViTSelfOutput's dense and dropout. Returns the norm. */
static cJSON *vit_attention(wr *w, const arch *a, const char *norm)
{
    const int64_t q = a->NH * a->D;
    cJSON *ln = layernorm(w, a, norm, NULL);
    linear(w, "attention.attention.key", norm, a->H, q, a->qkv_bias);
    linear(w, "attention.attention.value", norm, a->H, q, a->qkv_bias);
    linear(w, "attention.attention.query", norm, a->H, q, a->qkv_bias);
    attn_core(w, a, "attention.attention.attention", false, "attention.attention.query", "attention.attention.key",
              "attention.attention.value", NULL, false, 0);
    linear(w, "attention.output.dense", NULL, q, a->H, true);
    dropout(w, "attention.output.dropout", a->p_resid);
    return ln;
}

/* ViTLayer.forward (modeling_vit.py @ 005db820): self.attention(self.layernorm_before(hidden_states)) -- the
 * norm's output the argument of ViTAttention.forward until it returns; ViTSelfAttention: key, value, query (in
 * that order, qkv_bias), transpose_for_scores (view + permute), the sdpa interface (transformers' default:
 * no mask, not causal, dropout attention_probs_dropout_prob in training), view; ViTSelfOutput dense, dropout;
 * hidden_states = attention_output + hidden_states; layernorm_after (its output the argument of
 * ViTIntermediate.forward: dense, ACT2FN[hidden_act]); ViTOutput: dense, dropout, + the residual. */
static void vit_layer(wr *w, const arch *a)
{
    cJSON *ln = vit_attention(w, a, "layernorm_before");
    const char *prev = w->last;
    str(w, ln, "held_until", prev); /* ViTAttention.forward's hidden_states */
    ins(w, add_layer(w, "Add", "attention_residual"), prev, "input", NULL, NULL);
    ln = layernorm(w, a, "layernorm_after", NULL);
    linear(w, "intermediate.dense", NULL, a->H, a->I, true);
    act_layer(w, a, "intermediate.intermediate_act_fn");
    str(w, ln, "held_until", "intermediate.intermediate_act_fn"); /* ViTIntermediate.forward's argument */
    linear(w, "output.dense", NULL, a->I, a->H, true);
    dropout(w, "output.dropout", a->p_resid);
    prev = w->last;
    ins(w, add_layer(w, "Add", "output.residual"), prev, "attention_residual", NULL, NULL);
}

/* Dinov2Layer's self.drop_path on the last layer's output (one module, called on both branches): nn.Identity at
 * drop_path_rate 0.0 (the output's own name returned), else Dinov2DropPath (modeling_dinov2.py @
 * 015e68769f9823df27f5f7372dc155277e6ff7e6 drop_path: keep_prob + torch.rand([batch, 1, 1]), floor_,
 * input.div(keep_prob) * random_tensor in training, the input itself in eval): StochasticDepth "row" with
 * scale_input (layers/dropout.c), every layer at the same rate. */
static const char *drop_path(wr *w, const arch *a, const char *name)
{
    if (!(a->vit.drop_path > 0)) return w->last;
    cJSON *o = add_layer(w, "StochasticDepth", name);
    num(w, o, "p", a->vit.drop_path);
    str(w, o, "mode", "row");
    flag(w, o, "scale_input", true);
    return name;
}

/* Dinov2Layer.forward (modeling_dinov2.py @ 015e6876): hidden_states_norm = norm1(hidden_states), a local alive
 * until the layer returns; Dinov2Attention (ViT's: key, value, query, sdpa, dense, dropout); layer_scale1
 * (Dinov2LayerScale: hidden_state * lambda1, a [hidden_size] parameter; the product saves both), bound to
 * self_attention_output until the layer returns; drop_path (above: nn.Identity at drop_path_rate 0.0, else
 * Dinov2DropPath);
 * + hidden_states; norm2, its output the argument of the MLP until it
 * returns: Dinov2MLP (fc1, ACT2FN[hidden_act], fc2; no dropout) or Dinov2SwiGLUFFN (weights_in [2 x hidden],
 * chunk(2): views, silu(x1) * x2, weights_out); layer_scale2; + the first residual. */
static void dinov2_layer(wr *w, const arch *a)
{
    cJSON *n1 = vit_attention(w, a, "norm1");
    const char *prev = w->last;
    shape2(w, add_layer(w, "Parameter", "layer_scale1.lambda1"), 1, a->H);
    cJSON *ls1 = add_layer(w, "Mul", "layer_scale1");
    ins(w, ls1, prev, "layer_scale1.lambda1", NULL, NULL);
    const char *dp = drop_path(w, a, "drop_path.attention"); /* before add_layer: it reads w->last */
    ins(w, add_layer(w, "Add", "attention_residual"), dp, "input", NULL, NULL);
    cJSON *n2 = layernorm(w, a, "norm2", NULL);
    if (a->vit.swiglu) {
        linear(w, "mlp.weights_in", NULL, a->H, 2 * a->I, true);
        cJSON *o = add_layer(w, "GatedActivation", "mlp.silu");
        flag(w, o, "fused", true);
        str(w, o, "activation", "silu");
        linear(w, "mlp.weights_out", NULL, a->I, a->H, true);
    } else {
        linear(w, "mlp.fc1", NULL, a->H, a->I, true);
        act_layer(w, a, "mlp.activation");
        linear(w, "mlp.fc2", NULL, a->I, a->H, true);
    }
    str(w, n2, "held_until", w->last); /* the MLP's argument */
    prev = w->last;
    shape2(w, add_layer(w, "Parameter", "layer_scale2.lambda1"), 1, a->H);
    ins(w, add_layer(w, "Mul", "layer_scale2"), prev, "layer_scale2.lambda1", NULL, NULL);
    dp = drop_path(w, a, "drop_path.mlp");
    ins(w, add_layer(w, "Add", "output.residual"), dp, "attention_residual", NULL, NULL);
    str(w, n1, "held_until", "output.residual"); /* hidden_states_norm */
    str(w, ls1, "held_until", "output.residual"); /* self_attention_output, never rebound after layer_scale1 */
}

/* SiglipEncoderLayer.forward (modeling_siglip.py @ efa7189c): residual = hidden_states; layer_norm1, its output the
 * argument of self_attn until it returns; SiglipAttention: q_proj, k_proj, v_proj (in that order, with biases), view +
 * transpose, the sdpa interface (no mask, not causal, dropout attention_dropout in training), reshape, contiguous,
 * out_proj; + residual; layer_norm2, its output SiglipMLP's argument until it returns (fc1, ACT2FN[hidden_act], fc2);
 * + residual. CLIPEncoderLayer.forward (modeling_clip.py @ 000f1ffd) is the same statements on the same modules; in
 * CLIP's text tower (BLK_CLIP) the attention is causal: CLIPTextTransformer.forward passes create_causal_mask's mask
 * (None for sdpa without a padding mask: masking_utils' sdpa_mask skips it) and is_causal=True, which
 * sdpa_attention_forward keeps when the mask is None. */
static void siglip_layer(wr *w, const arch *a)
{
    const int64_t q = a->NH * a->D;
    cJSON *ln = layernorm(w, a, "layer_norm1", NULL);
    linear(w, "self_attn.q_proj", "layer_norm1", a->H, q, true);
    linear(w, "self_attn.k_proj", "layer_norm1", a->H, q, true);
    linear(w, "self_attn.v_proj", "layer_norm1", a->H, q, true);
    attn_core(w, a, "self_attn.attention", false, "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", NULL,
              a->f->block == BLK_CLIP, 0);
    linear(w, "self_attn.out_proj", NULL, q, a->H, true);
    str(w, ln, "held_until", "self_attn.out_proj");
    ins(w, add_layer(w, "Add", "attn_residual"), "self_attn.out_proj", "input", NULL, NULL);
    ln = layernorm(w, a, "layer_norm2", NULL);
    linear(w, "mlp.fc1", NULL, a->H, a->I, true);
    act_layer(w, a, "mlp.activation_fn");
    linear(w, "mlp.fc2", NULL, a->I, a->H, true);
    str(w, ln, "held_until", "mlp.fc2");
    ins(w, add_layer(w, "Add", "mlp_residual"), "mlp.fc2", "attn_residual", NULL, NULL);
}

/* Whether decoder layer i (from 0) is checkpointed. model.gradient_checkpointing_enable(
 * gradient_checkpointing_kwargs={"use_reentrant": False}): each decoder layer's __call__
 * through torch.utils.checkpoint, non-reentrant (GradientCheckpointingLayer). With
 * ckpt_every N > 1, only every N-th: torchtune's selective layer AC
 * (torchtune/training/activations.py checkpoint_wrapper @ bd2a0fc7, ac_mode "selective",
 * ac_option N: a call counter from 1, the layer wrapped when `_count % every_x_layer == 0`,
 * so layers N-1, 2N-1, ... from 0; torch.utils.checkpoint non-reentrant, early_stop's
 * default True) and torchtitan's (torchtitan/distributed/activation_checkpoint.py
 * _apply_layer_sac @ 1f029641, selective_ac_option N: the same counter rule). */
static bool layer_ckpt(const arch *a, int64_t i) { return a->ckpt && (i + 1) % a->ckpt_every == 0; }
/* TransformerBlock.forward (modeling_distilbert.py @00b326f4): MultiHeadSelfAttention (q_lin, k_lin,
 * v_lin with biases; bidirectional softmax attention with dropout on the weights; out_lin, no dropout
 * after it), sa_layer_norm(sa_output + x), FFN.ff_chunk (lin1, activation, lin2, dropout),
 * output_layer_norm(ffn_output + sa_output). transformers 5's DistilBertSelfAttention runs the same
 * projections through the attention interface (sdpa by default), as BERT's does. */
static void distilbert_layer(wr *w, const arch *a)
{
    int64_t q = a->NH * a->D; /* H, or its 1/t on a tensor-parallel rank */
    linear(w, "attention.q_lin", NULL, a->H, q, true);
    linear(w, "attention.k_lin", "input", a->H, q, true);
    linear(w, "attention.v_lin", "input", a->H, q, true);
    attn_core(w, a, "attention.attention", false, "attention.q_lin", "attention.k_lin", "attention.v_lin", NULL, false, 0);
    linear(w, "attention.out_lin", NULL, q, a->H, true);
    const char *prev = w->last;
    ins(w, add_layer(w, "Add", "sa_residual"), prev, "input", NULL, NULL);
    layernorm(w, a, "sa_layer_norm", NULL);
    linear(w, "ffn.lin1", NULL, a->H, a->I, true);
    act_layer(w, a, "ffn.activation");
    linear(w, "ffn.lin2", NULL, a->I, a->H, true);
    dropout(w, "ffn.dropout", a->p_resid);
    prev = w->last;
    ins(w, add_layer(w, "Add", "ffn_residual"), prev, "sa_layer_norm", NULL, NULL);
    layernorm(w, a, "output_layer_norm", NULL);
}

/* Qwen3VLTextModel.forward (modeling_qwen3_vl.py @ 00709b86) with images: after decoder layer k of the
 * first len(deepstack_visual_embeds), hidden_states = self._deepstack_process(hidden_states,
 * visual_pos_masks, deepstack_visual_embeds[k]) (DeepstackAdd, layers/vision.c), while the loop's
 * layer_outputs keeps layer k's own output until layer k + 1 returns: each of layers 0 .. ndeep is a
 * Sequential of its own, named, followed by its DeepstackAdd (layer ndeep's a pass that holds layer
 * ndeep - 1's output to there). */
static void deepstack_add(wr *w, const arch *a, cJSON *seq, int64_t i, int64_t ds)
{
    char nm[64], prev[64], add[80], feat[96];
    snprintf(nm, sizeof nm, "model.layers.%lld", (long long)i);
    snprintf(prev, sizeof prev, "model.layers.%lld", (long long)(i - 1));
    snprintf(add, sizeof add, "model.layers.%lld.deepstack", (long long)i);
    str(w, seq, "name", nm);
    cJSON *o = add_layer(w, "DeepstackAdd", add);
    if (a->vis.decode) { /* a decoding step: no deepstack features (deepstack_visual_embeds None), layer_outputs is
                          * hidden_states itself */
        ins(w, o, nm, NULL, NULL, NULL);
        flag(w, o, "pass", true);
    } else if (i < ds) {
        snprintf(feat, sizeof feat, "visual.deepstack_merger_list.%lld.linear_fc2", (long long)i);
        ins(w, o, nm, feat, i > 0 ? prev : NULL, NULL);
        num(w, o, "image_tokens", (double)a->vis.embeds);
    } else {
        ins(w, o, nm, prev, NULL, NULL);
        flag(w, o, "pass", true);
    }
}

/* Decoder layers in runs of identical ones: one Sequential with `repeat`
 * per run (Gemma2 alternates sliding and global layers, Qwen2-MoE may mix
 * dense and sparse ones; every N-th layer checkpointed splits runs). */
static void layer_stack(wr *w, const arch *a, const char *name, const char *in)
{
    /* Qwen3-VL with images: the deepstack features added after the first decoder layers (deepstack_add) */
    const int64_t ds = a->f->vision == VIS_QWEN3 && a->vis.patches > 0 && !strcmp(name, "model.layers") ? a->vis.ndeep : 0;
    /* mllama with images: the MllamaCrossAttentionDecoderLayers between the runs (hf_mllama.c) */
    char mlbuf[64];
    const char *first = a->ml.images > 0 ? vc__hf_mllama_cross_write(w->r, w->arr, a, -1, in, mlbuf, sizeof mlbuf) : in;
    for (int64_t i = 0; i < a->N && !w->r->oom;) {
        int64_t j = i + 1;
        while (j < a->N && !vc__hf_mllama_cross_before(a, j) && (ds == 0 || i > ds) && layer_is_moe(a, j) == layer_is_moe(a, i) && a->f->window != WIN_ALTERNATE &&
               vc__hf_layer_window(a, j) == vc__hf_layer_window(a, i) && vc__hf_layer_rope(a, j) == vc__hf_layer_rope(a, i) &&
               layer_ckpt(a, j) == layer_ckpt(a, i) && vc__hf_layer_linear(a, j) == vc__hf_layer_linear(a, i) &&
               (a->f->moe != MOE_LLAMA4 || vc__hf_llama4_chunk(a, j) == vc__hf_llama4_chunk(a, i)) &&
               (a->f->block != BLK_LFM2 || vc__hf_lfm2_conv(a, j) == vc__hf_lfm2_conv(a, i)) &&
               (!a->f->dsa_glm || vc__hf_glm_shared(w->r->cfg, j) == vc__hf_glm_shared(w->r->cfg, i)))
            j++;
        cJSON *seq = add_layer(w, "Sequential", NULL);
        if (!seq) return;
        if (i == 0) ins(w, seq, first, NULL, NULL, NULL);
        if (j - i > 1) num(w, seq, "repeat", (double)(j - i));
        /* the model's forward loops over its ModuleList (`hidden_states = decoder_layer(hidden_states)`):
         * a run after the first is a loop, its input dead once its first layer returns; the first
         * run's input stays alive as the forward's own local (LlamaModel.forward's inputs_embeds,
         * BertModel.forward's embedding_output) */
        if (i > 0 && j - i > 1) flag(w, seq, "loop", true);
        /* PaliGemma: GemmaModel.forward's scaled hidden_states rebinds in the loop; the forward's local is the merged
         * inputs_embeds, kept by the Cat, or without an image the embedding's output (keep_forward, build_layers) */
        if (i == 0 && j - i > 1 && a->f->vision == VIS_PALIGEMMA && !strcmp(name, "model.layers"))
            flag(w, seq, "loop", true);
        if (i > 0 && j == a->N && in) str(w, seq, "keep", in); /* that local: alive to the loop's end */
        if (layer_ckpt(a, i)) flag(w, seq, "checkpoint", true);
        cJSON *arr = cJSON_AddArrayToObject(seq, "layers");
        if (!arr) {
            w->r->oom = true;
            return;
        }
        wr inner = {w->r, arr, NULL};
        switch (a->f->block) {
        case BLK_GPT2: gpt2_block(&inner, a); break;
        case BLK_NEOX: neox_layer(&inner, a); break;
        case BLK_BERT: bert_layer(&inner, a); break;
        case BLK_OPT: opt_layer(&inner, a); break;
        case BLK_PHI: phi_layer(&inner, a); break;
        case BLK_DISTILBERT: distilbert_layer(&inner, a); break;
        case BLK_FALCON: falcon_layer(&inner, a); break;
        case BLK_VIT: vit_layer(&inner, a); break;
        case BLK_DINOV2: dinov2_layer(&inner, a); break;
        case BLK_SIGLIP_VISION:
        case BLK_SIGLIP:
        case BLK_CLIP_VISION:
        case BLK_CLIP: siglip_layer(&inner, a); break;
        case BLK_LFM2: lfm2_layer(&inner, a, i); break;
        default: decoder_layer(&inner, a, i); break;
        }
        if (ds > 0 && i <= ds) deepstack_add(w, a, seq, i, ds);
        if (a->ml.images > 0) vc__hf_mllama_cross_write(w->r, w->arr, a, j - 1, NULL, mlbuf, sizeof mlbuf);
        i = j;
    }
    /* name the stack's output for what follows */
    cJSON *last = cJSON_GetArrayItem(w->arr, cJSON_GetArraySize(w->arr) - 1);
    if (last) cJSON_DeleteItemFromObjectCaseSensitive(last, "name"); /* a deepstack layer's own name */
    if (last && !cJSON_AddStringToObject(last, "name", name)) w->r->oom = true;
    w->last = name;
}

/* The lm head (tied as tie_word_embeddings says) and final softcapping. */
static void lm_head(wr *w, const arch *a, const char *emb, const char *name)
{
    cJSON *o = linear(w, name, NULL, a->proj ? a->proj : a->H, a->V, a->f->lm_bias || a->lm_bias);
    if (a->tie) str(w, o, "tie", emb);
    if (a->f->mup) { /* GraniteForCausalLM: logits / config.logits_scaling */
        cJSON *s = add_layer(w, "Scale", "logits_scaling");
        num(w, s, "factor", 1.0 / a->logits_scale);
    }
    if (a->f->logit_mul) { /* CohereForCausalLM / Cohere2ForCausalLM: logits = logits * self.logit_scale */
        cJSON *s = add_layer(w, "Scale", "logit_scale");
        num(w, s, "factor", a->logits_scale);
    }
    if (a->final_cap > 0) { /* Gemma2ForCausalLM: logits / cap; tanh; * cap */
        cJSON *s = add_layer(w, "Scale", "final_logit_softcapping.div");
        num(w, s, "factor", 1.0 / a->final_cap);
        add_layer(w, "Tanh", "final_logit_softcapping.tanh");
        s = add_layer(w, "Scale", "final_logit_softcapping.mul");
        num(w, s, "factor", a->final_cap);
    }
}

/* BertForSequenceClassification / RobertaForSequenceClassification:
 * BertEmbeddings (word + token type, += positions, LayerNorm, dropout), the
 * encoder, then the head. */
static void build_encoder(wr *w, const arch *a)
{
    cJSON *o;
    const char *pre = a->f->prefix;
    char we[64], pe[64], te[64], ln[64], enc[64];
    snprintf(we, sizeof we, "%s.embeddings.word_embeddings", pre);
    snprintf(pe, sizeof pe, "%s.embeddings.position_embeddings", pre);
    snprintf(te, sizeof te, "%s.embeddings.token_type_embeddings", pre);
    snprintf(ln, sizeof ln, "%s.embeddings.LayerNorm", pre);
    snprintf(enc, sizeof enc, "%s.encoder.layer", pre);
    o = add_layer(w, "Embedding", we);
    num(w, o, "num_embeddings", (double)a->V);
    num(w, o, "embedding_dim", (double)a->H);
    o = add_layer(w, "PositionEmbedding", te); /* buffered_token_type_ids.expand(B, L) */
    ins(w, o, "input", NULL, NULL, NULL);
    num(w, o, "num_embeddings", (double)a->types);
    num(w, o, "embedding_dim", (double)a->H);
    flag(w, o, "per_sample", true);
    o = add_layer(w, "PositionEmbedding", pe);
    ins(w, o, "input", NULL, NULL, NULL);
    num(w, o, "num_embeddings", (double)a->maxpos);
    num(w, o, "embedding_dim", (double)a->H);
    if (a->f->pos == POS_LEARNED_PAD) flag(w, o, "per_sample", true); /* create_position_ids_from_input_ids: [B, L] */
    ins(w, add_layer(w, "Add", "embeddings.sum"), we, te, NULL, NULL); /* inputs_embeds + token_type_embeddings */
    o = add_layer(w, "Add", "embeddings.add_positions");                 /* embeddings += position_embeddings */
    ins(w, o, "embeddings.sum", pe, NULL, NULL);
    flag(w, o, "inplace", true);
    layernorm(w, a, ln, NULL);
    dropout(w, "embeddings.dropout", a->p_resid);
    layer_stack(w, a, enc, w->last);
    o = add_layer(w, "Select", "first_token"); /* hidden_states[:, 0] */
    num(w, o, "dim", 1);
    num(w, o, "index", 0);
    if (a->f->head == HEAD_POOLER_CLS) { /* BertPooler, then BertForSequenceClassification's dropout + classifier */
        linear(w, "bert.pooler.dense", NULL, a->H, a->H, true);
        add_layer(w, "Tanh", "bert.pooler.activation");
        dropout(w, "dropout", a->p_cls);
        linear(w, "classifier", NULL, a->H, a->labels, true);
    } else { /* RobertaClassificationHead (no pooler) */
        dropout(w, "classifier.dropout1", a->p_cls);
        linear(w, "classifier.dense", NULL, a->H, a->H, true);
        add_layer(w, "Tanh", "classifier.tanh");
        dropout(w, "classifier.dropout2", a->p_cls);
        linear(w, "classifier.out_proj", NULL, a->H, a->labels, true);
    }
}

/* DistilBertForSequenceClassification (modeling_distilbert.py @00b326f4): Embeddings.forward
 * (word_embeddings(input_ids) + position_embeddings(position_ids[:, :L]) -- the positions a [1, L]
 * slice of the buffer, broadcast in the add --, LayerNorm, dropout), the Transformer's blocks, then
 * hidden_state[:, 0], pre_classifier, nn.ReLU(), dropout(seq_classif_dropout), classifier. */
static void build_distilbert(wr *w, const arch *a)
{
    cJSON *o = add_layer(w, "Embedding", "distilbert.embeddings.word_embeddings");
    num(w, o, "num_embeddings", (double)a->V);
    num(w, o, "embedding_dim", (double)a->H);
    o = add_layer(w, "PositionEmbedding", "distilbert.embeddings.position_embeddings");
    ins(w, o, "input", NULL, NULL, NULL);
    num(w, o, "num_embeddings", (double)a->maxpos);
    num(w, o, "embedding_dim", (double)a->H);
    ins(w, add_layer(w, "Add", "distilbert.embeddings.sum"), "distilbert.embeddings.word_embeddings",
        "distilbert.embeddings.position_embeddings", NULL, NULL);
    layernorm(w, a, "distilbert.embeddings.LayerNorm", NULL);
    dropout(w, "distilbert.embeddings.dropout", a->p_resid);
    layer_stack(w, a, "distilbert.transformer.layer", w->last);
    o = add_layer(w, "Select", "first_token"); /* hidden_state[:, 0] */
    num(w, o, "dim", 1);
    num(w, o, "index", 0);
    linear(w, "pre_classifier", NULL, a->H, a->H, true);
    add_layer(w, "ReLU", "relu");
    dropout(w, "dropout", a->p_cls);
    linear(w, "classifier", NULL, a->H, a->labels, true);
}

/* ViTForImageClassification.forward (modeling_vit.py @ 005db820) on pixel_values [num_channels, image_size,
 * image_size] float32 (the model's input; ViTImageProcessor resizes every image to the config's size):
 *  - ViTModel.forward: pixel_values.to(projection.weight.dtype), the rebound argument alive until it returns
 *    (a copy unless float32);
 *  - ViTEmbeddings.forward: patch_embeddings (ViTPatchEmbeddings: projection, an nn.Conv2d with kernel = stride =
 *    patch_size, then .flatten(2).transpose(1, 2): views), cls_token.expand(batch_size, -1, -1), torch.cat((cls,
 *    embeddings), dim=1), + position_embeddings (no interpolate_pos_encoding: the image is the config's size;
 *    Dinov2Embeddings.forward interpolates them at dinov2's --image, Parameter's bicubic_from, layers/tensor.c),
 *    dropout(hidden_dropout_prob);
 *  - ViTEncoder: the ViTLayers (vit_layer; with gradient checkpointing each layer's __call__ through
 *    _gradient_checkpointing_func), ViTModel.layernorm; no pooler (add_pooling_layer=False);
 *  - classifier(sequence_output[:, 0, :]), CrossEntropyLoss (num_labels > 1, integer labels). */
static void build_vit(wr *w, const arch *a)
{
    const bool dino = a->f->block == BLK_DINOV2;
    enum { CAST, PROJ, FLAT, PATCH, CLS, MASK, CAT, POS, ADD, DROP, LAYERS, NORM, NNAMES };
    static const char *const sfx[NNAMES] = {"pixel_values", "embeddings.patch_embeddings.projection",
        "embeddings.patch_embeddings.flatten", "embeddings.patch_embeddings", "embeddings.cls_token",
        "embeddings.mask_token", "embeddings.cat", "embeddings.position_embeddings", "embeddings.add_positions",
        "embeddings.dropout", "encoder.layer", "layernorm"};
    char nm[NNAMES][64]; /* "vit." / "dinov2." + the module's path: alive while the layers are written */
    for (int i = 0; i < NNAMES; i++) snprintf(nm[i], sizeof nm[i], "%s.%s", a->f->prefix, sfx[i]);
    cJSON *cast = add_layer(w, "Cast", nm[CAST]);
    str(w, cast, "dtype", "parameters");
    cJSON *o = add_layer(w, "Conv2d", nm[PROJ]);
    num(w, o, "in_channels", (double)a->vit.cin);
    num(w, o, "out_channels", (double)a->H);
    num(w, o, "kernel_size", (double)a->vit.P);
    num(w, o, "stride", (double)a->vit.P);
    shape2(w, add_layer(w, "Reshape", nm[FLAT]), a->H, a->vit.patches);
    o = add_layer(w, "Transpose", nm[PATCH]);
    num(w, o, "dim0", 1); /* dims count the batch (Transpose, layers/tensor.c) */
    num(w, o, "dim1", 2);
    shape2(w, add_layer(w, "Parameter", nm[CLS]), 1, a->H);
    if (dino && a->vit.mask_token) /* Dinov2Embeddings.mask_token [1, H]: torch.where only with bool_masked_pos */
        shape2(w, add_layer(w, "Parameter", nm[MASK]), 1, a->H);
    o = add_layer(w, "Cat", nm[CAT]);
    ins(w, o, nm[CLS], nm[PATCH], NULL, NULL);
    num(w, o, "dim", 1);
    o = add_layer(w, "Parameter", nm[POS]);
    shape2(w, o, a->vit.patches + 1, a->H);
    /* Dinov2Embeddings.interpolate_pos_encoding: the parameter itself when num_patches == num_positions and
     * height == width, else its grid resized (bicubic) to the image's patches (Parameter's bicubic_from) */
    if (dino && (a->vit.patches != a->vit.grid * a->vit.grid || a->vit.h != a->vit.w))
        num(w, o, "bicubic_from", (double)a->vit.grid);
    ins(w, add_layer(w, "Add", nm[ADD]), nm[CAT], nm[POS], NULL, NULL);
    dropout(w, nm[DROP], a->p_resid);
    layer_stack(w, a, nm[LAYERS], w->last);
    layernorm(w, a, nm[NORM], NULL);
    /* ViTModel.forward rebinds pixel_values to the cast, alive until it returns; Dinov2Embeddings.forward passes
     * pixel_values.to(dtype=target_dtype) straight to the projection */
    str(w, cast, "held_until", dino ? nm[PROJ] : nm[NORM]);
    cJSON *seq_out = cJSON_GetArrayItem(w->arr, cJSON_GetArraySize(w->arr) - 1);
    o = add_layer(w, "Select", "first_token"); /* sequence_output[:, 0, :] */
    num(w, o, "dim", 1);
    num(w, o, "index", 0);
    if (dino) { /* torch.cat([cls_token, patch_tokens.mean(dim=1)], dim=1), patch_tokens = sequence_output[:, 1:] */
        o = add_layer(w, "Slice", "patch_tokens");
        ins(w, o, nm[NORM], NULL, NULL, NULL);
        num(w, o, "dim", 1);
        num(w, o, "start", 1);
        o = add_layer(w, "Mean", "patch_tokens.mean");
        num(w, o, "dim", 1);
        o = add_layer(w, "Cat", "linear_input");
        ins(w, o, "first_token", "patch_tokens.mean", NULL, NULL);
        num(w, o, "dim", 1);
    }
    linear(w, "classifier", NULL, (dino ? 2 : 1) * a->H, a->labels, true);
    if (dino) str(w, seq_out, "held_until", "classifier"); /* Dinov2ForImageClassification's sequence_output */
}

/* SiglipVisionModel.forward (modeling_siglip.py @ efa7189c) on pixel_values [num_channels, image_size, image_size]
 * float32, the training step's loss its pooler_output.mean() (the model returns no loss):
 *  - SiglipVisionEmbeddings.forward: patch_embedding(pixel_values.to(dtype=target_dtype)) (the cast a copy unless
 *    float32, dead when the Conv2d returns), flatten(2).transpose(1, 2) (views), + position_embedding(position_ids)
 *    (an nn.Embedding over the [1, num_patches] buffer: Parameter's lookup, layers/tensor.c); no CLS token;
 *  - SiglipEncoder: the SiglipEncoderLayers (siglip_layer); SiglipVisionTransformer.forward keeps the embeddings'
 *    output (hidden_states) until it returns (encoder_outputs too: not held here, the difference is inference's);
 *    post_layernorm;
 *  - with vision_use_head, SiglipMultiheadAttentionPoolingHead: probe.repeat(batch_size, 1, 1) (Parameter's
 *    repeat), nn.MultiheadAttention(probe, h, h)[0] (batch_first, need_weights True: the explicit path, layers/
 *    attention.c), residual = that, layernorm, + mlp (fc1, act, fc2), [:, 0]. */
/* SigLIP's and CLIP's patch_embedding(pixel_values.to(dtype=target_dtype)) (the cast a copy unless float32, dead when
 * the Conv2d returns; CLIP's Conv2d without a bias), .flatten(2).transpose(1, 2) (views) */
static void vision_patches(wr *w, const arch *a, bool bias)
{
    cJSON *cast = add_layer(w, "Cast", "vision_model.embeddings.pixel_values");
    str(w, cast, "dtype", "parameters");
    cJSON *o = add_layer(w, "Conv2d", "vision_model.embeddings.patch_embedding");
    num(w, o, "in_channels", (double)a->vit.cin);
    num(w, o, "out_channels", (double)a->H);
    num(w, o, "kernel_size", (double)a->vit.P);
    num(w, o, "stride", (double)a->vit.P);
    if (!bias) flag(w, o, "bias", false);
    str(w, cast, "held_until", "vision_model.embeddings.patch_embedding");
    shape2(w, add_layer(w, "Reshape", "vision_model.embeddings.flatten"), a->H, a->vit.patches);
    o = add_layer(w, "Transpose", "vision_model.embeddings.transpose");
    num(w, o, "dim0", 1); /* dims count the batch (Transpose, layers/tensor.c) */
    num(w, o, "dim1", 2);
}

static void build_siglip_vision(wr *w, const arch *a)
{
    vision_patches(w, a, true);
    cJSON *o = add_layer(w, "Parameter", "vision_model.embeddings.position_embedding");
    shape2(w, o, a->vit.patches, a->H);
    str(w, o, "mode", "lookup");
    cJSON *emb = add_layer(w, "Add", "vision_model.embeddings");
    ins(w, emb, "vision_model.embeddings.transpose", "vision_model.embeddings.position_embedding", NULL, NULL);
    layer_stack(w, a, "vision_model.encoder.layers", "vision_model.embeddings");
    cJSON *post = layernorm(w, a, "vision_model.post_layernorm", NULL);
    const char *end = "vision_model.post_layernorm";
    if (a->vit.head) {
        o = add_layer(w, "Parameter", "vision_model.head.probe");
        shape2(w, o, 1, a->H);
        str(w, o, "mode", "repeat");
        o = add_layer(w, "MultiheadAttention", "vision_model.head.attention");
        ins(w, o, "vision_model.head.probe", "vision_model.post_layernorm", "vision_model.post_layernorm", NULL);
        num(w, o, "embed_dim", (double)a->H);
        num(w, o, "num_heads", (double)a->NH);
        cJSON *ln = layernorm(w, a, "vision_model.head.layernorm", NULL);
        linear(w, "vision_model.head.mlp.fc1", NULL, a->H, a->I, true);
        act_layer(w, a, "vision_model.head.mlp.activation_fn");
        linear(w, "vision_model.head.mlp.fc2", NULL, a->I, a->H, true);
        ins(w, add_layer(w, "Add", "vision_model.head.residual"), "vision_model.head.attention", "vision_model.head.mlp.fc2",
            NULL, NULL);
        str(w, ln, "held_until", "vision_model.head.residual");
        o = add_layer(w, "Select", "vision_model.head.first"); /* hidden_state[:, 0] */
        num(w, o, "dim", 1);
        num(w, o, "index", 0);
        end = "vision_model.head.first";
        str(w, post, "held_until", end); /* last_hidden_state, returned */
    }
    str(w, emb, "held_until", end); /* encoder_outputs (the last layer's output) is post_layernorm's saved input */
}

/* CLIPVisionTransformer.forward (modeling_clip.py @ 000f1ffdbf1ce6190cc8863af9a2fff817590937) in CLIPModel, then
 * CLIPModel.forward's visual_projection:
 *  - CLIPVisionEmbeddings.forward: patch_embedding(pixel_values.to(dtype=target_dtype)) (nn.Conv2d, bias=False; the
 *    cast a copy unless float32, dead when the Conv2d returns), flatten(2).transpose(1, 2) (views),
 *    class_embedding.expand(batch_size, 1, -1) (a view), torch.cat([class_embeds, patch_embeds], dim=1), +
 *    position_embedding(position_ids) (an nn.Embedding over the [1, num_patches + 1] buffer: Parameter's lookup);
 *  - hidden_states = pre_layrnorm(hidden_states): the local rebound, alive until the forward returns;
 *  - CLIPEncoder: the CLIPEncoderLayers (siglip_layer); last_hidden_state returned in vision_outputs (held by
 *    build_siglip to the logits);
 *  - pooled_output = last_hidden_state[:, 0, :] (a view), post_layernorm(pooled_output) (the pooler_output);
 *  - visual_projection: nn.Linear(hidden_size, projection_dim, bias=False), run by CLIPModel.forward after the text
 *    tower (build_siglip writes it there). */
static void build_clip_vision(wr *w, const arch *a)
{
    vision_patches(w, a, false);
    shape2(w, add_layer(w, "Parameter", "vision_model.embeddings.class_embedding"), 1, a->H);
    cJSON *o = add_layer(w, "Cat", "vision_model.embeddings.cat");
    ins(w, o, "vision_model.embeddings.class_embedding", "vision_model.embeddings.transpose", NULL, NULL);
    num(w, o, "dim", 1);
    o = add_layer(w, "Parameter", "vision_model.embeddings.position_embedding");
    shape2(w, o, a->vit.patches + 1, a->H);
    str(w, o, "mode", "lookup");
    o = add_layer(w, "Add", "vision_model.embeddings");
    ins(w, o, "vision_model.embeddings.cat", "vision_model.embeddings.position_embedding", NULL, NULL);
    cJSON *pre = layernorm(w, a, "vision_model.pre_layrnorm", NULL);
    layer_stack(w, a, "vision_model.encoder.layers", "vision_model.pre_layrnorm");
    o = add_layer(w, "Select", "vision_model.pooled_output"); /* last_hidden_state[:, 0, :] */
    num(w, o, "dim", 1);
    num(w, o, "index", 0);
    str(w, o, "held_until", "logits"); /* the view keeps last_hidden_state (vision_outputs) to the forward's end */
    cJSON *post = layernorm(w, a, "vision_model.post_layernorm", NULL);
    str(w, pre, "held_until", "vision_model.post_layernorm");
    str(w, post, "held_until", "logits"); /* vision_outputs.pooler_output, to CLIPModel.forward's end */
}

/* The layer of w's list named `name` (NULL none) */
static cJSON *named(wr *w, const char *name)
{
    for (cJSON *o = w->arr ? w->arr->child : NULL; o; o = o->next) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "name");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, name)) return o;
    }
    return NULL;
}

/* SiglipModel.forward (modeling_siglip.py @ efa7189c) on pixel_values and input_ids (the model's two inputs), the
 * vision tower first:
 *  - self.vision_model: build_siglip_vision on a->tower (vision_config), its Cast reading the model's pixel_values;
 *    vision_outputs (last_hidden_state, pooler_output) a local until the forward returns: post_layernorm's output
 *    held to the logits;
 *  - self.text_model, SiglipTextTransformer.forward: SiglipTextEmbeddings (token_embedding(input_ids) +
 *    position_embedding(position_ids[:, :seq_length]): Parameter's lookup over the max_position_embeddings rows'
 *    table and buffer), hidden_states a local until it returns; SiglipEncoder without an attention mask (none is
 *    passed: the step is SiglipModel(input_ids, pixel_values, return_loss=True)); final_layer_norm (last_hidden_state,
 *    in text_outputs until SiglipModel.forward returns); pooled_output = last_hidden_state[:, -1, :] (a view, "sticky"
 *    EOS), self.head (nn.Linear(hidden_size, hidden_size));
 *  - SiglipLogits (layers/vision.c): the normalized embeddings, logits_per_text; the loss is the model's "siglip"
 *    row (src/engine/loss.c). */
static void build_siglip(wr *w, const arch *a)
{
    const arch *v = a->tower;
    const bool clip = a->f->block == BLK_CLIP;
    const int first = cJSON_GetArraySize(w->arr);
    if (clip) build_clip_vision(w, v);
    else build_siglip_vision(w, v);
    ins(w, cJSON_GetArrayItem(w->arr, first), "pixel_values", NULL, NULL, NULL); /* the Cast */
    cJSON *o = NULL;
    if (!clip) { /* clip: build_clip_vision holds its pooler_output; last_hidden_state is the pooled view's base */
        o = named(w, "vision_model.post_layernorm");
        if (o) cJSON_DeleteItemFromObjectCaseSensitive(o, "held_until");
        str(w, o, "held_until", "logits");
    }
    o = add_layer(w, "Embedding", "text_model.embeddings.token_embedding");
    ins(w, o, "input_ids", NULL, NULL, NULL);
    num(w, o, "num_embeddings", (double)a->V);
    num(w, o, "embedding_dim", (double)a->H);
    o = add_layer(w, "Parameter", "text_model.embeddings.position_embedding");
    shape2(w, o, a->seq, a->H);
    str(w, o, "mode", "lookup");
    if (a->seq < a->maxpos) num(w, o, "table_rows", (double)a->maxpos);
    cJSON *emb = add_layer(w, "Add", "text_model.embeddings");
    ins(w, emb, "text_model.embeddings.token_embedding", "text_model.embeddings.position_embedding", NULL, NULL);
    layer_stack(w, a, "text_model.encoder.layers", "text_model.embeddings");
    cJSON *fin = layernorm(w, a, "text_model.final_layer_norm", NULL);
    /* siglip: last_hidden_state[:, -1, :]; clip: the row at the eos position (below) */
    o = add_layer(w, "Select", "text_model.pooled_output");
    num(w, o, "dim", 1);
    num(w, o, "index", -1);
    if (clip) {
        /* CLIPTextTransformer returns pooled_output; CLIPModel.forward runs both towers, then visual_projection, then
         * text_projection (no biases): the order autograd's sequence numbers keep in backward, visual_projection's
         * node after the text tower's (its weight's gradient made, its saved input freed, before the text tower's
         * backward runs) */
        str(w, emb, "held_until", "text_model.pooled_output");
        linear(w, "visual_projection", "vision_model.post_layernorm", v->H, v->clip_proj, false);
        linear(w, "text_projection", "text_model.pooled_output", a->H, a->clip_proj, false);
    } else {
        linear(w, "text_model.head", NULL, a->H, a->H, true);
        str(w, emb, "held_until", "text_model.head");
    }
    str(w, fin, "held_until", "logits");
    o = add_layer(w, "SiglipLogits", "logits");
    if (clip) {
        ins(w, o, "visual_projection", "text_projection", NULL, NULL);
        flag(w, o, "clip", true);
    } else {
        ins(w, o, "vision_model.head.first", "text_model.head", NULL, NULL);
    }
}

/* What a DINOv2 model's estimate does not model, refused before the plan (src/engine/plan.c): autocast. Under
 * torch.autocast Dinov2LayerScale's hidden_state * lambda1 (a float32 parameter, elementwise mul on no autocast
 * list) promotes the half-precision attention and MLP outputs to float32, and with them the residual stream, where
 * the Parameter layer here meets the autocast dtype. The row is found by its patch projection's name. */
vc_status vc__dinov2_check(const vc_model *m, const vc_options *o, vc_error *err)
{
    if (o->precision != VC_PREC_AMP_FP16 && o->precision != VC_PREC_AMP_BF16) return VC_OK;
    for (size_t i = 0; i < m->ninst; i++)
        if (m->inst[i].name && !strcmp(m->inst[i].name, "dinov2.embeddings.patch_embeddings.projection"))
            return vc_set_error(err, VC_ERR_USAGE, O("precision"), "dinov2: under autocast LayerScale's float32 lambda1 "
                                "promotes the layers' outputs and the residual stream to float32, not modelled; use "
                                "fp32, bf16 or fp16 (the model cast whole)");
    return VC_OK;
}

static void build_layers(wr *w, const arch *a)
{
    cJSON *o;
    switch (a->f->block) {
    case BLK_GPT2:
        embedding(w, a, "transformer.wte");
        o = add_layer(w, "PositionEmbedding", "transformer.wpe");
        ins(w, o, "input", NULL, NULL, NULL);
        num(w, o, "num_embeddings", (double)a->maxpos);
        num(w, o, "embedding_dim", (double)a->H);
        if (a->sp > 1) num(w, o, "sequence_scatter", (double)a->sp);
        ins(w, add_layer(w, "Add", "embeds"), "transformer.wte", "transformer.wpe", NULL, NULL);
        dropout(w, "transformer.drop", a->p_embd);
        layer_stack(w, a, "transformer.h", w->last);
        layernorm(w, a, "transformer.ln_f", NULL);
        lm_head(w, a, "transformer.wte", "lm_head");
        return;
    case BLK_NEOX:
        embedding(w, a, "gpt_neox.embed_in");
        if (a->R > 0) {
            o = add_layer(w, "RotaryEmbedding", "gpt_neox.rotary_emb");
            ins(w, o, "input", NULL, NULL, NULL);
            num(w, o, "head_dim", (double)a->D);
            num(w, o, "rotary_dim", (double)a->R);
        }
        layer_stack(w, a, "gpt_neox.layers", "gpt_neox.embed_in");
        layernorm(w, a, "gpt_neox.final_layer_norm", NULL);
        lm_head(w, a, "gpt_neox.embed_in", "embed_out");
        return;
    case BLK_BERT:
        build_encoder(w, a);
        return;
    case BLK_DISTILBERT:
        build_distilbert(w, a);
        return;
    case BLK_VIT:
    case BLK_DINOV2:
        build_vit(w, a);
        return;
    case BLK_SIGLIP_VISION:
        build_siglip_vision(w, a);
        return;
    case BLK_SIGLIP: /* SiglipModel */
    case BLK_CLIP:   /* CLIPModel */
        build_siglip(w, a);
        return;
    case BLK_BART: /* BartForConditionalGeneration (hf_bart.c) */
        vc__hf_bart_write(w->r, w->arr, a);
        return;
    case BLK_MPNET: /* MPNetForSequenceClassification (hf_mpnet.c) */
        vc__hf_mpnet_write(w->r, w->arr, a);
        return;
    case BLK_MODERNBERT: /* ModernBertForSequenceClassification (hf_modernbert.c) */
        vc__hf_modernbert_write(w->r, w->arr, a);
        return;
    case BLK_WHISPER: /* WhisperForConditionalGeneration (hf_whisper.c) */
        vc__hf_whisper_write(w->r, w->arr, a);
        return;
    case BLK_T5: /* T5ForConditionalGeneration (hf_t5.c) */
        vc__hf_t5_write(w->r, w->arr, a);
        return;
    case BLK_FALCON: /* FalconForCausalLM: word_embeddings, rotary_emb, h, ln_f, lm_head (tied) */
        embedding(w, a, "transformer.word_embeddings");
        o = add_layer(w, "RotaryEmbedding", "transformer.rotary_emb");
        ins(w, o, "input", NULL, NULL, NULL);
        num(w, o, "head_dim", (double)a->D);
        layer_stack(w, a, "transformer.h", "transformer.word_embeddings");
        layernorm(w, a, "transformer.ln_f", NULL);
        lm_head(w, a, "transformer.word_embeddings", "lm_head");
        return;
    case BLK_PHI: /* PhiForCausalLM: embed_tokens, embed_dropout, the layers, final_layernorm, lm_head with bias */
        embedding(w, a, "model.embed_tokens");
        dropout(w, "model.embed_dropout", a->p_embd);
        if (a->R > 0) {
            o = add_layer(w, "RotaryEmbedding", "model.rotary_emb");
            ins(w, o, "input", NULL, NULL, NULL);
            num(w, o, "head_dim", (double)a->D);
            num(w, o, "rotary_dim", (double)a->R);
        }
        layer_stack(w, a, "model.layers", a->p_embd > 0 ? "model.embed_dropout" : "model.embed_tokens");
        layernorm(w, a, "model.final_layernorm", NULL);
        lm_head(w, a, "model.embed_tokens", "lm_head");
        return;
    case BLK_OPT: { /* OPTForCausalLM: OPTDecoder (embed_tokens [V, word_embed_proj_dim], project_in, + positions,
                     * the layers, final_layer_norm, project_out), lm_head tied to embed_tokens */
        const char *emb = "model.decoder.embed_tokens";
        o = add_layer(w, "Embedding", emb);
        num(w, o, "num_embeddings", (double)a->V);
        num(w, o, "embedding_dim", (double)a->proj);
        if (a->sp > 1) num(w, o, "sequence_scatter", (double)a->sp); /* VocabParallelEmbedding (--tp refuses project_in) */
        if (a->proj != a->H) linear(w, "model.decoder.project_in", NULL, a->proj, a->H, false);
        const char *tok = w->last;
        o = add_layer(w, "PositionEmbedding", "model.decoder.embed_positions"); /* cumsum(attention_mask) + 2 */
        ins(w, o, "input", NULL, NULL, NULL);
        num(w, o, "num_embeddings", (double)a->maxpos + 2);
        num(w, o, "embedding_dim", (double)a->H);
        flag(w, o, "per_sample", true);
        if (a->sp > 1) num(w, o, "sequence_scatter", (double)a->sp);
        ins(w, add_layer(w, "Add", "model.decoder.embeds"), tok, "model.decoder.embed_positions", NULL, NULL);
        layer_stack(w, a, "model.decoder.layers", "model.decoder.embeds");
        if (a->norm_before) layernorm(w, a, "model.decoder.final_layer_norm", NULL);
        if (a->proj != a->H) linear(w, "model.decoder.project_out", NULL, a->H, a->proj, false);
        lm_head(w, a, emb, "lm_head");
        return;
    }
    case BLK_GEMMA4: /* Gemma4ForCausalLM (hf_gemma4.c) */
        vc__hf_gemma4_write(w->r, w->arr, a);
        return;
    case BLK_LFM2: /* Lfm2ForCausalLM: embed_tokens, pos_emb, the layers, embedding_norm, lm_head (tied) */
        embedding(w, a, "model.embed_tokens");
        o = add_layer(w, "RotaryEmbedding", "model.pos_emb");
        ins(w, o, "input", NULL, NULL, NULL);
        num(w, o, "head_dim", (double)a->D);
        num(w, o, "rotary_dim", (double)a->R);
        layer_stack(w, a, "model.layers", "model.embed_tokens");
        rmsnorm(w, a, "model.embedding_norm", NULL);
        lm_head(w, a, "model.embed_tokens", "lm_head");
        return;
    case BLK_GRANITE4: /* GraniteMoeHybridForCausalLM (hf_granite4.c) */
        vc__hf_granite4_write(w->r, w->arr, a);
        return;
    case BLK_MAMBA2: /* Mamba2ForCausalLM (hf_granite4.c) */
        vc__hf_mamba2_write(w->r, w->arr, a);
        return;
    case BLK_NEMOTRON_H: /* NemotronHForCausalLM (hf_granite4.c) */
        vc__hf_nemotron_h_write(w->r, w->arr, a);
        return;
    case BLK_FALCON_H1: /* FalconH1ForCausalLM (hf_granite4.c) */
        vc__hf_falcon_h1_write(w->r, w->arr, a);
        return;
    default:
        break;
    }
    /* a VLM's vision tower and projector (hf_vision.c); the image embeddings replace their tokens'
     * rows: inputs_embeds.masked_scatter(image_mask, image_embeds) (Qwen2_5_VLModel.forward), written
     * as the text rows (a view) cat'ed after the image rows, a new [L, H] tensor. The Qwen towers with
     * images: the token embeddings first, as Qwen3VLModel.forward (@ 00709b86, and Qwen3_5Model's) computes
     * inputs_embeds = embed_tokens(input_ids) before get_image_features, and
     * Qwen2_5_VLForConditionalGeneration.forward (@ efa7189c) inputs_embeds = self.model.embed_tokens(input_ids)
     * before self.visual: alive while the tower runs; Gemma3Model.forward (modeling_gemma3.py @ 0018aa64) too:
     * inputs_embeds = self.get_input_embeddings()(llm_input_ids) before get_image_features. Without images the
     * tower's weights (never run) come first. */
    const bool images = (a->f->vision == VIS_QWEN3 || a->f->vision == VIS_QWEN3_5 || a->f->vision == VIS_QWEN2_5 || a->f->vision == VIS_QWEN2 ||
                         a->f->vision == VIS_SIGLIP || a->f->vision == VIS_PIXTRAL || a->f->vision == VIS_PALIGEMMA ||
                         a->f->vision == VIS_IDEFICS3 || a->f->vision == VIS_INTERNVL || a->f->vision == VIS_GLM4V) &&
                        a->vis.patches > 0;
    if (images) {
        embedding(w, a, "model.embed_tokens");
        ins(w, cJSON_GetArrayItem(w->arr, cJSON_GetArraySize(w->arr) - 1), "input", NULL, NULL, NULL);
    }
    const char *img = vc__hf_vision_write(w->r, w->arr, a);
    if (a->f->moe == MOE_LLAMA4) vc__hf_llama4_vision_write(w->r, w->arr, a); /* llama4's tower, not run (hf_llama4.c) */
    vc__hf_mllama_write(w->r, w->arr, a); /* mllama's tower and cross-attention layers, not run (hf_mllama.c) */
    if (!images) {
        embedding(w, a, "model.embed_tokens");
        if (a->f->vision || a->l4v.on || a->ml.on) ins(w, cJSON_GetArrayItem(w->arr, cJSON_GetArraySize(w->arr) - 1), "input", NULL, NULL, NULL);
        /* PaliGemmaForConditionalGeneration.forward without pixel_values: inputs_embeds = get_input_embeddings()(
         * input_ids), its local until it returns, its loss included (modeling_paligemma.py @ efa7189c) */
        if (a->f->vision == VIS_PALIGEMMA) flag(w, cJSON_GetArrayItem(w->arr, cJSON_GetArraySize(w->arr) - 1), "keep_forward", true);
    }
    const char *first = "model.embed_tokens";
    if (img && a->vis.decode) {
        /* generate()'s decoding steps (hf_vision.c): pixel_values None, inputs_embeds = embed_tokens(input_ids)
         * itself; two whole-length views keep the prefill's layer count (vc__model_twin_decode) */
        o = add_layer(w, "Slice", "model.text_embeds");
        ins(w, o, "model.embed_tokens", NULL, NULL, NULL);
        num(w, o, "dim", 1);
        o = add_layer(w, "Slice", "model.inputs_embeds");
        num(w, o, "dim", 1);
        first = "model.inputs_embeds";
    } else if (img) {
        o = add_layer(w, "Slice", "model.text_embeds");
        ins(w, o, "model.embed_tokens", NULL, NULL, NULL);
        num(w, o, "dim", 1);
        num(w, o, "start", (double)a->vis.embeds); /* the rows the image embeddings replace */
        o = add_layer(w, "Cat", "model.inputs_embeds");
        ins(w, o, img, "model.text_embeds", NULL, NULL);
        num(w, o, "dim", 1);
        /* PaliGemmaForConditionalGeneration.forward's inputs_embeds (the masked_scatter result): its local until it
         * returns, its loss included (modeling_paligemma.py @ efa7189c) */
        if (a->f->vision == VIS_PALIGEMMA) flag(w, o, "keep_forward", true);
        first = "model.inputs_embeds";
    }
    if (a->f->embed_scale) { /* hidden_states * normalizer (sqrt(hidden_size)) */
        o = add_layer(w, "Scale", "model.embed_scale");
        num(w, o, "factor", sqrt((double)a->H));
        first = "model.embed_scale";
    }
    if (a->f->mup) { /* GraniteModel: inputs_embeds * self.embedding_multiplier */
        o = add_layer(w, "Scale", "model.embedding_multiplier");
        num(w, o, "factor", a->emb_mult);
        first = "model.embedding_multiplier";
    }
    dropout(w, "model.embed_dropout", a->p_embd); /* Phi3Model.embed_dropout */
    if (a->p_embd > 0) first = "model.embed_dropout";
    if (a->R > 0) {
        o = add_layer(w, "RotaryEmbedding", "model.rotary_emb");
        ins(w, o, "input", NULL, NULL, NULL);
        num(w, o, "head_dim", (double)a->D);
        num(w, o, "rotary_dim", (double)a->R);
        if (a->f->half_rope) flag(w, o, "half", true); /* GptOssRotaryEmbedding: emb = freqs, no cat */
        if (a->f->rope_f32 && !a->vllm) flag(w, o, "f32", true); /* Olmo2RotaryEmbedding: `return cos, sin`, float32 */
        if (a->f->vision == VIS_GLM4V) flag(w, o, "mrope", true); /* Glm4vTextRotaryEmbedding: [3, B, L, R] cos / sin */
        if (a->f->moe == MOE_LLAMA4 || a->f->ds_v2) flag(w, o, "complex", true); /* freqs_cis (DeepseekV2RotaryEmbedding too) */ /* Llama4TextRotaryEmbedding: freqs_cis */
        if (a->f->vision == VIS_PALIGEMMA && !a->eager) flag(w, o, "prefix_mask", true); /* made before the layers */
        /* the sdpa sliding layers' mask, made by the model's forward before its layers (layers/llm.c rope_emit):
         * not under eager, sinks, chunked attention or Gemma 3's image masks (their own mask paths) */
        int64_t sw = 0;
        for (int64_t i = 0; i < a->N && !sw; i++)
            if (vc__hf_llama4_chunk(a, i) <= 0) sw = vc__hf_layer_window(a, i) > 0 ? vc__hf_layer_window(a, i) : 0;
        if (sw > 0 && !a->eager && !a->f->sinks && !(a->f->vision == VIS_SIGLIP && a->vis.patches > 0 && !a->vis.decode) &&
            a->f->vision != VIS_PALIGEMMA) { /* PaliGemma 2: its sliding layers' mask is made from the prefix mask */
            num(w, o, "sliding_mask", (double)sw);
            if (a->mask_4x) flag(w, o, "sliding_mask_4x", true);
        }
        bool local = false;
        for (int64_t i = 0; i < a->N && a->f->local_rope; i++) local |= vc__hf_layer_window(a, i) > 0;
        if (local) { /* Gemma3TextModel: the sliding layers' cos/sin (rope_local_base_freq), alive with the global pair */
            /* Gemma3TextModel.forward (models/gemma3/modeling_gemma3.py @ 0018aa64): `position_embeddings[layer_type]
             * = self.rotary_emb(hidden_states, position_ids, layer_type)` for each type before the decoder loop, a local
             * dict: both pairs alive until forward returns, after self.norm (measured: gemma3_small's prefill keeps
             * the local pair through the full layer after the last sliding one). Not in the forward that runs an
             * image (Gemma3Model.forward's image path, its own masks above; its locals around language_model not
             * checked against the rope's lifetime): left as it was; its decoding steps hold them as the text-only */
            const bool hold = !(a->f->vision == VIS_SIGLIP && a->vis.patches > 0 && !a->vis.decode);
            if (hold) str(w, o, "held_until", "model.norm");
            o = add_layer(w, "RotaryEmbedding", "model.rotary_emb_local");
            ins(w, o, "input", NULL, NULL, NULL);
            num(w, o, "head_dim", (double)a->D);
            num(w, o, "rotary_dim", (double)a->R);
            if (hold) str(w, o, "held_until", "model.norm");
        }
    }
    layer_stack(w, a, "model.layers", first);
    decoder_norm(w, a, "model.norm", NULL);
    lm_head(w, a, "model.embed_tokens", "lm_head");
}

void vc__hf_write(rd *r, cJSON *arr, const arch *a)
{
    wr w = {r, arr, NULL};
    build_layers(&w, a);
}
