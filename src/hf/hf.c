/*
 * hf.c — a Hugging Face config.json as a vramcalc model (issue 12).
 *
 * vc_hf_build() reads the config (a JSON object with "model_type" and no
 * "layers") and writes the equivalent vramcalc model as a cJSON tree: the
 * same format a user could write by hand (vramcalc --emit-model prints it),
 * which the normal loader then loads. Layers are named as the HF modules
 * are (model.embed_tokens, model.layers > self_attn.q_proj, mlp.down_proj,
 * lm_head, ...), projections are Linear layers, and the new kinds of
 * layers/llm.c do the rest. Every architecture follows its modeling_*.py at
 * huggingface/transformers 5dd4a63548857797727ae73eeb6a6e886ea02a3e.
 *
 * This file holds the families' table, the public helpers and the entry
 * point; the keys are read and checked in hf_read.c, the layers written in
 * hf_layers.c (the module each layer stands for is named there), one
 * tensor-parallel rank's share is taken in hf_tp.c.
 *
 * Errors name the config key (err->path) and exit 2 in the CLI; nothing is
 * guessed: a key the family needs and the config lacks is an error, a key
 * with a PretrainedConfig default takes that default.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf.h"
#include "release.h"
#include "hf_arch.h"
#include "model.h"
#include "util.h"

/* ------------------------------------------------------------ the families
 *
 * One row per model_type. .keys: the config keys and their defaults as the
 * family's configuration_*.py sets them; .block ...: the block template
 * hf_layers.c writes (the module names and order of its modeling_*.py).
 * Adding a family: docs/contributing.md.
 */

/* key shorthands: a required key, a key with a default, a key null turns off */
#define REQ(k) {.key = (k), .how = D_REQUIRED}
#define DEF(k, d) {.key = (k), .def = (d)}
#define FIXED(d) {.key = NULL, .def = (d)}
/* a key with a default that the class's attribute_map also reads under another name (GPT2Config's
 * hidden_size for n_embd) */
#define DEF_ALT(k, a, d) {.key = (k), .def = (d), .alt = (a)}
#define OFF_IF_NULL(k, d) {.key = (k), .def = (d), .null_none = true}
#define ACT(k, d) {.key = (k), .sdef = (d)}

/* LlamaConfig's keys, which Mistral, Qwen2, Qwen3, Phi3, Mixtral, Qwen2Moe
 * and Gemma share (each row below overrides what its class sets otherwise). */
#define LLAMA_KEYS                                                                                             \
    [K_VOCAB] = REQ("vocab_size"), [K_HIDDEN] = REQ("hidden_size"), [K_LAYERS] = REQ("num_hidden_layers"),   \
    [K_HEADS] = REQ("num_attention_heads"), [K_KV_HEADS] = {.key = "num_key_value_heads", .how = D_HEADS},    \
    [K_EPS] = DEF("rms_norm_eps", 1e-6), [K_MAXPOS] = DEF("max_position_embeddings", 2048),                  \
    [K_INTER] = REQ("intermediate_size"), [K_HEAD_DIM] = {.key = NULL, .how = D_SPLIT},                      \
    [K_ACT] = ACT("hidden_act", "silu"), [K_TIE] = DEF("tie_word_embeddings", 0),                            \
    [K_P_ATTN] = DEF("attention_dropout", 0), [K_ROTARY] = FIXED(1), [K_USE_WINDOW] = FIXED(1)

/* the five sizes every LlamaConfig-like class defaults (vocab_size, hidden_size, intermediate_size,
 * num_hidden_layers, num_attention_heads), each row's own class's values */
#define LLAMA_SIZES(v, h, i, n, nh)                                                                            \
    [K_VOCAB] = DEF("vocab_size", v), [K_HIDDEN] = DEF("hidden_size", h), [K_INTER] = DEF("intermediate_size", i), \
    [K_LAYERS] = DEF("num_hidden_layers", n), [K_HEADS] = DEF("num_attention_heads", nh)

/* the template of LlamaDecoderLayer: pre-norm RMSNorm, q/k/v/o, SwiGLU */
#define LLAMA_BLOCK                                                                                            \
    .block = BLK_DECODER, .norm = NORM_RMS, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_GATED,          \
    .pos = POS_ROPE, .head = HEAD_LM, .rope_scaling = true, .lora_targets = "q_proj,v_proj"

/* Qwen2-VL's and Qwen2.5-VL's language model (Qwen2VLTextConfig / Qwen2_5_VLTextConfig: the same defaults) */
#define QWEN2_VL_KEYS                                                                                           \
    LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 152064), [K_HIDDEN] = DEF("hidden_size", 8192),                  \
        [K_INTER] = DEF("intermediate_size", 29568), [K_LAYERS] = DEF("num_hidden_layers", 80),                \
        [K_HEADS] = DEF("num_attention_heads", 64), [K_KV_HEADS] = DEF("num_key_value_heads", 8),              \
        [K_EPS] = DEF("rms_norm_eps", 1e-5), [K_MAXPOS] = DEF("max_position_embeddings", 32768),               \
        [K_QKV_BIAS] = FIXED(1), [K_USE_WINDOW] = DEF("use_sliding_window", 0),                                \
        [K_WINDOW] = OFF_IF_NULL("sliding_window", 4096), [K_WINDOW_LAYERS] = DEF("max_window_layers", 80)

/* A row overrides what LLAMA_KEYS / LLAMA_BLOCK set (C11 6.7.9p19: the last
 * initializer of a member wins). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
const hf_family vc__hf_families[] = {
    /* LlamaConfig (configuration_llama.py @ 008e5743, lines 64-68): every size has a default (vocab_size 32000,
     * hidden_size 4096, intermediate_size 11008, num_hidden_layers 32, num_attention_heads 32: LlamaConfig()
     * builds from model_type alone); num_key_value_heads None: the heads (__post_init__) */
    {.model_type = "llama", .config_class = "LlamaConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 32000), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 32),
              [K_INTER] = DEF("intermediate_size", 11008), [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0), [K_MLP_BIAS] = DEF("mlp_bias", 0)},
     LLAMA_BLOCK},
    /* MistralConfig (configuration_mistral.py @ 008e5743, lines 63-68): vocab_size 32000, hidden_size 4096,
     * intermediate_size 14336, num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8 when absent
     * (an explicit null: the heads, __post_init__); head_dim None: hidden_size // num_attention_heads */
    {.model_type = "mistral", .config_class = "MistralConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 32000), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 32),
              [K_KV_HEADS] = {.key = "num_key_value_heads", .def = 8, .how = D_KV_NULL},
              [K_INTER] = DEF("intermediate_size", 14336), [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT},
              [K_MAXPOS] = DEF("max_position_embeddings", 131072),
              [K_WINDOW] = OFF_IF_NULL("sliding_window", 4096) /* MistralConfig: 4096, None for none */},
     LLAMA_BLOCK},
    /* Qwen2Config (configuration_qwen2.py @ 008e5743, lines 61-66): vocab_size 151936, hidden_size 4096,
     * intermediate_size 22016, num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 32 when absent
     * (null: the heads, __post_init__); Qwen2Attention (modeling_qwen2.py @ 00d4b3d2): head_dim
     * getattr(config, "head_dim", hidden_size // num_attention_heads), the config's head_dim when it has one */
#define QWEN2_KEYS                                                                                             \
    LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 151936), [K_HIDDEN] = DEF("hidden_size", 4096),                  \
        [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 32),                 \
        [K_KV_HEADS] = {.key = "num_key_value_heads", .def = 32, .how = D_KV_NULL},                            \
        [K_INTER] = DEF("intermediate_size", 22016), [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT},       \
        [K_MAXPOS] = DEF("max_position_embeddings", 32768),                                                    \
        [K_QKV_BIAS] = FIXED(1) /* Qwen2Attention: bias=True on q/k/v */,                                      \
        [K_USE_WINDOW] = DEF("use_sliding_window", 0), [K_WINDOW] = OFF_IF_NULL("sliding_window", 4096),       \
        [K_WINDOW_LAYERS] = DEF("max_window_layers", 28), [K_LAYER_TYPES] = DEF("layer_types", 0)
    {.model_type = "qwen2", .config_class = "Qwen2Config", .keys = {QWEN2_KEYS}, LLAMA_BLOCK, .window = WIN_FROM_LAYER},
    /* Qwen3Config (configuration_qwen3.py @ 008e5743): vocab_size 151936, hidden_size 4096, intermediate_size
     * 22016, num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 32 when absent (null: the heads,
     * __post_init__), head_dim 128 */
#define QWEN3_KEYS                                                                                             \
    LLAMA_KEYS, LLAMA_SIZES(151936, 4096, 22016, 32, 32),                                                      \
        [K_KV_HEADS] = {.key = "num_key_value_heads", .def = 32, .how = D_KV_NULL},                            \
        [K_HEAD_DIM] = DEF("head_dim", 128) /* Qwen3Config.head_dim = 128 */,                                  \
        [K_MAXPOS] = DEF("max_position_embeddings", 32768),                                                    \
        [K_QKV_BIAS] = DEF("attention_bias", 0), [K_O_BIAS] = DEF("attention_bias", 0),                        \
        [K_USE_WINDOW] = DEF("use_sliding_window", 0), [K_WINDOW] = OFF_IF_NULL("sliding_window", 4096),       \
        [K_WINDOW_LAYERS] = DEF("max_window_layers", 28), [K_LAYER_TYPES] = DEF("layer_types", 0)
    {.model_type = "qwen3", .config_class = "Qwen3Config", .keys = {QWEN3_KEYS}, LLAMA_BLOCK, .window = WIN_FROM_LAYER,
     .qk_norm = QK_PER_HEAD},
    /* GemmaConfig (configuration_gemma.py @ 008e5743; the class describes gemma-7b): vocab_size 256000,
     * hidden_size 3072, intermediate_size 24576, num_hidden_layers 28, num_attention_heads 16,
     * num_key_value_heads 16, head_dim 256, tie_word_embeddings True */
#define GEMMA_KEYS                                                                                             \
    LLAMA_KEYS, LLAMA_SIZES(256000, 3072, 24576, 28, 16), [K_KV_HEADS] = DEF("num_key_value_heads", 16),     \
    [K_HEAD_DIM] = DEF("head_dim", 256) /* GemmaConfig.head_dim = 256 */,                                    \
    [K_MAXPOS] = DEF("max_position_embeddings", 8192),                                                       \
    [K_ACT] = {.key = "hidden_activation", .alt = "hidden_act", .sdef = "gelu_pytorch_tanh"},                \
    [K_TIE] = DEF("tie_word_embeddings", 1), [K_QKV_BIAS] = DEF("attention_bias", 0),                        \
    [K_O_BIAS] = DEF("attention_bias", 0)
    {.model_type = "gemma", .config_class = "GemmaConfig", .keys = {GEMMA_KEYS},
     LLAMA_BLOCK, .norm = NORM_RMS_GEMMA, .embed_scale = true},
    /* Gemma2Config (configuration_gemma2.py @ 008e5743; the class describes gemma-2-2b): vocab_size 256000,
     * hidden_size 2304, intermediate_size 9216, num_hidden_layers 26, num_attention_heads 8, num_key_value_heads
     * 4, head_dim 256, tie_word_embeddings True */
#define GEMMA2_KEYS                                                                                            \
    LLAMA_KEYS, LLAMA_SIZES(256000, 2304, 9216, 26, 8), [K_KV_HEADS] = DEF("num_key_value_heads", 4),         \
    [K_HEAD_DIM] = DEF("head_dim", 256) /* Gemma2Config.head_dim = 256 */,                                   \
    [K_MAXPOS] = DEF("max_position_embeddings", 8192),                                                       \
    [K_ACT] = {.key = "hidden_activation", .alt = "hidden_act", .sdef = "gelu_pytorch_tanh"},                \
    [K_TIE] = DEF("tie_word_embeddings", 1), [K_QKV_BIAS] = DEF("attention_bias", 0),                        \
    [K_O_BIAS] = DEF("attention_bias", 0), [K_WINDOW] = OFF_IF_NULL("sliding_window", 4096),                 \
    [K_FINAL_CAP] = OFF_IF_NULL("final_logit_softcapping", 30.0),                                            \
    [K_ATTN_CAP] = OFF_IF_NULL("attn_logit_softcapping", 50.0), [K_LAYER_TYPES] = DEF("layer_types", 0)
    {.model_type = "gemma2", .config_class = "Gemma2Config", .keys = {GEMMA2_KEYS},
     LLAMA_BLOCK, .norm = NORM_RMS_GEMMA, .place = PLACE_SANDWICH, .window = WIN_ALTERNATE, .embed_scale = true,
     /* the default attention is the release's (VC_TF_GEMMA2_EAGER, src/policy/release.c): eager up to
      * 4.46 (Gemma2PreTrainedModel._check_and_enable_sdpa swapped the default sdpa for eager: explicit
      * attention weights and the softcapping), sdpa from 4.47 (the override is gone) */
     .eager_release = true},
    /* Phi3Config (configuration_phi3.py @ 008e5743; the class describes Phi-3-mini-4k): vocab_size 32064,
     * hidden_size 3072, intermediate_size 8192, num_hidden_layers 32, num_attention_heads 32,
     * num_key_value_heads None: the heads (__post_init__) */
    {.model_type = "phi3", .config_class = "Phi3Config",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(32064, 3072, 8192, 32, 32), [K_EPS] = DEF("rms_norm_eps", 1e-5), [K_MAXPOS] = DEF("max_position_embeddings", 4096),
              [K_ROTARY] = DEF("partial_rotary_factor", 1.0),
              [K_P_RESID] = DEF("resid_pdrop", 0),
              [K_P_EMBD] = DEF("embd_pdrop", 0), [K_WINDOW] = DEF("sliding_window", 0)},
     LLAMA_BLOCK, .attn = ATTN_FUSED, .mlp = MLP_GATED_FUSED, .lora_targets = "qkv_proj,o_proj,gate_up_proj,down_proj"},
    /* MixtralConfig (configuration_mixtral.py @ 008e5743; Mixtral-8x7B's): vocab_size 32000, hidden_size 4096,
     * intermediate_size 14336, num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8 when absent
     * (null: the heads, __post_init__), num_local_experts 8 (attribute_map: num_experts), top-2 */
    {.model_type = "mixtral", .config_class = "MixtralConfig",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(32000, 4096, 14336, 32, 32),
              [K_KV_HEADS] = {.key = "num_key_value_heads", .def = 8, .how = D_KV_NULL}, [K_EPS] = DEF("rms_norm_eps", 1e-5), [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT},
              [K_MAXPOS] = DEF("max_position_embeddings", 131072), [K_WINDOW] = OFF_IF_NULL("sliding_window", 0),
              [K_EXPERTS] = {.key = "num_local_experts", .def = 8, .alt = "num_experts"},
              [K_TOPK] = DEF("num_experts_per_tok", 2), [K_MOE_INTER] = DEF("intermediate_size", 14336), [K_NORM_TOPK] = FIXED(1)},
     LLAMA_BLOCK, .moe = MOE_MIXTRAL},
    /* Qwen2MoeConfig (configuration_qwen2_moe.py @ 008e5743; Qwen1.5-MoE-A2.7B's): vocab_size 151936,
     * hidden_size 2048, intermediate_size 5632, num_hidden_layers 24, num_attention_heads 16, num_key_value_heads
     * 16 when absent (null: the heads, PreTrainedConfig), num_experts 60, moe_intermediate_size 1408 */
    {.model_type = "qwen2_moe", .config_class = "Qwen2MoeConfig",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(151936, 2048, 5632, 24, 16),
              [K_KV_HEADS] = {.key = "num_key_value_heads", .def = 16, .how = D_KV_NULL}, [K_QKV_BIAS] = DEF("qkv_bias", 1),
              [K_MAXPOS] = DEF("max_position_embeddings", 32768),
              [K_USE_WINDOW] = DEF("use_sliding_window", 0), [K_WINDOW] = OFF_IF_NULL("sliding_window", 4096),
              [K_WINDOW_LAYERS] = DEF("max_window_layers", 28), [K_LAYER_TYPES] = DEF("layer_types", 0),
              [K_EXPERTS] = DEF("num_experts", 60), [K_TOPK] = DEF("num_experts_per_tok", 4),
              [K_MOE_INTER] = DEF("moe_intermediate_size", 1408), [K_SHARED_INTER] = DEF("shared_expert_intermediate_size", 5632),
              [K_SPARSE_STEP] = DEF("decoder_sparse_step", 1), [K_NORM_TOPK] = DEF("norm_topk_prob", 0),
              [K_MLP_ONLY] = DEF("mlp_only_layers", 0)},
     LLAMA_BLOCK, .moe = MOE_QWEN2, .window = WIN_ALTERNATE_BELOW},
    /* Qwen3MoeConfig (configuration_qwen3_moe.py at 008e574): no max_window_layers or
     * layer_types (sliding_window on every layer when use_sliding_window), no shared
     * expert, num_experts 128 / top-8 / moe_intermediate_size 768 by default;
     * Qwen3MoeAttention is Qwen3's (q_norm / k_norm over head_dim), head_dim
     * getattr(config, "head_dim", hidden_size // num_attention_heads); the sizes (@ 008e5743): vocab_size 151936,
     * hidden_size 2048, intermediate_size 6144, num_hidden_layers 24, num_attention_heads 32,
     * num_key_value_heads 4, max_position_embeddings 32768; attribute_map num_experts -> num_local_experts */
    {.model_type = "qwen3_moe", .config_class = "Qwen3MoeConfig",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(151936, 2048, 6144, 24, 32), [K_KV_HEADS] = DEF("num_key_value_heads", 4),
              [K_MAXPOS] = DEF("max_position_embeddings", 32768), [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT},
              [K_QKV_BIAS] = DEF("attention_bias", 0), [K_O_BIAS] = DEF("attention_bias", 0),
              [K_USE_WINDOW] = DEF("use_sliding_window", 0), [K_WINDOW] = OFF_IF_NULL("sliding_window", 4096),
              [K_EXPERTS] = {.key = "num_experts", .def = 128, .alt = "num_local_experts"}, [K_TOPK] = DEF("num_experts_per_tok", 8),
              [K_MOE_INTER] = DEF("moe_intermediate_size", 768), [K_SPARSE_STEP] = DEF("decoder_sparse_step", 1),
              [K_NORM_TOPK] = DEF("norm_topk_prob", 0), [K_MLP_ONLY] = DEF("mlp_only_layers", 0)},
     LLAMA_BLOCK, .moe = MOE_QWEN2, .qk_norm = QK_PER_HEAD},
    /* DeepseekV3Config (configuration_deepseek_v3.py @ 001f85b3; its defaults are DeepSeek-V3's,
     * the sizes included):
     * DeepseekV3DecoderLayer with DeepseekV3Attention (MLA: layers/mla.c) and, from
     * first_k_dense_replace on, DeepseekV3MoE (SparseMoE style deepseek_v3, stacked experts);
     * head_dim = qk_rope_head_dim; q_lora_rank null: q_proj (DeepSeek-V2-Lite's shape).
     * num_nextn_predict_layers (the checkpoint's MTP layer model.layers.61) is read, not built:
     * DeepseekV3Model._keys_to_ignore_on_load_unexpected drops it, vLLM loads it only as a
     * speculative-decoding draft (docs/llm.md) */
#define DEEPSEEK_KEYS                                                                                          \
    LLAMA_KEYS, [K_MAXPOS] = DEF("max_position_embeddings", 4096),                                            \
    [K_HEAD_DIM] = DEF("qk_rope_head_dim", 64), [K_QKV_BIAS] = DEF("attention_bias", 0),                     \
    [K_O_BIAS] = DEF("attention_bias", 0), [K_EXPERTS] = DEF("n_routed_experts", 256),                       \
    [K_TOPK] = DEF("num_experts_per_tok", 8), [K_MOE_INTER] = DEF("moe_intermediate_size", 2048),            \
    [K_NORM_TOPK] = DEF("norm_topk_prob", 1), [K_Q_LORA] = OFF_IF_NULL("q_lora_rank", 1536),                 \
    [K_KV_LORA] = DEF("kv_lora_rank", 512), [K_QK_NOPE] = DEF("qk_nope_head_dim", 128),                      \
    [K_V_HEAD] = DEF("v_head_dim", 128), [K_N_SHARED] = DEF("n_shared_experts", 1), [K_N_GROUP] = DEF("n_group", 8), \
    [K_TOPK_GROUP] = DEF("topk_group", 4), [K_FIRST_DENSE] = DEF("first_k_dense_replace", 3),                \
    [K_NEXTN] = DEF("num_nextn_predict_layers", 0), [K_ROPE_INTERLEAVE] = DEF("rope_interleave", 1),         \
    [K_ROUTED_SCALE] = DEF("routed_scaling_factor", 2.5)
    /* DeepseekV3Config.__init__ (@ 001f85b3): vocab_size 129280, hidden_size 7168, intermediate_size 18432,
     * num_hidden_layers 61, num_attention_heads 128 (num_key_value_heads, 128, shapes no MLA weight: kv_b_proj
     * gives every head its k and v; read as the heads, as before); Kimi-K2's remote configuration_deepseek.py was
     * not read: its row keeps the sizes required */
    {.model_type = "deepseek_v3", .config_class = "DeepseekV3Config",
     .keys = {DEEPSEEK_KEYS, LLAMA_SIZES(129280, 7168, 18432, 61, 128)},
     LLAMA_BLOCK, .attn = ATTN_MLA, .moe = MOE_DEEPSEEK, .lora_targets = NULL},
    /* Kimi-K2 (moonshotai/Kimi-K2-*: model_type kimi_k2, architectures DeepseekV3ForCausalLM, its
     * configuration_deepseek.py through trust_remote_code): DeepSeek-V3's modules and keys */
    {.model_type = "kimi_k2", .config_class = "DeepseekV3Config (Kimi-K2's configuration_deepseek.py)",
     .keys = {DEEPSEEK_KEYS}, LLAMA_BLOCK, .attn = ATTN_MLA, .moe = MOE_DEEPSEEK, .lora_targets = NULL},
#undef DEEPSEEK_KEYS
    /* Glm4MoeConfig (GLM-4.5, GLM-4.5-Air, GLM-4.6): Glm4MoeAttention (q/k/v with attention_bias, o_proj
     * without; q_norm / k_norm per head when use_qk_norm; partial rotary, cat(q_embed, q_pass)) and
     * DeepSeek-V3's MoE (Glm4MoeMoE: sigmoid routing with e_score_correction_bias, n_group / topk_group,
     * shared experts, dense layers below first_k_dense_replace); models/glm4_moe/modeling_glm4_moe.py
     * @ 000c33fd; the MTP layer (num_nextn_predict_layers) is read, not built
     * (Glm4MoeModel._keys_to_ignore_on_load_unexpected) */
    /* Glm4MoeConfig's sizes (configuration_glm4_moe.py @ 008e5743): vocab_size 151552, hidden_size 4096,
     * intermediate_size 10944, num_hidden_layers 46, num_attention_heads 96, num_key_value_heads 8; no head_dim
     * (GLM-4.5's config.json gives 128): the class alone has 96 heads that do not divide 4096, refused naming
     * num_attention_heads and the class's defaults; attribute_map num_local_experts -> n_routed_experts */
    {.model_type = "glm4_moe", .config_class = "Glm4MoeConfig",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(151552, 4096, 10944, 46, 96), [K_KV_HEADS] = DEF("num_key_value_heads", 8),
              [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_EPS] = DEF("rms_norm_eps", 1e-5),
              [K_MAXPOS] = DEF("max_position_embeddings", 131072), [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = FIXED(0), [K_ROTARY] = DEF("partial_rotary_factor", 0.5),
              [K_EXPERTS] = DEF_ALT("n_routed_experts", "num_local_experts", 128), [K_TOPK] = DEF("num_experts_per_tok", 8),
              [K_MOE_INTER] = DEF("moe_intermediate_size", 1408), [K_NORM_TOPK] = DEF("norm_topk_prob", 1),
              [K_N_SHARED] = DEF("n_shared_experts", 1), [K_N_GROUP] = DEF("n_group", 1), [K_TOPK_GROUP] = DEF("topk_group", 1),
              [K_FIRST_DENSE] = DEF("first_k_dense_replace", 1), [K_NEXTN] = DEF("num_nextn_predict_layers", 0),
              [K_ROUTED_SCALE] = DEF("routed_scaling_factor", 1.0), [K_USE_QK_NORM] = DEF("use_qk_norm", 0)},
     LLAMA_BLOCK, .moe = MOE_DEEPSEEK, .qk_norm = QK_PER_HEAD, .lora_targets = NULL},
    /* Glm4MoeLiteConfig (GLM-4.7-Flash; models/glm4_moe_lite/modular_glm4_moe_lite.py @ 008e5743, the class's
     * defaults are GLM-4.7-Flash's: vocab_size 154880, hidden_size 2048, intermediate_size 10240,
     * num_hidden_layers 47, num_attention_heads 20, num_key_value_heads 20 (shapes no MLA weight),
     * moe_intermediate_size 1536, n_routed_experts 64 (attribute_map num_local_experts), n_shared_experts 1,
     * num_experts_per_tok 4, norm_topk_prob True, routed_scaling_factor 1.8, n_group / topk_group 1,
     * q_lora_rank 768, kv_lora_rank 512, qk_nope_head_dim 192, qk_rope_head_dim 64 (head_dim by attribute_map),
     * v_head_dim 256, rope_interleave True, max_position_embeddings 202752, rms_norm_eps 1e-5, untied):
     * Glm4MoeLiteAttention is DeepseekV3Attention (MLA), Glm4MoeLiteMoE is Glm4MoeMoE (DeepSeek-V3's sigmoid
     * routing with e_score_correction_bias and shared experts, stacked experts), and a layer is MoE where
     * mlp_layer_types says "sparse" (__post_init__: ["dense"] + ["sparse"] * (num_hidden_layers - 1); the
     * class has no first_k_dense_replace: src/hf/hf_deepseek_v32.c vc__hf_glm4_moe_lite_read). The
     * checkpoint's MTP layer (model.layers.47) is read, not built (_keys_to_ignore_on_load_unexpected) */
    {.model_type = "glm4_moe_lite", .config_class = "Glm4MoeLiteConfig",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(154880, 2048, 10240, 47, 20), [K_KV_HEADS] = DEF("num_key_value_heads", 20),
              [K_EPS] = DEF("rms_norm_eps", 1e-5), [K_MAXPOS] = DEF("max_position_embeddings", 202752),
              [K_HEAD_DIM] = DEF("qk_rope_head_dim", 64), [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0), [K_EXPERTS] = DEF_ALT("n_routed_experts", "num_local_experts", 64),
              [K_TOPK] = DEF("num_experts_per_tok", 4), [K_MOE_INTER] = DEF("moe_intermediate_size", 1536),
              [K_NORM_TOPK] = DEF("norm_topk_prob", 1), [K_Q_LORA] = OFF_IF_NULL("q_lora_rank", 768),
              [K_KV_LORA] = DEF("kv_lora_rank", 512), [K_QK_NOPE] = DEF("qk_nope_head_dim", 192),
              [K_V_HEAD] = DEF("v_head_dim", 256), [K_N_SHARED] = DEF("n_shared_experts", 1),
              [K_N_GROUP] = DEF("n_group", 1), [K_TOPK_GROUP] = DEF("topk_group", 1),
              [K_FIRST_DENSE] = DEF("first_k_dense_replace", 1), [K_NEXTN] = DEF("num_nextn_predict_layers", 0),
              [K_ROPE_INTERLEAVE] = DEF("rope_interleave", 1), [K_ROUTED_SCALE] = DEF("routed_scaling_factor", 1.8)},
     LLAMA_BLOCK, .attn = ATTN_MLA, .moe = MOE_DEEPSEEK, .rope_scaling = true, .lora_targets = NULL},
    /* Qwen3NextConfig (configuration_qwen3_next.py at 008e5743; the class's defaults are
     * Qwen/Qwen3-Next-80B-A3B's): Qwen3NextDecoderLayer (modeling_qwen3_next.py at 7515843b)
     * is a Gated DeltaNet (linear_attn) or a gated full attention (self_attn: q_proj gives
     * the query and a sigmoid gate on the output; q_norm / k_norm per head) by layer_types,
     * else one full-attention layer every full_attention_interval; Qwen3NextRMSNorm is
     * gemma's (x * (1 + weight)); the MoE is Qwen2Moe's with its shared expert and gate;
     * partial_rotary_factor 0.25 by __post_init__'s default */
    {.model_type = "qwen3_next", .config_class = "Qwen3NextConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 151936), [K_HIDDEN] = DEF("hidden_size", 2048),
              [K_LAYERS] = DEF("num_hidden_layers", 48), [K_HEADS] = DEF("num_attention_heads", 16),
              [K_KV_HEADS] = DEF("num_key_value_heads", 2), [K_HEAD_DIM] = DEF("head_dim", 256), [K_INTER] = DEF("intermediate_size", 5632),
              [K_MAXPOS] = DEF("max_position_embeddings", 32768), [K_ROTARY] = DEF("partial_rotary_factor", 0.25),
              [K_QKV_BIAS] = DEF("attention_bias", 0), [K_O_BIAS] = DEF("attention_bias", 0),
              [K_EXPERTS] = DEF("num_experts", 512), [K_TOPK] = DEF("num_experts_per_tok", 10),
              [K_MOE_INTER] = DEF("moe_intermediate_size", 512), [K_SHARED_INTER] = DEF("shared_expert_intermediate_size", 512),
              [K_SPARSE_STEP] = DEF("decoder_sparse_step", 1), [K_NORM_TOPK] = DEF("norm_topk_prob", 1),
              [K_MLP_ONLY] = DEF("mlp_only_layers", 0), [K_LIN_KH] = DEF("linear_num_key_heads", 16),
              [K_LIN_VH] = DEF("linear_num_value_heads", 32), [K_LIN_KD] = DEF("linear_key_head_dim", 128),
              [K_LIN_VD] = DEF("linear_value_head_dim", 128), [K_CONV_K] = DEF("linear_conv_kernel_dim", 4),
              [K_FULL_INTERVAL] = DEF("full_attention_interval", 4), [K_HYBRID_TYPES] = DEF("layer_types", 0)},
     LLAMA_BLOCK, .norm = NORM_RMS_GEMMA, .moe = MOE_QWEN2, .qk_norm = QK_PER_HEAD, .hybrid = true, .lora_targets = NULL},
    /* Qwen3.5 / Qwen3.6 (issue 31): Qwen3_5Config / Qwen3_5MoeConfig (configuration_qwen3_5.py @ 8116e632,
     * modular_qwen3_5_moe.py @ e36255cb) nest the language model in text_config (Qwen3_5TextConfig,
     * Qwen3_5MoeTextConfig: Qwen3NextConfig's keys, their defaults Qwen3.5-9B's and Qwen3.5-35B-A3B's;
     * layer_types, else "linear_attention" if (i + 1) % full_attention_interval (kwargs, 4);
     * partial_rotary_factor 0.25 by kwargs.setdefault) beside vision_config (src/hf/hf_vision.c).
     * Qwen3_5DecoderLayer (modular_qwen3_5.py @ 8940358a): Qwen3NextAttention (gated, q/k norms),
     * Qwen3_5GatedDeltaNet (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a: layers/deltanet.c's
     * split_projections), Qwen3NextRMSNorm ((1 + weight)), a dense Qwen3_5MLP(intermediate_size) on
     * every layer; Qwen3_5MoeDecoderLayer: Qwen3NextSparseMoeBlock on every layer (no
     * decoder_sparse_step, mlp_only_layers or norm_topk_prob: Qwen3_5MoeTopKRouter, Qwen3-VL-MoE's,
     * renormalizes the top-k), stacked experts and a gated shared expert. The MTP layers of the
     * checkpoints (mtp_num_hidden_layers) are not built: _keys_to_ignore_on_load_unexpected ^mtp.* */
#define QWEN3_5_KEYS                                                                                           \
    LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 248320), [K_HEADS] = DEF("num_attention_heads", 16),           \
    [K_HEAD_DIM] = DEF("head_dim", 256), [K_MAXPOS] = DEF("max_position_embeddings", 32768),                \
    [K_ROTARY] = DEF("partial_rotary_factor", 0.25), [K_QKV_BIAS] = DEF("attention_bias", 0),               \
    [K_O_BIAS] = DEF("attention_bias", 0), [K_LIN_KH] = DEF("linear_num_key_heads", 16),                     \
    [K_LIN_VH] = DEF("linear_num_value_heads", 32), [K_LIN_KD] = DEF("linear_key_head_dim", 128),           \
    [K_LIN_VD] = DEF("linear_value_head_dim", 128), [K_CONV_K] = DEF("linear_conv_kernel_dim", 4),          \
    [K_FULL_INTERVAL] = DEF("full_attention_interval", 4), [K_HYBRID_TYPES] = DEF("layer_types", 0)
#define QWEN3_5_DENSE_KEYS                                                                                     \
    QWEN3_5_KEYS, [K_HIDDEN] = DEF("hidden_size", 4096), [K_LAYERS] = DEF("num_hidden_layers", 32),           \
    [K_KV_HEADS] = DEF("num_key_value_heads", 4), [K_INTER] = DEF("intermediate_size", 12288)
#define QWEN3_5_MOE_KEYS                                                                                       \
    QWEN3_5_KEYS, [K_HIDDEN] = DEF("hidden_size", 2048), [K_LAYERS] = DEF("num_hidden_layers", 40),           \
    [K_KV_HEADS] = DEF("num_key_value_heads", 2), [K_INTER] = FIXED(0) /* del self.intermediate_size */,      \
    [K_EXPERTS] = DEF("num_experts", 256), [K_TOPK] = DEF("num_experts_per_tok", 8),                         \
    [K_MOE_INTER] = DEF("moe_intermediate_size", 512), [K_SHARED_INTER] = DEF("shared_expert_intermediate_size", 512), \
    [K_SPARSE_STEP] = FIXED(1), [K_NORM_TOPK] = FIXED(1)
#define QWEN3_5_BLOCK LLAMA_BLOCK, .norm = NORM_RMS_GEMMA, .qk_norm = QK_PER_HEAD, .hybrid = true, .gdn_split = true
    {.model_type = "qwen3_5", .config_class = "Qwen3_5TextConfig (Qwen3_5Config.text_config)", .keys = {QWEN3_5_DENSE_KEYS},
     QWEN3_5_BLOCK, .nested = "text_config", .vision = VIS_QWEN3_5, .lora_targets = NULL},
    {.model_type = "qwen3_5_moe", .config_class = "Qwen3_5MoeTextConfig (Qwen3_5MoeConfig.text_config)",
     .keys = {QWEN3_5_MOE_KEYS}, QWEN3_5_BLOCK, .moe = MOE_QWEN2, .nested = "text_config", .vision = VIS_QWEN3_5,
     .lora_targets = NULL},
    /* the text configs themselves (AutoModelForCausalLM: Qwen3_5ForCausalLM, Qwen3_5MoeForCausalLM, which
     * drop the checkpoint's model.visual.* and mtp.* on load: no tower) */
    {.model_type = "qwen3_5_text", .config_class = "Qwen3_5TextConfig", .keys = {QWEN3_5_DENSE_KEYS}, QWEN3_5_BLOCK,
     .lora_targets = NULL},
    {.model_type = "qwen3_5_moe_text", .config_class = "Qwen3_5MoeTextConfig", .keys = {QWEN3_5_MOE_KEYS}, QWEN3_5_BLOCK,
     .moe = MOE_QWEN2, .lora_targets = NULL},
#undef QWEN3_5_DENSE_KEYS
#undef QWEN3_5_MOE_KEYS
#undef QWEN3_5_BLOCK
#undef QWEN3_5_KEYS
    /* GPT2Config (configuration_gpt2.py @ 01ae98ae; the class describes openai-community/gpt2): vocab_size
     * 50257, n_positions 1024, n_embd 768, n_layer 12, n_head 12, n_inner None (4 x n_embd); attribute_map:
     * hidden_size, max_position_embeddings, num_attention_heads, num_hidden_layers read for the n_* keys */
    {.model_type = "gpt2", .config_class = "GPT2Config",
     .keys = {[K_VOCAB] = DEF("vocab_size", 50257), [K_HIDDEN] = DEF_ALT("n_embd", "hidden_size", 768),
              [K_LAYERS] = DEF_ALT("n_layer", "num_hidden_layers", 12), [K_HEADS] = DEF_ALT("n_head", "num_attention_heads", 12),
              [K_KV_HEADS] = {.how = D_HEADS}, [K_EPS] = DEF("layer_norm_epsilon", 1e-5),
              [K_MAXPOS] = DEF_ALT("n_positions", "max_position_embeddings", 1024), [K_INTER] = {.key = "n_inner", .how = D_4H},
              [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("activation_function", "gelu_new"),
              [K_TIE] = DEF("tie_word_embeddings", 1), [K_P_ATTN] = DEF("attn_pdrop", 0.1),
              [K_P_RESID] = DEF("resid_pdrop", 0.1), [K_P_EMBD] = DEF("embd_pdrop", 0.1)},
     .block = BLK_GPT2, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_FUSED, .mlp = MLP_PLAIN, .pos = POS_LEARNED,
     .head = HEAD_LM, .lora_targets = "c_attn"},
    /* GPTNeoXConfig (configuration_gpt_neox.py @ 008e5743; the class describes gpt-neox-20b): vocab_size
     * 50432, hidden_size 6144, num_hidden_layers 44, num_attention_heads 64, intermediate_size 24576 */
    {.model_type = "gpt_neox", .config_class = "GPTNeoXConfig",
     .keys = {LLAMA_SIZES(50432, 6144, 24576, 44, 64), [K_KV_HEADS] = {.how = D_HEADS}, [K_EPS] = DEF("layer_norm_eps", 1e-5),
              [K_MAXPOS] = DEF("max_position_embeddings", 2048),
              [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("hidden_act", "gelu"),
              [K_TIE] = DEF("tie_word_embeddings", 0), [K_QKV_BIAS] = DEF("attention_bias", 1),
              [K_O_BIAS] = DEF("attention_bias", 1), [K_MLP_BIAS] = DEF("attention_bias", 1),
              [K_P_ATTN] = DEF("attention_dropout", 0), [K_P_RESID] = DEF("hidden_dropout", 0),
              [K_ROTARY] = DEF("rotary_pct", 0.25), [K_PARALLEL] = DEF("use_parallel_residual", 1)},
     .block = BLK_NEOX, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_FUSED, .mlp = MLP_PLAIN, .pos = POS_ROPE,
     .head = HEAD_LM, .rope_scaling = true, .lora_targets = "query_key_value"},
    /* SmolLM3Config (the class's defaults are HuggingFaceTB/SmolLM3-3B): a
     * LlamaDecoderLayer whose NoPE layers skip apply_rotary_pos_emb
     * (SmolLM3Attention.use_rope = config.no_rope_layers[layer_idx]) */
    /* the sizes (configuration_smollm3.py @ 008e5743): vocab_size 128256, hidden_size 2048, intermediate_size
     * 11008, num_hidden_layers 36, num_attention_heads 16, num_key_value_heads 4 when absent (null: the heads,
     * __post_init__) */
    {.model_type = "smollm3", .config_class = "SmolLM3Config",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(128256, 2048, 11008, 36, 16),
              [K_KV_HEADS] = {.key = "num_key_value_heads", .def = 4, .how = D_KV_NULL}, [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_TIE] = DEF("tie_word_embeddings", 1),
              [K_MAXPOS] = DEF("max_position_embeddings", 32768),
              [K_QKV_BIAS] = DEF("attention_bias", 0), [K_O_BIAS] = DEF("attention_bias", 0),
              [K_MLP_BIAS] = DEF("mlp_bias", 0), [K_USE_WINDOW] = DEF("use_sliding_window", 0),
              [K_WINDOW] = OFF_IF_NULL("sliding_window", 0), [K_LAYER_TYPES] = DEF("layer_types", 0),
              [K_NOPE_LAYERS] = DEF("no_rope_layers", 0), [K_NOPE_INTERVAL] = DEF("no_rope_layer_interval", 4)},
     LLAMA_BLOCK, .window = WIN_NOPE, .nope = true},
    /* GraniteConfig: LlamaDecoderLayer with the muP multipliers
     * (modular_granite.py; attention_multiplier is the softmax scale: no
     * tensor of its own) */
    /* GraniteConfig (configuration_granite.py @ 008e5743): LlamaConfig's sizes (32000, 4096, 11008, 32 layers, 32
     * heads), num_key_value_heads None: the heads (__post_init__) */
    {.model_type = "granite", .config_class = "GraniteConfig",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(32000, 4096, 11008, 32, 32), [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0), [K_MLP_BIAS] = DEF("mlp_bias", 0),
              [K_EMB_MULT] = DEF("embedding_multiplier", 1.0), [K_RESID_MULT] = DEF("residual_multiplier", 1.0),
              [K_LOGITS_SCALE] = DEF("logits_scaling", 1.0)},
     LLAMA_BLOCK, .mup = true},
    /* Olmo2Config and Olmo2ForCausalLM (models/olmo2/modeling_olmo2.py @ 0233e509): RMSNorm after attention and
     * after the MLP, none before (Olmo2DecoderLayer); q_norm / k_norm over the whole q / k projection
     * (Olmo2Attention); Olmo2RMSNorm's (self.weight * hidden_states).to(input_dtype) with hidden_states float32
     * (Olmo3RMSNorm's); Olmo2RotaryEmbedding.forward's `return cos, sin` (float32, no .to(x.dtype)), so
     * apply_rotary_pos_emb's q * cos, rotate_half(q) * sin and their sum are float32, then q_embed.to(q_type) */
    /* Olmo2Config (configuration_olmo2.py @ 008e5743): vocab_size 50304, hidden_size 4096, intermediate_size
     * 11008, num_hidden_layers 32, num_attention_heads 32, num_key_value_heads None: the heads (__post_init__) */
    {.model_type = "olmo2", .config_class = "Olmo2Config",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(50304, 4096, 11008, 32, 32), [K_EPS] = DEF("rms_norm_eps", 1e-5), [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT},
              [K_QKV_BIAS] = DEF("attention_bias", 0), [K_O_BIAS] = DEF("attention_bias", 0)},
     LLAMA_BLOCK, .norm = NORM_RMS_OLMO, .place = PLACE_SUBLAYER, .qk_norm = QK_WHOLE, .rope_f32 = true},
    /* GPTBigCodeConfig: GPT-2's block with multi-query attention (c_attn
     * [H, H + 2 head_dim]) and nn.Linear projections */
    /* GPTBigCodeConfig's defaults (configuration_gpt_bigcode.py @ 05ff2e98): GPT2Config's (vocab_size 50257,
     * n_positions 1024, n_embd 768, n_layer 12, n_head 12) and its attribute_map */
    {.model_type = "gpt_bigcode", .config_class = "GPTBigCodeConfig",
     .keys = {[K_VOCAB] = DEF("vocab_size", 50257), [K_HIDDEN] = DEF_ALT("n_embd", "hidden_size", 768),
              [K_LAYERS] = DEF_ALT("n_layer", "num_hidden_layers", 12), [K_HEADS] = DEF_ALT("n_head", "num_attention_heads", 12),
              [K_KV_HEADS] = {.how = D_HEADS}, [K_EPS] = DEF("layer_norm_epsilon", 1e-5),
              [K_MAXPOS] = DEF_ALT("n_positions", "max_position_embeddings", 1024), [K_INTER] = {.key = "n_inner", .how = D_4H},
              [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("activation_function", "gelu_pytorch_tanh"),
              [K_TIE] = DEF("tie_word_embeddings", 1), [K_P_ATTN] = DEF("attn_pdrop", 0.1),
              [K_P_RESID] = DEF("resid_pdrop", 0.1), [K_P_EMBD] = DEF("embd_pdrop", 0.1),
              [K_MULTI_QUERY] = DEF("multi_query", 1)},
     .block = BLK_GPT2, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_FUSED, .mlp = MLP_PLAIN, .pos = POS_LEARNED,
     .head = HEAD_LM, .lora_targets = "c_attn"},
    /* OPTConfig: pre-LayerNorm decoder with learned positions (offset 2), ReLU MLP (fc1, fc2), biases */
    /* OPTConfig's defaults (configuration_opt.py @ 014674d3, the only version read; there the width is d_model,
     * read as hidden_size through attribute_map): vocab_size 50272, max_position_embeddings 2048,
     * num_hidden_layers 12, num_attention_heads 12, ffn_dim 3072, width 768 (facebook/opt-125m's) */
    {.model_type = "opt", .config_class = "OPTConfig",
     .keys = {LLAMA_SIZES(50272, 768, 3072, 12, 12), [K_KV_HEADS] = {.how = D_HEADS}, [K_EPS] = FIXED(1e-5),
              [K_MAXPOS] = DEF("max_position_embeddings", 2048), [K_INTER] = DEF("ffn_dim", 3072), [K_HEAD_DIM] = {.how = D_SPLIT},
              [K_ACT] = ACT("activation_function", "relu"), [K_TIE] = DEF("tie_word_embeddings", 1),
              [K_QKV_BIAS] = DEF("enable_bias", 1), [K_O_BIAS] = DEF("enable_bias", 1), [K_MLP_BIAS] = DEF("enable_bias", 1),
              [K_P_ATTN] = DEF("attention_dropout", 0), [K_P_RESID] = DEF("dropout", 0.1),
              [K_PROJ_DIM] = {.key = "word_embed_proj_dim", .how = D_HIDDEN}, [K_NORM_BEFORE] = DEF("do_layer_norm_before", 1),
              [K_NORM_AFFINE] = DEF("layer_norm_elementwise_affine", 1)},
     .block = BLK_OPT, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN, .pos = POS_LEARNED_OPT,
     .head = HEAD_LM, .lora_targets = "q_proj,v_proj"},
    /* PhiConfig (phi-1, phi-1.5, phi-2): parallel attention and MLP from one LayerNorm, partial rotary,
     * biases everywhere, an LM head with a bias */
    /* PhiConfig (configuration_phi.py @ 008e5743; phi-1.5's sizes): vocab_size 51200, hidden_size 2048,
     * intermediate_size 8192, num_hidden_layers 24, num_attention_heads 32, num_key_value_heads None: the heads */
    {.model_type = "phi", .config_class = "PhiConfig",
     .keys = {LLAMA_SIZES(51200, 2048, 8192, 24, 32), [K_KV_HEADS] = {.key = "num_key_value_heads", .how = D_HEADS},
              [K_EPS] = DEF("layer_norm_eps", 1e-5), [K_MAXPOS] = DEF("max_position_embeddings", 2048),
              [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("hidden_act", "gelu_new"),
              [K_TIE] = DEF("tie_word_embeddings", 0), [K_QKV_BIAS] = FIXED(1), [K_O_BIAS] = FIXED(1), [K_MLP_BIAS] = FIXED(1),
              [K_P_ATTN] = DEF("attention_dropout", 0), [K_P_RESID] = DEF("resid_pdrop", 0), [K_P_EMBD] = DEF("embd_pdrop", 0),
              [K_ROTARY] = DEF("partial_rotary_factor", 0.5), [K_QK_LAYERNORM] = DEF("qk_layernorm", 0)},
     .block = BLK_PHI, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN, .pos = POS_ROPE,
     .head = HEAD_LM, .rope_scaling = true, .lm_bias = true, .lora_targets = "q_proj,v_proj,fc1,fc2"},
    /* BertConfig (configuration_bert.py @ 008f5c8c; bert-base-uncased's), RobertaConfig (configuration_roberta.py
     * @ 0b03d5ce: "directly inherits BertConfig. It reuses the same defaults", pad_token_id 1) and
     * XLMRobertaConfig (configuration_xlm_roberta.py @ 0e6f6f74: the same values): vocab_size 30522, hidden_size
     * 768, num_hidden_layers 12, num_attention_heads 12, intermediate_size 3072, max_position_embeddings 512 */
#define BERT_KEYS                                                                                              \
    LLAMA_SIZES(30522, 768, 3072, 12, 12), [K_KV_HEADS] = {.how = D_HEADS}, [K_EPS] = DEF("layer_norm_eps", 1e-12), \
    [K_MAXPOS] = DEF("max_position_embeddings", 512),                                                         \
    [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("hidden_act", "gelu"),                                     \
    [K_P_ATTN] = DEF("attention_probs_dropout_prob", 0.1), [K_P_RESID] = DEF("hidden_dropout_prob", 0.1),    \
    [K_TYPES] = DEF("type_vocab_size", 2), [K_LABELS] = {.key = "id2label"},                                  \
    [K_P_CLS] = {.key = "classifier_dropout", .how = D_RESID}
    {.model_type = "bert", .config_class = "BertConfig", .keys = {BERT_KEYS},
     .block = BLK_BERT, .norm = NORM_LAYER, .place = PLACE_POST, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN, .pos = POS_LEARNED,
     .head = HEAD_POOLER_CLS, .head_class = "BertForSequenceClassification", .prefix = "bert", .lora_targets = "query,value"},
    {.model_type = "roberta", .config_class = "RobertaConfig", .keys = {BERT_KEYS, [K_PAD] = DEF("pad_token_id", 1)},
     .block = BLK_BERT, .norm = NORM_LAYER, .place = PLACE_POST, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN,
     .pos = POS_LEARNED_PAD, .head = HEAD_CLS, .head_class = "RobertaForSequenceClassification", .prefix = "roberta",
     .lora_targets = "query,value"},
    /* XLMRobertaConfig / modeling_xlm_roberta.py: RobertaConfig's keys and defaults, RoBERTa's modules
     * ("Copied from transformers.models.roberta.modeling_roberta" throughout), the base model under
     * `roberta` (XLMRobertaForSequenceClassification.roberta, XLMRobertaClassificationHead) */
    {.model_type = "xlm-roberta", .config_class = "XLMRobertaConfig", .keys = {BERT_KEYS, [K_PAD] = DEF("pad_token_id", 1)},
     .block = BLK_BERT, .norm = NORM_LAYER, .place = PLACE_POST, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN,
     .pos = POS_LEARNED_PAD, .head = HEAD_CLS, .head_class = "XLMRobertaForSequenceClassification", .prefix = "roberta",
     .lora_targets = "query,value"},
#undef BERT_KEYS
    /* GptOssConfig (configuration_gpt_oss.py @ 02b8f42b: the class defaults are gpt-oss-120b's;
     * layer_types "sliding_attention" if (i + 1) % 2 else "full_attention"); GptOssDecoderLayer
     * (modular_gpt_oss.py, transformers 5): LlamaDecoderLayer's norms, GptOssAttention (q/k/v/o
     * with attention_bias, sinks, eager attention only: _supports_sdpa = False), GptOssMLP
     * (GptOssTopKRouter with bias, GptOssExperts stacked with biases, clamped SwiGLU) */
    {.model_type = "gpt_oss", .config_class = "GptOssConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 201088), [K_HIDDEN] = DEF("hidden_size", 2880),
              [K_LAYERS] = DEF("num_hidden_layers", 36), [K_HEADS] = DEF("num_attention_heads", 64),
              [K_KV_HEADS] = DEF("num_key_value_heads", 8), [K_HEAD_DIM] = DEF("head_dim", 64),
              [K_INTER] = DEF("intermediate_size", 2880), [K_EPS] = DEF("rms_norm_eps", 1e-5),
              [K_MAXPOS] = DEF("max_position_embeddings", 131072), [K_QKV_BIAS] = DEF("attention_bias", 1),
              [K_O_BIAS] = DEF("attention_bias", 1), [K_WINDOW] = OFF_IF_NULL("sliding_window", 128),
              [K_LAYER_TYPES] = DEF("layer_types", 0), [K_WINDOW_PATTERN] = FIXED(2),
              [K_EXPERTS] = DEF("num_local_experts", 128), [K_TOPK] = DEF("num_experts_per_tok", 4),
              [K_MOE_INTER] = DEF("intermediate_size", 2880), [K_SWIGLU_ALPHA] = DEF("swiglu_alpha", 1.702),
              [K_SWIGLU_LIMIT] = DEF("swiglu_limit", 7.0)},
     LLAMA_BLOCK, .norm = NORM_RMS_F32, .moe = MOE_GPT_OSS, .window = WIN_PATTERN, .eager = true, .sinks = true, .half_rope = true,
     .lora_targets = NULL /* PEFT's mapping (peft @ 00073fe8 utils/constants.py) has no gpt_oss */},
    /* Gemma3TextConfig (transformers 5: layer_types, else "sliding_attention" if (i + 1) %
     * sliding_window_pattern (6) else "full_attention"); Gemma3DecoderLayer: Gemma2's four norms,
     * Gemma3Attention with q_norm / k_norm (Gemma3RMSNorm over head_dim), scaling
     * query_pre_attn_scalar**-0.5, sdpa by default (no soft-capping there); Gemma3TextModel:
     * Gemma3TextScaledWordEmbedding (x embed_scale), a rotary embedding per layer type
     * (rope_theta for full layers, rope_local_base_freq for sliding ones) */
#define GEMMA3_KEYS                                                                                            \
    LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 262208), [K_HIDDEN] = DEF("hidden_size", 2304),                \
    [K_LAYERS] = DEF("num_hidden_layers", 26), [K_HEADS] = DEF("num_attention_heads", 8),                    \
    [K_KV_HEADS] = DEF("num_key_value_heads", 4), [K_INTER] = DEF("intermediate_size", 9216),                \
    [K_HEAD_DIM] = DEF("head_dim", 256), [K_MAXPOS] = DEF("max_position_embeddings", 131072),                \
    [K_ACT] = {.key = "hidden_activation", .alt = "hidden_act", .sdef = "gelu_pytorch_tanh"},                \
    [K_TIE] = DEF("tie_word_embeddings", 1), [K_QKV_BIAS] = DEF("attention_bias", 0),                        \
    [K_O_BIAS] = DEF("attention_bias", 0), [K_WINDOW] = OFF_IF_NULL("sliding_window", 4096),                  \
    [K_FINAL_CAP] = OFF_IF_NULL("final_logit_softcapping", 0), [K_ATTN_CAP] = OFF_IF_NULL("attn_logit_softcapping", 0), \
    [K_LAYER_TYPES] = DEF("layer_types", 0), [K_WINDOW_PATTERN] = DEF("sliding_window_pattern", 6),          \
    [K_QUERY_SCALAR] = DEF("query_pre_attn_scalar", 256), [K_ROPE_LOCAL] = DEF("rope_local_base_freq", 10000.0)
#define GEMMA3_BLOCK                                                                                           \
    LLAMA_BLOCK, .norm = NORM_RMS_GEMMA, .place = PLACE_SANDWICH, .window = WIN_PATTERN, .embed_scale = true, \
    .qk_norm = QK_PER_HEAD, .local_rope = true
    {.model_type = "gemma3_text", .config_class = "Gemma3TextConfig", .keys = {GEMMA3_KEYS}, GEMMA3_BLOCK,
     .lora_targets = "q_proj,v_proj" /* peft @ 00073fe8 utils/constants.py */},
    /* Gemma3Config: the language model is Gemma3TextConfig's, read from text_config; the SigLIP
     * tower and Gemma3MultiModalProjector of Gemma3ForConditionalGeneration from vision_config and
     * mm_tokens_per_image (src/hf/hf_vision.c) */
    {.model_type = "gemma3", .config_class = "Gemma3TextConfig (Gemma3Config.text_config)", .keys = {GEMMA3_KEYS},
     GEMMA3_BLOCK, .nested = "text_config", .vision = VIS_SIGLIP,
     .lora_targets = NULL /* PEFT's mapping has gemma3_text only */},
#undef GEMMA3_KEYS
#undef GEMMA3_BLOCK
    /* Gemma4TextConfig (configuration_gemma4.py, transformers v5.5) and modeling_gemma4.py @ 0246b4f3
     * (src/hf/hf_gemma4.c): Gemma4RMSNorm (x * w, not Gemma 3's x * (1 + w)), the four norms, q_norm / k_norm,
     * scaled embeddings and final softcapping, with the full-attention layers' global_head_dim and
     * num_global_key_value_heads, attention_k_eq_v, the kv-shared layers, the per-layer embeddings and
     * the MoE block beside the dense MLP. The parameters are counted, the layers written (hf_gemma4.c). */
#define GEMMA4_KEYS                                                                                            \
    LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 262144), [K_HIDDEN] = DEF("hidden_size", 2304),                \
    [K_LAYERS] = DEF("num_hidden_layers", 30), [K_HEADS] = DEF("num_attention_heads", 8),                    \
    [K_KV_HEADS] = DEF("num_key_value_heads", 4), [K_INTER] = DEF("intermediate_size", 9216),                \
    [K_HEAD_DIM] = DEF("head_dim", 256), [K_MAXPOS] = DEF("max_position_embeddings", 131072),                \
    [K_ACT] = {.key = "hidden_activation", .sdef = "gelu_pytorch_tanh"},                                     \
    [K_TIE] = DEF("tie_word_embeddings", 1), [K_QKV_BIAS] = DEF("attention_bias", 0),                        \
    [K_O_BIAS] = DEF("attention_bias", 0), [K_WINDOW] = DEF("sliding_window", 512),                          \
    [K_FINAL_CAP] = OFF_IF_NULL("final_logit_softcapping", 0)
    {.model_type = "gemma4_text", .config_class = "Gemma4TextConfig", .keys = {GEMMA4_KEYS}, LLAMA_BLOCK,
     .block = BLK_GEMMA4, .embed_scale = true, .qk_norm = QK_PER_HEAD, .lora_targets = NULL},
    /* Gemma4Config: the language model from text_config; vision_config's Gemma4VisionModel and
     * audio_config's Gemma4AudioModel with their Gemma4MultimodalEmbedders counted (hf_gemma4.c) */
    {.model_type = "gemma4", .config_class = "Gemma4TextConfig (Gemma4Config.text_config)", .keys = {GEMMA4_KEYS},
     LLAMA_BLOCK, .block = BLK_GEMMA4, .embed_scale = true, .qk_norm = QK_PER_HEAD, .nested = "text_config",
     .lora_targets = NULL},
#undef GEMMA4_KEYS
    /* DistilBertConfig (configuration_distilbert.py) and
     * modeling_distilbert.py (huggingface/transformers @00b326f4): Embeddings (word + learned positions,
     * LayerNorm eps 1e-12, dropout; no token types), TransformerBlock (MultiHeadSelfAttention q/k/v/out_lin
     * with biases, dropout on the probabilities; sa_layer_norm(out + x); FFN lin1, activation, lin2,
     * dropout; output_layer_norm(ffn + sa)), DistilBertForSequenceClassification (hidden[:, 0],
     * pre_classifier, ReLU, dropout(seq_classif_dropout), classifier). PEFT: q_lin, v_lin. */
    /* DistilBertConfig's defaults (configuration_distilbert.py @ 06053b84, distilbert-base-uncased's):
     * vocab_size 30522, max_position_embeddings 512, n_layers 6, n_heads 12, dim 768, hidden_dim 3072;
     * attribute_map: hidden_size, num_attention_heads, num_hidden_layers read for dim, n_heads, n_layers */
    {.model_type = "distilbert", .config_class = "DistilBertConfig",
     .keys = {[K_VOCAB] = DEF("vocab_size", 30522), [K_HIDDEN] = DEF_ALT("dim", "hidden_size", 768),
              [K_LAYERS] = DEF_ALT("n_layers", "num_hidden_layers", 6), [K_HEADS] = DEF_ALT("n_heads", "num_attention_heads", 12),
              [K_KV_HEADS] = {.how = D_HEADS}, [K_EPS] = FIXED(1e-12),
              [K_MAXPOS] = DEF("max_position_embeddings", 512), [K_INTER] = DEF("hidden_dim", 3072),
              [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("activation", "gelu"),
              [K_P_ATTN] = DEF("attention_dropout", 0.1), [K_P_RESID] = DEF("dropout", 0.1),
              [K_LABELS] = {.key = "id2label"}, [K_P_CLS] = DEF("seq_classif_dropout", 0.2),
              [K_SINUSOIDAL] = DEF("sinusoidal_pos_embds", 0)},
     .block = BLK_DISTILBERT, .norm = NORM_LAYER, .place = PLACE_POST, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN,
     .pos = POS_LEARNED, .head = HEAD_DISTIL, .head_class = "DistilBertForSequenceClassification", .prefix = "distilbert",
     .lora_targets = "q_lin,v_lin"},
    /* T5Config (configuration_t5.py) and T5ForConditionalGeneration (modeling_t5.py), huggingface/transformers
     * @ 6b8b757d: every size has a default (t5-small's); layer_norm_epsilon, dropout_rate, tie_word_embeddings
     * (PretrainedConfig: True; flan-t5 and T5 v1.1 false). feed_forward_proj, is_gated_act, dense_act_fn,
     * is_encoder_decoder and the buckets' consistency: hf_t5.c, which counts the parameters; the memory is
     * not modelled yet and vc_hf_build refuses it. PEFT: q, v. */
    {.model_type = "t5", .config_class = "T5Config",
     .keys = {[K_VOCAB] = DEF("vocab_size", 32128), [K_HIDDEN] = DEF("d_model", 512), [K_LAYERS] = DEF("num_layers", 6),
              [K_HEADS] = DEF("num_heads", 8), [K_KV_HEADS] = {.how = D_HEADS}, [K_EPS] = DEF("layer_norm_epsilon", 1e-6),
              [K_INTER] = DEF("d_ff", 2048), [K_HEAD_DIM] = DEF("d_kv", 64), [K_TIE] = DEF("tie_word_embeddings", 1),
              [K_P_RESID] = DEF("dropout_rate", 0.1), [K_DEC_LAYERS] = DEF("num_decoder_layers", 0),
              [K_REL_BUCKETS] = DEF("relative_attention_num_buckets", 32),
              [K_REL_MAXDIST] = DEF("relative_attention_max_distance", 128)},
     .block = BLK_T5, .norm = NORM_RMS, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN, .pos = POS_ROPE,
     .head = HEAD_LM, .head_class = "T5ForConditionalGeneration", .lora_targets = "q,v"},
    /* WhisperConfig (configuration_whisper.py: every size has a default, whisper-tiny's: d_model 384, 4 + 4
     * layers of 6 heads, ffn 1536, 80 mel bins, 1500 source and 448 target positions, vocab 51865; dropouts
     * 0; tie_word_embeddings PretrainedConfig's True) and WhisperForConditionalGeneration (modeling_whisper.py
     * @ efa7189c, src/hf/hf_whisper.c): conv1 / conv2 and the frozen sinusoidal embed_positions before pre-LN
     * encoder layers, a decoder with learned positions, self- and cross-attention, proj_out tied to
     * embed_tokens. The decoder's keys, the layerdrops, apply_spec_augment: hf_whisper.c. PEFT's mapping (peft
     * @ 00073fe8 utils/constants.py) has no whisper: --lora-targets. */
    {.model_type = "whisper", .config_class = "WhisperConfig",
     .keys = {[K_VOCAB] = DEF("vocab_size", 51865), [K_HIDDEN] = DEF("d_model", 384), [K_LAYERS] = DEF("encoder_layers", 4),
              [K_HEADS] = DEF("encoder_attention_heads", 6), [K_KV_HEADS] = {.how = D_HEADS},
              [K_EPS] = FIXED(1e-5) /* nn.LayerNorm(d_model) */, [K_MAXPOS] = DEF("max_target_positions", 448),
              [K_INTER] = DEF("encoder_ffn_dim", 1536), [K_HEAD_DIM] = {.how = D_SPLIT},
              [K_ACT] = ACT("activation_function", "gelu"), [K_TIE] = DEF("tie_word_embeddings", 1),
              [K_P_ATTN] = DEF("attention_dropout", 0), [K_P_RESID] = DEF("dropout", 0),
              [K_DEC_LAYERS] = DEF("decoder_layers", 4), [K_DEC_HEADS] = DEF("decoder_attention_heads", 6),
              [K_DEC_INTER] = DEF("decoder_ffn_dim", 1536), [K_MEL] = DEF("num_mel_bins", 80),
              [K_SRC_POS] = DEF("max_source_positions", 1500), [K_P_ACT] = DEF("activation_dropout", 0)},
     .block = BLK_WHISPER, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN,
     .pos = POS_LEARNED, .head = HEAD_LM, .head_class = "WhisperForConditionalGeneration", .lora_targets = NULL},
    /* FalconConfig (models/falcon/configuration_falcon.py; every key has a default: the class describes
     * tiiuae/falcon-7b) and modeling_falcon.py @00dcc6dd: FalconModel (word_embeddings, rotary_emb,
     * h, ln_f), FalconDecoderLayer (input_layernorm, or ln_attn + ln_mlp with new_decoder_architecture;
     * parallel_attn: attention and MLP on the same normed input, mlp_output += attention_output),
     * FalconAttention (query_key_value of (H + 2 KV) x D, KV = num_kv_heads with
     * new_decoder_architecture, else 1 with multi_query, else H; dense), FalconMLP (dense_h_to_4h of
     * ffn_hidden_size, default 4 x hidden, activation, dense_4h_to_h); FalconForCausalLM's lm_head tied
     * (PretrainedConfig's tie_word_embeddings). alibi and bias are refused (hf_read.c read_falcon).
     * PEFT: query_key_value. */
    {.model_type = "falcon", .config_class = "FalconConfig",
     .keys = {[K_VOCAB] = DEF("vocab_size", 65024), [K_HIDDEN] = DEF("hidden_size", 4544),
              [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 71),
              [K_KV_HEADS] = {.key = "num_kv_heads", .how = D_HEADS}, [K_EPS] = DEF("layer_norm_epsilon", 1e-5),
              [K_MAXPOS] = DEF("max_position_embeddings", 2048), [K_INTER] = {.key = "ffn_hidden_size", .how = D_4H},
              [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("activation", "gelu"), [K_TIE] = DEF("tie_word_embeddings", 1),
              [K_QKV_BIAS] = DEF("bias", 0), [K_P_ATTN] = DEF("attention_dropout", 0), [K_P_RESID] = DEF("hidden_dropout", 0),
              [K_ROTARY] = FIXED(1), [K_PARALLEL] = DEF("parallel_attn", 1), [K_MULTI_QUERY] = DEF("multi_query", 1),
              [K_NEW_ARCH] = DEF("new_decoder_architecture", 0), [K_ALIBI] = DEF("alibi", 0),
              [K_NUM_LN] = OFF_IF_NULL("num_ln_in_parallel_attn", 0)},
     .block = BLK_FALCON, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_FUSED, .mlp = MLP_PLAIN, .pos = POS_ROPE,
     .head = HEAD_LM, .rope_scaling = true, .lora_targets = "query_key_value" /* peft utils/constants.py */},
    /* Qwen2_5_VLConfig (configuration_qwen2_5_vl.py @ aa0dc95c): the language model is Qwen2's with its own
     * defaults, read from text_config when the config has one (transformers 5), else from the config itself
     * (the released checkpoints' config.json); the vision tower from vision_config (src/hf/hf_vision.c).
     * Qwen2_5_VLAttention: q/k/v with biases, o_proj without; mrope (rope_scaling "mrope": 3-D positions,
     * the cos/sin sizes of 1-D rope) */
    {.model_type = "qwen2_5_vl", .config_class = "Qwen2_5_VLConfig", .keys = {QWEN2_VL_KEYS},
     LLAMA_BLOCK, .window = WIN_FROM_LAYER, .nested = "text_config", .nested_opt = true, .vision = VIS_QWEN2_5,
     .lora_targets = NULL /* none assumed: name --lora-targets (the tower has q/k/v as one qkv) */},
    /* Qwen2VLConfig (configuration_qwen2_vl.py @ 018c8e03): sub_configs vision_config (Qwen2VLVisionConfig) and
     * text_config (Qwen2VLTextConfig, whose defaults are Qwen2_5_VL's text defaults: vocab 152064, hidden 8192,
     * intermediate 29568, 80 layers, 64 heads, 8 kv heads, rms_norm_eps 1e-5, max_position_embeddings 32768,
     * max_window_layers 80, sliding_window 4096 used only with use_sliding_window); without text_config "for BC
     * use all kwargs to init TextConfig": the config's own keys, as the released checkpoints' config.json has them.
     * The decoder (modeling_qwen2_vl.py @ efa7189c Qwen2VLAttention: q/k/v with biases, o_proj without; Qwen2MLP;
     * Qwen2RMSNorm; Qwen2VLRotaryEmbedding's mrope: 3-D positions, the cos/sin sizes of 1-D rope) is
     * Qwen2.5-VL's; the tower is Qwen2VisionTransformerPretrainedModel (src/hf/hf_vision.c read_qwen2). */
    {.model_type = "qwen2_vl", .config_class = "Qwen2VLConfig", .keys = {QWEN2_VL_KEYS},
     LLAMA_BLOCK, .window = WIN_FROM_LAYER, .nested = "text_config", .nested_opt = true, .vision = VIS_QWEN2,
     .lora_targets = NULL /* none assumed: name --lora-targets (the tower has q/k/v as one qkv) */},
    /* Llama4TextConfig (configuration_llama4.py @ 008e5743: the class's defaults are
     * Llama-4-Scout-17B-16E's) and modeling_llama4.py (huggingface/transformers @ 000c33fd):
     * Llama4TextDecoderLayer (input_layernorm, Llama4TextAttention q/k/v/o with attention_bias,
     * post_attention_layernorm, feed_forward: Llama4TextMoe in config.moe_layers, else
     * Llama4TextMLP of intermediate_size_mlp); Llama4TextMoe: router nn.Linear(hidden,
     * num_local_experts), Llama4TextExperts gate_up_proj [E, H, 2 intermediate_size] and
     * down_proj [E, intermediate_size, H], shared_expert Llama4TextMLP(intermediate_size).
     * The parameters are counted (hf_llama4.c), the layers written by hf_layers.c (Llama4TextMoe as
     * SparseMoE style llama4, Llama4TextAttention as RotaryAttention with rope_style llama4, the L2
     * qk norm, the temperature tuning and the chunked layers' cache). num_key_value_heads: absent 8,
     * null num_attention_heads; head_dim:
     * absent 128, null hidden_size // heads (__post_init__; hf_llama4.c) */
#define LLAMA4_KEYS                                                                                            \
    LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 202048), [K_HIDDEN] = DEF("hidden_size", 5120),               \
    [K_LAYERS] = DEF("num_hidden_layers", 48), [K_HEADS] = DEF("num_attention_heads", 40),                   \
    [K_KV_HEADS] = {.key = "num_key_value_heads", .how = D_HEADS}, [K_HEAD_DIM] = DEF("head_dim", 128),    \
    [K_INTER] = DEF("intermediate_size_mlp", 16384), [K_EPS] = DEF("rms_norm_eps", 1e-5),                   \
    [K_MAXPOS] = DEF("max_position_embeddings", 131072), [K_QKV_BIAS] = DEF("attention_bias", 0),            \
    [K_O_BIAS] = DEF("attention_bias", 0), [K_EXPERTS] = DEF("num_local_experts", 16),                       \
    [K_TOPK] = DEF("num_experts_per_tok", 1), [K_MOE_INTER] = DEF("intermediate_size", 8192),               \
    [K_SPARSE_STEP] = DEF("interleave_moe_layer_step", 1), [K_USE_QK_NORM] = DEF("use_qk_norm", 1),          \
    [K_NOPE_INTERVAL] = DEF("no_rope_layer_interval", 4)
    /* experts_fixed: Llama4TextExperts holds stacked nn.Parameters and runs torch.bmm over them
     * (modeling_llama4.py @000c33fd Llama4TextExperts.forward) in every release since 4.51 added
     * Llama 4: no per-expert nn.ModuleList, so 4.x's per_expert default is not its */
    {.model_type = "llama4_text", .config_class = "Llama4TextConfig", .keys = {LLAMA4_KEYS}, LLAMA_BLOCK,
     .moe = MOE_LLAMA4, .nope = true, .lora_targets = NULL, .experts_fixed = true},
    /* Llama4Config: the language model is Llama4TextConfig's, read from text_config (the vision
     * tower and projector of Llama4ForConditionalGeneration are not counted) */
    {.model_type = "llama4", .config_class = "Llama4TextConfig (Llama4Config.text_config)", .keys = {LLAMA4_KEYS},
     LLAMA_BLOCK, .moe = MOE_LLAMA4, .nope = true, .nested = "text_config", .lora_targets = NULL, .experts_fixed = true},
#undef LLAMA4_KEYS
    /* Qwen3VLConfig (configuration_qwen3_vl.py @ 000c33fd): the language model is Qwen3VLTextConfig's, read
     * from text_config (its defaults: Qwen3-VL-4B's shapes but intermediate_size 22016, 32 layers, kv heads
     * 32, head_dim 128, max_position_embeddings 128000); Qwen3VLTextModel (modeling_qwen3_vl.py @ 00709b86)
     * is Qwen3's decoder (q_norm / k_norm per head, q/k/v/o with attention_bias) with interleaved MRoPE
     * (rope_scaling's mrope_section: the 1-D rope's cos / sin sizes at 3-D positions); the vision tower
     * from vision_config (src/hf/hf_vision.c: its weights, frozen; run with its deepstack on --image) */
    {.model_type = "qwen3_vl", .config_class = "Qwen3VLTextConfig (Qwen3VLConfig.text_config)",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 151936), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_INTER] = DEF("intermediate_size", 22016), [K_LAYERS] = DEF("num_hidden_layers", 32),
              [K_HEADS] = DEF("num_attention_heads", 32), [K_KV_HEADS] = DEF("num_key_value_heads", 32),
              [K_HEAD_DIM] = DEF("head_dim", 128), [K_MAXPOS] = DEF("max_position_embeddings", 128000),
              [K_QKV_BIAS] = DEF("attention_bias", 0), [K_O_BIAS] = DEF("attention_bias", 0)},
     LLAMA_BLOCK, .qk_norm = QK_PER_HEAD, .nested = "text_config", .vision = VIS_QWEN3,
     .lora_targets = NULL /* PEFT's mapping has no qwen3_vl: name --lora-targets */},
    /* ModernBertConfig (configuration_modernbert.py: every size has a default, ModernBERT-base's) and
     * modeling_modernbert.py @ 000c33fd (src/hf/hf_modernbert.c): ModernBertForSequenceClassification on
     * sdpa with its float global and sliding-window masks (layers/llm.c bidir_masks), a local layer
     * wherever layer_id % global_attn_every_n_layers != 0 (window local_attention // 2 each side), GeGLU
     * MLP, LayerNorms without bias unless norm_bias. PEFT's mapping has no modernbert: --lora-targets. */
    {.model_type = "modernbert", .config_class = "ModernBertConfig",
     .keys = {[K_VOCAB] = DEF("vocab_size", 50368), [K_HIDDEN] = DEF("hidden_size", 768),
              [K_LAYERS] = DEF("num_hidden_layers", 22), [K_HEADS] = DEF("num_attention_heads", 12),
              [K_KV_HEADS] = {.how = D_HEADS}, [K_EPS] = DEF("norm_eps", 1e-5),
              [K_MAXPOS] = DEF("max_position_embeddings", 8192), [K_INTER] = DEF("intermediate_size", 1152),
              [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("hidden_activation", "gelu"),
              [K_QKV_BIAS] = DEF("attention_bias", 0), [K_O_BIAS] = DEF("attention_bias", 0),
              [K_MLP_BIAS] = DEF("mlp_bias", 0), [K_P_ATTN] = DEF("attention_dropout", 0),
              [K_P_EMBD] = DEF("embedding_dropout", 0), [K_P_RESID] = DEF("mlp_dropout", 0),
              [K_P_CLS] = DEF("classifier_dropout", 0), [K_LABELS] = {.key = "id2label"}, [K_ROTARY] = FIXED(1),
              [K_USE_WINDOW] = FIXED(1), [K_WINDOW] = DEF("local_attention", 128),
              [K_WINDOW_PATTERN] = DEF("global_attn_every_n_layers", 3), [K_LAYER_TYPES] = DEF("layer_types", 0)},
     .block = BLK_MODERNBERT, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_FUSED, .mlp = MLP_GATED_FUSED,
     .pos = POS_ROPE, .head = HEAD_MODERNBERT, .head_class = "ModernBertForSequenceClassification", .prefix = "model",
     .lora_targets = NULL},
    /* DeepseekV2Config (configuration_deepseek_v2.py @ 008e5743; DeepSeek-V2, V2-Lite, V2.5,
     * DeepSeek-Coder-V2) and modeling_deepseek_v2.py @ 0233e509 (src/hf/hf_deepseek_v2.c): DeepSeek-V3's
     * modules (MLA, dense layers below first_k_dense_replace, stacked experts and shared experts) with
     * DeepseekV2Attention's complex rotation (apply_rotary_emb on freqs_cis) and DeepseekV2Moe's softmax
     * routing, topk_method greedy or group_limited_greedy, no correction bias, no renormalisation; the
     * sizes LlamaConfig's defaults (32000, 4096, 11008, 32 layers, 32 heads; num_key_value_heads None: the
     * heads), attribute_map num_experts -> n_routed_experts; num_experts_per_tok is required (None by
     * default: topk fails) */
    {.model_type = "deepseek_v2", .config_class = "DeepseekV2Config",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(32000, 4096, 11008, 32, 32), [K_HEAD_DIM] = DEF("qk_rope_head_dim", 64), [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0), [K_MLP_BIAS] = DEF("mlp_bias", 0),
              [K_EXPERTS] = DEF_ALT("n_routed_experts", "num_experts", 64), [K_TOPK] = REQ("num_experts_per_tok"),
              [K_MOE_INTER] = DEF("moe_intermediate_size", 1407), [K_NORM_TOPK] = DEF("norm_topk_prob", 0),
              [K_Q_LORA] = OFF_IF_NULL("q_lora_rank", 1536), [K_KV_LORA] = DEF("kv_lora_rank", 512),
              [K_QK_NOPE] = DEF("qk_nope_head_dim", 128), [K_V_HEAD] = DEF("v_head_dim", 128),
              [K_N_SHARED] = DEF("n_shared_experts", 2), [K_N_GROUP] = DEF("n_group", 1),
              [K_TOPK_GROUP] = DEF("topk_group", 1), [K_FIRST_DENSE] = DEF("first_k_dense_replace", 0),
              [K_ROUTED_SCALE] = DEF("routed_scaling_factor", 1.0)},
     LLAMA_BLOCK, .attn = ATTN_MLA, .moe = MOE_DEEPSEEK, .rope_scaling = true, .lora_targets = NULL, .ds_v2 = true},
    /* DeepseekV32Config (configuration_deepseek_v32.py @ 008e5743; DeepSeek-V3.2-Exp, DeepSeek-V3.2):
     * DeepSeek-V3's keys and modules plus the DeepSeek Sparse Attention indexer in every layer
     * (index_n_heads, index_head_dim, index_topk: src/hf/hf_deepseek_v32.c); the sizes DeepSeek-V3's
     * (129280, 7168, 18432, 61 layers, 128 heads; num_key_value_heads shapes no MLA weight: the heads). DeepSeek-V3's layers with the indexer in MLAttention (hf_layers.c, layers/mla.c:
     * transformers' forward); under --serve its memory src/engine/serve.c's */
    {.model_type = "deepseek_v32", .config_class = "DeepseekV32Config",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(129280, 7168, 18432, 61, 128), [K_MAXPOS] = DEF("max_position_embeddings", 163840), [K_HEAD_DIM] = DEF("qk_rope_head_dim", 64),
              [K_QKV_BIAS] = DEF("attention_bias", 0), [K_O_BIAS] = DEF("attention_bias", 0),
              [K_EXPERTS] = DEF("n_routed_experts", 256), [K_TOPK] = DEF("num_experts_per_tok", 8),
              [K_MOE_INTER] = DEF("moe_intermediate_size", 2048), [K_NORM_TOPK] = DEF("norm_topk_prob", 1),
              [K_Q_LORA] = OFF_IF_NULL("q_lora_rank", 1536), [K_KV_LORA] = DEF("kv_lora_rank", 512),
              [K_QK_NOPE] = DEF("qk_nope_head_dim", 128), [K_V_HEAD] = DEF("v_head_dim", 128),
              [K_N_SHARED] = DEF("n_shared_experts", 1), [K_N_GROUP] = DEF("n_group", 8), [K_TOPK_GROUP] = DEF("topk_group", 4),
              [K_FIRST_DENSE] = DEF("first_k_dense_replace", 3), [K_NEXTN] = DEF("num_nextn_predict_layers", 0),
              [K_ROUTED_SCALE] = DEF("routed_scaling_factor", 2.5)},
     LLAMA_BLOCK, .attn = ATTN_MLA, .moe = MOE_DEEPSEEK, .rope_scaling = true, .lora_targets = NULL, .dsa = true},
    /* GlmMoeDsaConfig (GLM-5; configuration_glm_moe_dsa.py @ 008e5743, the class's defaults GLM-5's: vocab_size 154880,
     * hidden_size 6144, intermediate_size 12288, moe_intermediate_size 2048, num_hidden_layers 78, num_attention_heads 64,
     * num_key_value_heads 64 (shapes no MLA weight), n_routed_experts 256 (attribute_map num_local_experts),
     * n_shared_experts 1, num_experts_per_tok 8, routed_scaling_factor 2.5, n_group / topk_group 1, q_lora_rank 2048,
     * kv_lora_rank 512, qk_nope_head_dim 192, qk_rope_head_dim 64 (head_dim set to it by __post_init__), v_head_dim 256,
     * max_position_embeddings 202752, rms_norm_eps 1e-5, first_k_dense_replace 3, index_n_heads 32, index_head_dim 128,
     * index_topk 2048, untied). GlmMoeDsaAttention (modular_glm_moe_dsa.py @ 01f8fa55) is DeepSeek-V3.2's layer with
     * DeepSeek-V3's interleaved rotation (no rope_interleave key: always) in the attention and in the indexer
     * (.dsa_glm); indexer_types "shared" layers (no indexer, the previous full layer's top-k) are refused
     * (src/hf/hf_deepseek_v32.c). The MTP layer (model.layers.78) is read, not built */
    {.model_type = "glm_moe_dsa", .config_class = "GlmMoeDsaConfig",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(154880, 6144, 12288, 78, 64), [K_KV_HEADS] = DEF("num_key_value_heads", 64),
              [K_EPS] = DEF("rms_norm_eps", 1e-5), [K_MAXPOS] = DEF("max_position_embeddings", 202752),
              [K_HEAD_DIM] = DEF("qk_rope_head_dim", 64), [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0),
              [K_EXPERTS] = DEF_ALT("n_routed_experts", "num_local_experts", 256), [K_TOPK] = DEF("num_experts_per_tok", 8),
              [K_MOE_INTER] = DEF("moe_intermediate_size", 2048), [K_NORM_TOPK] = DEF("norm_topk_prob", 1),
              [K_Q_LORA] = OFF_IF_NULL("q_lora_rank", 2048), [K_KV_LORA] = DEF("kv_lora_rank", 512),
              [K_QK_NOPE] = DEF("qk_nope_head_dim", 192), [K_V_HEAD] = DEF("v_head_dim", 256),
              [K_N_SHARED] = DEF("n_shared_experts", 1), [K_N_GROUP] = DEF("n_group", 1), [K_TOPK_GROUP] = DEF("topk_group", 1),
              [K_FIRST_DENSE] = DEF("first_k_dense_replace", 3), [K_NEXTN] = DEF("num_nextn_predict_layers", 0),
              [K_ROPE_INTERLEAVE] = FIXED(1), [K_ROUTED_SCALE] = DEF("routed_scaling_factor", 2.5)},
     LLAMA_BLOCK, .attn = ATTN_MLA, .moe = MOE_DEEPSEEK, .rope_scaling = true, .lora_targets = NULL, .dsa = true,
     .dsa_glm = true},
    /* Glm4Config (models/glm4/configuration_glm4.py @ 008e5743: every key has a default, GLM-4-9B's:
     * vocab 151552, hidden 4096, intermediate 13696, 40 layers, 32 heads, 2 kv heads, head_dim 128,
     * rms_norm_eps 1.5625e-07, max_position_embeddings 131072, attention_bias true, untied;
     * __post_init__: partial_rotary_factor 0.5 by default) and Glm4ForCausalLM (modeling_glm4.py
     * @ 00d01786): Glm4DecoderLayer's four Glm4RMSNorms (LlamaRMSNorm's ops; PLACE_SANDWICH_GLM4),
     * Glm4Attention (q/k/v with attention_bias, o_proj without; head_dim scaling; interleaved partial
     * rotary), Glm4MLP (gate_up_proj, chunk(2), up * act(gate), down_proj: Phi3MLP's ops). PEFT's
     * mapping (peft @ 00073fe8 utils/constants.py) has no glm4: --lora-targets */
    {.model_type = "glm4", .config_class = "Glm4Config",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 151552), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_INTER] = DEF("intermediate_size", 13696), [K_LAYERS] = DEF("num_hidden_layers", 40),
              [K_HEADS] = DEF("num_attention_heads", 32), [K_KV_HEADS] = DEF("num_key_value_heads", 2),
              [K_HEAD_DIM] = DEF("head_dim", 128), [K_EPS] = DEF("rms_norm_eps", 1.5625e-7),
              [K_MAXPOS] = DEF("max_position_embeddings", 131072), [K_QKV_BIAS] = DEF("attention_bias", 1),
              [K_O_BIAS] = FIXED(0), [K_ROTARY] = DEF("partial_rotary_factor", 0.5)},
     LLAMA_BLOCK, .place = PLACE_SANDWICH_GLM4, .mlp = MLP_GATED_FUSED, .interleaved_rope = true, .lora_targets = NULL},
    /* Olmo3Config (models/olmo3/configuration_olmo3.py @ 008e5743: every key has a default, OLMo-3-7B's shapes:
     * vocab 50304, hidden 4096, intermediate 11008, 32 layers of 32 heads, kv heads None: the heads,
     * max_position_embeddings 2048, rms_norm_eps 1e-5, sliding_window 4096; __post_init__'s layer_types
     * "sliding_attention" if (i + 1) % 4 else "full_attention") and Olmo3ForCausalLM (modeling_olmo3.py
     * @ 0233e509): Olmo2's norms (post_attention_layernorm, post_feedforward_layernorm after each sublayer, none
     * before; q_norm / k_norm over the whole projection), Olmo3RMSNorm's (weight * x.float()).to(dtype), one
     * rotary embedding for both layer types, the sliding layers' window from create_sliding_window_causal_mask.
     * PEFT's mapping has no olmo3: --lora-targets */
    {.model_type = "olmo3", .config_class = "Olmo3Config",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 50304), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_INTER] = DEF("intermediate_size", 11008), [K_LAYERS] = DEF("num_hidden_layers", 32),
              [K_HEADS] = DEF("num_attention_heads", 32), [K_EPS] = DEF("rms_norm_eps", 1e-5),
              [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0), [K_WINDOW] = OFF_IF_NULL("sliding_window", 4096),
              [K_LAYER_TYPES] = DEF("layer_types", 0), [K_WINDOW_PATTERN] = FIXED(4)},
     LLAMA_BLOCK, .norm = NORM_RMS_OLMO, .place = PLACE_SUBLAYER, .qk_norm = QK_WHOLE, .window = WIN_PATTERN,
     .lora_targets = NULL},
    /* Starcoder2Config (models/starcoder2/configuration_starcoder2.py @ 008e5743: every key has a default,
     * StarCoder2-7B's shapes: vocab 49152, hidden 3072, intermediate 12288, 30 layers, 24 heads over 2 kv
     * heads, gelu_pytorch_tanh, 4096 positions, norm_epsilon 1e-5, sliding_window None, the three dropouts 0,
     * use_bias true, tied) and Starcoder2ForCausalLM (modeling_starcoder2.py @ 73faa33f): Starcoder2Model
     * (embed_tokens, embedding_dropout, one rotary_emb, the layers, norm: nn.LayerNorm), Starcoder2DecoderLayer
     * (pre-norm nn.LayerNorms with bias), Starcoder2Attention (q/k/v/o_proj with bias=use_bias, o_proj's output
     * through dropout(residual_dropout); sliding_window on every layer when set), Starcoder2MLP (c_fc, act,
     * c_proj with bias=use_bias, dropout(residual_dropout)). PEFT's mapping has no starcoder2: --lora-targets */
    {.model_type = "starcoder2", .config_class = "Starcoder2Config",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 49152), [K_HIDDEN] = DEF("hidden_size", 3072),
              [K_INTER] = DEF("intermediate_size", 12288), [K_LAYERS] = DEF("num_hidden_layers", 30),
              [K_HEADS] = DEF("num_attention_heads", 24), [K_KV_HEADS] = DEF("num_key_value_heads", 2),
              [K_EPS] = DEF("norm_epsilon", 1e-5), [K_MAXPOS] = DEF("max_position_embeddings", 4096),
              [K_ACT] = ACT("hidden_act", "gelu_pytorch_tanh"), [K_TIE] = DEF("tie_word_embeddings", 1),
              [K_QKV_BIAS] = DEF("use_bias", 1), [K_O_BIAS] = DEF("use_bias", 1), [K_MLP_BIAS] = DEF("use_bias", 1),
              [K_P_RESID] = DEF("residual_dropout", 0), [K_P_EMBD] = DEF("embedding_dropout", 0),
              [K_WINDOW] = OFF_IF_NULL("sliding_window", 0)},
     LLAMA_BLOCK, .norm = NORM_LAYER, .mlp = MLP_PLAIN, .lora_targets = NULL},
    /* Qwen3VLMoeConfig (configuration_qwen3_vl_moe.py @ 008e5743): the language model is Qwen3VLMoeTextConfig's,
     * read from text_config (its defaults: vocab 151936, hidden 2048, intermediate_size 5632, 24 layers, 16 heads,
     * 16 kv heads, head_dim None: hidden // heads, max_position_embeddings 128000, num_experts 60 (attribute_map:
     * num_local_experts), top-4, moe_intermediate_size 1408, decoder_sparse_step 1, mlp_only_layers []);
     * Qwen3VLMoeTextDecoderLayer (modeling_qwen3_vl_moe.py @ 0142cff2) is qwen3_moe's: Qwen3VLMoeTextAttention
     * (q/k/v/o with attention_bias, q_norm / k_norm per head, interleaved MRoPE), Qwen3VLMoeTextSparseMoeBlock
     * where layer_idx is not in mlp_only_layers and (layer_idx + 1) % decoder_sparse_step == 0, else
     * Qwen3VLMoeTextMLP(intermediate_size). The block: Qwen3VLMoeTextTopKRouter (weight [E, H], softmax in
     * float32, top-k, always renormalized: no norm_topk_prob), Qwen3VLMoeTextExperts stacked as qwen3_moe's
     * (gate_up_proj [E, 2 moe_I, H], down_proj [E, H, moe_I]; @use_experts_implementation: grouped_mm by
     * default); no shared expert. The vision tower is Qwen3-VL's (Qwen3VLMoeVisionConfig: Qwen3VLVisionConfig's
     * keys and defaults) with its deepstack mergers (src/hf/hf_vision.c). lm_head's tie and the releases whose
     * experts are not modelled: src/hf/hf_qwen3_vl_moe.c */
    {.model_type = "qwen3_vl_moe", .config_class = "Qwen3VLMoeTextConfig (Qwen3VLMoeConfig.text_config)",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 151936), [K_HIDDEN] = DEF("hidden_size", 2048),
              [K_INTER] = DEF("intermediate_size", 5632), [K_LAYERS] = DEF("num_hidden_layers", 24),
              [K_HEADS] = DEF("num_attention_heads", 16), [K_KV_HEADS] = DEF("num_key_value_heads", 16),
              [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_MAXPOS] = DEF("max_position_embeddings", 128000),
              [K_TIE] = DEF("tie_word_embeddings", 1), [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0),
              [K_EXPERTS] = {.key = "num_experts", .def = 60, .alt = "num_local_experts"},
              [K_TOPK] = DEF("num_experts_per_tok", 4), [K_MOE_INTER] = DEF("moe_intermediate_size", 1408),
              [K_SPARSE_STEP] = DEF("decoder_sparse_step", 1), [K_NORM_TOPK] = FIXED(1),
              [K_MLP_ONLY] = DEF("mlp_only_layers", 0)},
     LLAMA_BLOCK, .moe = MOE_QWEN2, .qk_norm = QK_PER_HEAD, .nested = "text_config", .vision = VIS_QWEN3,
     .lora_targets = NULL /* PEFT's mapping (peft @ 00073fe8 utils/constants.py) has no qwen3_vl_moe: name --lora-targets */},
    /* MPNetConfig (configuration_mpnet.py @ 06053b84: every size has a default, microsoft/mpnet-base's but
     * max_position_embeddings 512 and layer_norm_eps 1e-12) and MPNetForSequenceClassification
     * (modeling_mpnet.py @ 00099b9f, src/hf/hf_mpnet.c): MPNetEmbeddings (word + learned positions from
     * create_position_ids_from_input_ids with its fixed padding_idx 1, LayerNorm, dropout; no token types),
     * MPNetLayer (MPNetSelfAttention q/k/v/o with biases and eager scores plus the encoder's relative position
     * bias, post-LN like BERT's), MPNetEncoder.relative_attention_bias shared by every layer,
     * MPNetClassificationHead (dropout, dense, tanh, dropout, out_proj; hidden_dropout_prob). PEFT's mapping
     * (peft @ 5d602fdb utils/constants.py) has no mpnet: --lora-targets. */
    {.model_type = "mpnet", .config_class = "MPNetConfig",
     .keys = {[K_VOCAB] = DEF("vocab_size", 30527), [K_HIDDEN] = DEF("hidden_size", 768),
              [K_LAYERS] = DEF("num_hidden_layers", 12), [K_HEADS] = DEF("num_attention_heads", 12),
              [K_KV_HEADS] = {.how = D_HEADS}, [K_EPS] = DEF("layer_norm_eps", 1e-12),
              [K_MAXPOS] = DEF("max_position_embeddings", 512), [K_INTER] = DEF("intermediate_size", 3072),
              [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("hidden_act", "gelu"),
              [K_P_ATTN] = DEF("attention_probs_dropout_prob", 0.1), [K_P_RESID] = DEF("hidden_dropout_prob", 0.1),
              [K_LABELS] = {.key = "id2label"}, [K_P_CLS] = {.key = NULL, .how = D_RESID},
              [K_PAD] = FIXED(1) /* MPNetEmbeddings.padding_idx = 1, whatever pad_token_id says */,
              [K_REL_BUCKETS] = DEF("relative_attention_num_buckets", 32)},
     .block = BLK_MPNET, .norm = NORM_LAYER, .place = PLACE_POST, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN,
     .pos = POS_LEARNED_PAD, .head = HEAD_CLS, .head_class = "MPNetForSequenceClassification", .prefix = "mpnet",
     .lora_targets = NULL},
    /* MT5Config (configuration_mt5.py of transformers 4.x: vocab_size 250112, d_model 512, d_kv 64, d_ff 1024,
     * 8 layers of 6 heads, feed_forward_proj "gated-gelu", tie_word_embeddings False: an __init__ argument
     * passed to PretrainedConfig) and MT5ForConditionalGeneration (modeling_mt5.py @ 00b676f8: every module
     * "Copied from transformers.models.t5.modeling_t5" with T5->MT5): T5 v1.1's gated-gelu blocks and an untied
     * lm_head, written by hf_t5.c as the t5 row is. PEFT: q, v (peft @ 5d602fdb utils/constants.py "mt5"). */
    {.model_type = "mt5", .config_class = "MT5Config",
     .keys = {[K_VOCAB] = DEF("vocab_size", 250112), [K_HIDDEN] = DEF("d_model", 512), [K_LAYERS] = DEF("num_layers", 8),
              [K_HEADS] = DEF("num_heads", 6), [K_KV_HEADS] = {.how = D_HEADS}, [K_EPS] = DEF("layer_norm_epsilon", 1e-6),
              [K_INTER] = DEF("d_ff", 1024), [K_HEAD_DIM] = DEF("d_kv", 64), [K_TIE] = DEF("tie_word_embeddings", 0),
              [K_P_RESID] = DEF("dropout_rate", 0.1), [K_DEC_LAYERS] = DEF("num_decoder_layers", 0),
              [K_REL_BUCKETS] = DEF("relative_attention_num_buckets", 32),
              [K_REL_MAXDIST] = DEF("relative_attention_max_distance", 128)},
     .block = BLK_T5, .norm = NORM_RMS, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN, .pos = POS_ROPE,
     .head = HEAD_LM, .head_class = "MT5ForConditionalGeneration", .lora_targets = "q,v"},
    /* UMT5Config (configuration_umt5.py @ 0d7e95d9: vocab_size 250112, d_model 512, d_kv 64, d_ff 1024, 8 layers of
     * 6 heads, feed_forward_proj "gated-gelu", 32 buckets, max distance 128, dropout_rate 0.1) and
     * UMT5ForConditionalGeneration (modeling_umt5.py @ de0f5d1e, src/hf/hf_t5.c t5_every): the mt5 row's modules with a
     * relative_attention_bias in every block's SelfAttention, each UMT5Attention computing its own position bias.
     * tie_word_embeddings: read as the file says (google/umt5-* say false and store their own lm_head); absent,
     * true, what transformers 5.x's UMT5Config.__post_init__ forces whatever the file says ("force it for T5
     * family"). That forced flag makes 5.x's forward rescale the decoder output by d_model ** -0.5 for the untied
     * checkpoints too: not modelled (the rescale follows the file's flag, as 4.x does). PEFT's mapping (peft
     * utils/constants.py: "t5" and "mt5" only) has no umt5: --lora-targets. */
    {.model_type = "umt5", .config_class = "UMT5Config",
     .keys = {[K_VOCAB] = DEF("vocab_size", 250112), [K_HIDDEN] = DEF("d_model", 512), [K_LAYERS] = DEF("num_layers", 8),
              [K_HEADS] = DEF("num_heads", 6), [K_KV_HEADS] = {.how = D_HEADS}, [K_EPS] = DEF("layer_norm_epsilon", 1e-6),
              [K_INTER] = DEF("d_ff", 1024), [K_HEAD_DIM] = DEF("d_kv", 64), [K_TIE] = DEF("tie_word_embeddings", 1),
              [K_P_RESID] = DEF("dropout_rate", 0.1), [K_DEC_LAYERS] = DEF("num_decoder_layers", 0),
              [K_REL_BUCKETS] = DEF("relative_attention_num_buckets", 32),
              [K_REL_MAXDIST] = DEF("relative_attention_max_distance", 128)},
     .block = BLK_T5, .norm = NORM_RMS, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN, .pos = POS_ROPE,
     .head = HEAD_LM, .head_class = "UMT5ForConditionalGeneration", .lora_targets = NULL},
/* BartConfig's keys and defaults but the vocabulary's (bart-large's sizes: d_model 1024, 12 + 12 layers of 16 heads,
 * ffn 4096, 1024 positions, gelu, dropout 0.1, attention and activation dropout 0; nn.LayerNorm's eps), which
 * MarianConfig, PegasusConfig and MBartConfig repeat with their own vocab_size default; M2M100Config with its own
 * activation_function and attention_dropout defaults too (BART_KEYS_WITH) */
#define BART_KEYS_WITH(vocab, act, p_attn)                                                                      \
    [K_VOCAB] = DEF("vocab_size", vocab), [K_HIDDEN] = DEF("d_model", 1024), [K_LAYERS] = DEF("encoder_layers", 12), \
        [K_HEADS] = DEF("encoder_attention_heads", 16), [K_KV_HEADS] = {.how = D_HEADS},                       \
        [K_EPS] = FIXED(1e-5) /* nn.LayerNorm(embed_dim) */, [K_MAXPOS] = DEF("max_position_embeddings", 1024), \
        [K_INTER] = DEF("encoder_ffn_dim", 4096), [K_HEAD_DIM] = {.how = D_SPLIT},                             \
        [K_ACT] = ACT("activation_function", act), [K_TIE] = DEF("tie_word_embeddings", 1),                    \
        [K_P_ATTN] = DEF("attention_dropout", p_attn), [K_P_RESID] = DEF("dropout", 0.1),                     \
        [K_DEC_LAYERS] = DEF("decoder_layers", 12), [K_DEC_HEADS] = DEF("decoder_attention_heads", 16),        \
        [K_DEC_INTER] = DEF("decoder_ffn_dim", 4096), [K_P_ACT] = DEF("activation_dropout", 0)
#define BART_KEYS(vocab) BART_KEYS_WITH(vocab, "gelu", 0)
    /* BartConfig (configuration_bart.py: every size has a default, facebook/bart-large's: vocab 50265, d_model 1024,
     * 12 + 12 layers of 16 heads, ffn 4096, 1024 positions, gelu, dropout 0.1, attention and activation dropout
     * 0, scale_embedding false; tie_word_embeddings PretrainedConfig's True) and BartForConditionalGeneration
     * (modeling_bart.py @ efa7189c, src/hf/hf_bart.c): BartScaledWordEmbedding (x embed_scale), learned positions
     * with offset 2 (max_position_embeddings + 2 rows), layernorm_embedding, post-LN encoder and decoder layers
     * with BartSdpaAttention (q/k/v/out_proj with biases), cross-attention, the lm_head tied to the shared
     * embedding, the final_logits_bias buffer. PEFT: q_proj, v_proj (peft @ 5d602fdb utils/constants.py). */
    {.model_type = "bart", .config_class = "BartConfig",
     .keys = {BART_KEYS(50265)},
     .block = BLK_BART, .norm = NORM_LAYER, .place = PLACE_POST, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN, .pos = POS_LEARNED,
     .head = HEAD_LM, .head_class = "BartForConditionalGeneration", .lora_targets = "q_proj,v_proj"},
    /* Mistral3Config (configuration_mistral3.py @ 0db25542): the language model is MistralConfig's, read from
     * text_config (CONFIG_MAPPING[text_config.get("model_type", "mistral")](**text_config): MistralConfig's
     * defaults for what it lacks, configuration_mistral.py @ the newest stored text: vocab_size 32000, hidden_size
     * 4096, intermediate_size 14336, 32 layers, 32 heads, num_key_value_heads 8, head_dim None: hidden / heads,
     * sliding_window 4096; another text model_type refused, src/hf/hf_pixtral.c); vision_config's PixtralVisionModel
     * and the Mistral3MultiModalProjector of Mistral3ForConditionalGeneration (modeling_mistral3.py @ 00dcc6dd)
     * counted, loaded frozen, run on --image (hf_pixtral.c, layers/pixtral.c). PEFT's mapping (peft @ 00073fe8
     * utils/constants.py) has no mistral3: --lora-targets. */
    {.model_type = "mistral3", .config_class = "MistralConfig (Mistral3Config.text_config)",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 32000), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 32),
              [K_KV_HEADS] = {.key = "num_key_value_heads", .def = 8, .how = D_KV_NULL} /* null: the heads */,
              [K_INTER] = DEF("intermediate_size", 14336),
              [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_MAXPOS] = DEF("max_position_embeddings", 131072),
              [K_WINDOW] = OFF_IF_NULL("sliding_window", 4096) /* MistralConfig: 4096, None for none */},
     LLAMA_BLOCK, .nested = "text_config", .vision = VIS_PIXTRAL, .lora_targets = NULL},
    /* MinistralConfig (configuration_ministral.py @ 052b1dcd: every key has a default, Ministral-8B-Instruct-2410's
     * kind; head_dim None: hidden_size // num_attention_heads; layer_types None: every layer "sliding_attention" when
     * sliding_window is set, else "full_attention") and modeling_ministral.py @ 3edd469d: MinistralForCausalLM is
     * Qwen2's decoder without the q/k/v biases (MinistralAttention: sliding_window on its "sliding_attention" layers,
     * None on the others), the masks per layer type (create_causal_mask, create_sliding_window_causal_mask), one
     * rotary embedding shared by every layer: the qwen2 row's layers with every layer sliding unless layer_types says
     * otherwise. PEFT's mapping (peft @ 00073fe8) has no ministral: --lora-targets. */
    {.model_type = "ministral", .config_class = "MinistralConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 32000), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 32),
              [K_KV_HEADS] = DEF("num_key_value_heads", 8), [K_INTER] = DEF("intermediate_size", 14336),
              [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_MAXPOS] = DEF("max_position_embeddings", 131072),
              [K_WINDOW] = OFF_IF_NULL("sliding_window", 4096), [K_LAYER_TYPES] = DEF("layer_types", 0)},
     LLAMA_BLOCK, .window = WIN_ALL, .lora_targets = NULL},
    /* MiniMaxM2Config (configuration_minimax_m2.py @ 3e108993: the class defaults are MiniMax-M2's; rotary_dim,
     * use_qk_norm and the checkpoint's other keys: hf_minimax_m2.c); MiniMaxM2DecoderLayer (modeling_minimax_m2.py
     * @ 0205eec1): LlamaDecoderLayer's norms, MiniMaxM2Attention (q/k/v/o without bias; q_norm / k_norm
     * MiniMaxM2RMSNorm over all heads, heads x head_dim and kv heads x head_dim, before the view; partial rotary,
     * cat(q_embed, q_pass)), MiniMaxM2SparseMoeBlock on every layer (SparseMoE style minimax_m2: sigmoid routing
     * with e_score_correction_bias, top-k renormalised, stacked experts of intermediate_size, no shared expert).
     * experts_fixed: the family exists from transformers 5 on (its experts under @use_experts_implementation:
     * grouped_mm whatever --transformers names). PEFT's mapping has no minimax_m2: --lora-targets. */
    {.model_type = "minimax_m2", .config_class = "MiniMaxM2Config",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 200064), [K_HIDDEN] = DEF("hidden_size", 3072),
              [K_LAYERS] = DEF("num_hidden_layers", 62), [K_HEADS] = DEF("num_attention_heads", 48),
              [K_KV_HEADS] = DEF("num_key_value_heads", 8), [K_HEAD_DIM] = DEF("head_dim", 128),
              [K_INTER] = DEF("intermediate_size", 1536), [K_MAXPOS] = DEF("max_position_embeddings", 196608),
              [K_EXPERTS] = DEF("num_local_experts", 256), [K_TOPK] = DEF("num_experts_per_tok", 8),
              [K_MOE_INTER] = DEF("intermediate_size", 1536), [K_NORM_TOPK] = FIXED(1)},
     LLAMA_BLOCK, .moe = MOE_MINIMAX, .qk_norm = QK_WHOLE, .experts_fixed = true, .lora_targets = NULL},
    /* PhimoeConfig (configuration_phimoe.py @ 23925e16: the class defaults are Phi-3.5-MoE's sizes; lm_head_bias,
     * input_jitter_noise and router_jitter_noise: hf_phimoe.c); transformers 5's modeling_phimoe.py @ 0233e509:
     * PhimoeDecoderLayer with nn.LayerNorm input / post-attention norms (elementwise_affine, weight and bias, eps
     * rms_norm_eps: "Phimoe uses nn.LayerNorm"; the earlier 4a435530 inherited MixtralDecoderLayer's RMSNorms),
     * PhimoeAttention (LlamaAttention's: q/k/v/o with attention_bias, head_dim getattr(config, "head_dim",
     * hidden / heads)), PhimoeSparseMoeBlock on every layer (SparseMoE style phimoe: sparsemixer, stacked experts of
     * intermediate_size); PhimoeModel.norm an nn.LayerNorm; sliding_window as Mixtral's (None: none).
     * PEFT's mapping has no phimoe: --lora-targets. */
    {.model_type = "phimoe", .config_class = "PhimoeConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 32064), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 32),
              /* num_key_value_heads: null is num_attention_heads (read so), absent 8 (hf_phimoe.c) */
              [K_KV_HEADS] = {.key = "num_key_value_heads", .how = D_HEADS}, [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT},
              [K_INTER] = DEF("intermediate_size", 6400), [K_EPS] = DEF("rms_norm_eps", 1e-5),
              [K_MAXPOS] = DEF("max_position_embeddings", 131072), [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0), [K_WINDOW] = OFF_IF_NULL("sliding_window", 0),
              [K_EXPERTS] = DEF("num_local_experts", 16), [K_TOPK] = DEF("num_experts_per_tok", 2),
              [K_MOE_INTER] = DEF("intermediate_size", 6400)},
     LLAMA_BLOCK, .norm = NORM_LAYER, .moe = MOE_PHIMOE, .lora_targets = NULL},
    /* GraniteMoeConfig (Granite 3.x MoE): granite's muP multipliers (embedding_multiplier, residual_multiplier,
     * logits_scaling; attention_multiplier the softmax scale, no tensor) on GraniteMoeDecoderLayer (modular_granitemoe.py
     * @ 94cb76e8: LlamaAttention, GraniteMoeRMSNorm, block_sparse_moe a GraniteMoeMoE on every layer: JetMoe's top-k
     * gating and GraniteMoeParallelExperts' per-expert loop, SparseMoE style granitemoe). experts_fixed: that loop in
     * every release. PEFT's mapping has no granitemoe: --lora-targets. */
    {.model_type = "granitemoe", .config_class = "GraniteMoeConfig",
     /* GraniteMoeConfig.__init__ (configuration_granitemoe.py @ 040e1a7e): every size has a default */
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 32000), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 32),
              [K_INTER] = DEF("intermediate_size", 11008),
              [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0), [K_EMB_MULT] = DEF("embedding_multiplier", 1.0),
              [K_RESID_MULT] = DEF("residual_multiplier", 1.0), [K_LOGITS_SCALE] = DEF("logits_scaling", 1.0),
              [K_EXPERTS] = DEF("num_local_experts", 8), [K_TOPK] = DEF("num_experts_per_tok", 2),
              [K_MOE_INTER] = DEF("intermediate_size", 11008)},
     LLAMA_BLOCK, .mup = true, .moe = MOE_GRANITE, .experts_fixed = true, .lora_targets = NULL},
    /* GraniteMoeSharedConfig (configuration_granitemoeshared.py @ 7e84bb6f: GraniteMoeConfig's keys and
     * shared_intermediate_size, 0 by default: no shared MLP); GraniteMoeSharedDecoderLayer (modular_granitemoeshared.py
     * @ a878fc03): granitemoe's layer with moe_hidden_states + shared_mlp(hidden_states) (GraniteMoeSharedMLP) */
    {.model_type = "granitemoeshared", .config_class = "GraniteMoeSharedConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 32000), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 32),
              [K_INTER] = DEF("intermediate_size", 11008),
              [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0), [K_EMB_MULT] = DEF("embedding_multiplier", 1.0),
              [K_RESID_MULT] = DEF("residual_multiplier", 1.0), [K_LOGITS_SCALE] = DEF("logits_scaling", 1.0),
              [K_EXPERTS] = DEF("num_local_experts", 8), [K_TOPK] = DEF("num_experts_per_tok", 2),
              [K_MOE_INTER] = DEF("intermediate_size", 11008), [K_SHARED_INTER] = DEF("shared_intermediate_size", 0)},
     LLAMA_BLOCK, .mup = true, .moe = MOE_GRANITE, .experts_fixed = true, .lora_targets = NULL},
    /* GraniteMoeHybridConfig (configuration_granitemoehybrid.py @ 008f5c8c; every key has a default) and
     * modeling_granitemoehybrid.py @ 00511f5d (src/hf/hf_granite4.c: layer_types, the mamba_* keys, the
     * experts; layers/mamba2.c): IBM Granite 4.0-H's Mamba2 and attention layers (NoPE unless
     * position_embedding_type "rope"), shared_mlp on every layer, block_sparse_moe beside it when
     * num_local_experts > 0, granite's multipliers. PEFT's mapping has no granitemoehybrid: --lora-targets. */
    {.model_type = "granitemoehybrid", .config_class = "GraniteMoeHybridConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 32000), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 32),
              [K_INTER] = DEF("intermediate_size", 11008), [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT},
              [K_QKV_BIAS] = DEF("attention_bias", 0), [K_O_BIAS] = DEF("attention_bias", 0),
              [K_EMB_MULT] = DEF("embedding_multiplier", 1.0), [K_RESID_MULT] = DEF("residual_multiplier", 1.0),
              [K_LOGITS_SCALE] = DEF("logits_scaling", 1.0), [K_SHARED_INTER] = DEF("shared_intermediate_size", 1024)},
     LLAMA_BLOCK, .block = BLK_GRANITE4, .mup = true, .lora_targets = NULL,
     .experts_fixed = true /* GraniteMoeHybridParallelExperts: the same loop in every release */},
    /* Mamba2Config (configuration_mamba2.py @ f2a39d49: every key has a default) and modeling_mamba2.py @ 4711664e
     * / 020a37d2 (src/hf/hf_granite4.c: the mixer's keys, residual_in_fp32; layers/mamba2.c): Mamba2ForCausalLM,
     * backbone.embeddings, Mamba2Block (norm, Mamba2Mixer, the residual) x num_hidden_layers, norm_f, lm_head; no
     * attention, no MLP, no positions (num_attention_heads, intermediate_size, max_position_embeddings: none).
     * PEFT's mapping has no mamba2: --lora-targets. */
    {.model_type = "mamba2", .config_class = "Mamba2Config",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 32768), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_LAYERS] = DEF("num_hidden_layers", 64), [K_HEADS] = FIXED(1), [K_INTER] = FIXED(1),
              [K_EPS] = DEF("layer_norm_epsilon", 1e-5), [K_MAXPOS] = FIXED(2048), [K_P_ATTN] = FIXED(0)},
     LLAMA_BLOCK, .block = BLK_MAMBA2, .lora_targets = NULL},
    /* OlmoeConfig (configuration_olmoe.py @ 008e5743: the class defaults, intermediate_size 2048 the experts' width;
     * clip_qkv, head_dim, output_router_logits: hf_olmoe.c); OlmoeDecoderLayer (modeling_olmoe.py @ 0233e509):
     * LlamaDecoderLayer's OlmoeRMSNorms, OlmoeAttention (q/k/v/o with attention_bias, q_norm = OlmoeRMSNorm(hidden_size)
     * and k_norm = OlmoeRMSNorm(head_dim x kv heads) over the whole projections before the view), OlmoeSparseMoeBlock
     * on every layer: OlmoeTopKRouter (Qwen3MoeTopKRouter's code: float32 softmax, top-k, norm_topk_prob) and
     * OlmoeExperts stacked under @use_experts_implementation (SparseMoE style qwen2_moe without a shared expert);
     * no sliding window. PEFT's mapping has no olmoe: --lora-targets. */
    {.model_type = "olmoe", .config_class = "OlmoeConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 50304), [K_HIDDEN] = DEF("hidden_size", 2048),
              [K_LAYERS] = DEF("num_hidden_layers", 16), [K_HEADS] = DEF("num_attention_heads", 16),
              [K_INTER] = DEF("intermediate_size", 2048), [K_EPS] = DEF("rms_norm_eps", 1e-5),
              [K_MAXPOS] = DEF("max_position_embeddings", 4096), [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0), [K_EXPERTS] = DEF("num_experts", 64),
              [K_TOPK] = DEF("num_experts_per_tok", 8), [K_MOE_INTER] = DEF("intermediate_size", 2048),
              [K_NORM_TOPK] = DEF("norm_topk_prob", 0), [K_SPARSE_STEP] = FIXED(1) /* every layer */},
     LLAMA_BLOCK, .moe = MOE_QWEN2, .qk_norm = QK_WHOLE, .lora_targets = NULL},
    /* Exaone4Config (configuration_exaone4.py @ f503927d: vocab_size 102400, hidden_size 4096, intermediate_size 16384,
     * num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 32, max_position_embeddings 2048, rms_norm_eps
     * 1e-5, tie_word_embeddings False, sliding_window 4096, sliding_window_pattern 4; layer_types None: "sliding_attention"
     * where (i + 1) % sliding_window_pattern, a string pattern ("LLLG") only read with layer_types) and Exaone4ForCausalLM
     * (modeling_exaone4.py @ 948448a0): Exaone4DecoderLayer's post_attention_layernorm / post_feedforward_layernorm after
     * the sublayers, none before (olmo2's places, Exaone4RMSNorm = LlamaRMSNorm's ops); Exaone4Attention: q/k/v/o
     * without bias, head_dim getattr(config, "head_dim", hidden // heads), q_norm / k_norm = Exaone4RMSNorm(head_dim)
     * per head, apply_rotary_pos_emb only `if self.sliding_window is None or self.is_sliding` (the global layers NoPE
     * when a window is set); Exaone4MLP: LlamaMLP without bias. PEFT's mapping has no exaone4: --lora-targets */
    {.model_type = "exaone4", .config_class = "Exaone4Config",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 102400), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_INTER] = DEF("intermediate_size", 16384), [K_LAYERS] = DEF("num_hidden_layers", 32),
              [K_HEADS] = DEF("num_attention_heads", 32), [K_KV_HEADS] = DEF("num_key_value_heads", 32),
              [K_EPS] = DEF("rms_norm_eps", 1e-5), [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT},
              [K_WINDOW] = OFF_IF_NULL("sliding_window", 4096), [K_LAYER_TYPES] = DEF("layer_types", 0),
              [K_WINDOW_PATTERN] = DEF("sliding_window_pattern", 4)},
     LLAMA_BLOCK, .place = PLACE_SUBLAYER, .qk_norm = QK_PER_HEAD, .window = WIN_PATTERN, .nope_full = true,
     .lora_targets = NULL},
    /* SeedOssConfig (configuration_seed_oss.py @ d9aa776f: vocab_size 155136, hidden_size 4096, intermediate_size 27648,
     * num_hidden_layers 64, num_attention_heads 80, num_key_value_heads 8 (None: the heads), max_position_embeddings
     * 524288, rms_norm_eps 1e-6, attention_bias True, attention_out_bias False, attention_dropout 0.1, residual_dropout
     * 0.1, mlp_bias False, head_dim 128) and SeedOssForCausalLM (modular_seed_oss.py @ 6e4054ae): LlamaDecoderLayer with
     * SeedOssAttention (q/k/v with attention_bias, o_proj with attention_out_bias, dropout(residual_dropout) on o_proj's
     * output) and SeedOssMLP (gate/up/down with mlp_bias, dropout(residual_dropout) on down_proj's output): phi3's
     * residual dropouts at the same places. PEFT's mapping has no seed_oss: --lora-targets */
    {.model_type = "seed_oss", .config_class = "SeedOssConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 155136), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_INTER] = DEF("intermediate_size", 27648), [K_LAYERS] = DEF("num_hidden_layers", 64),
              [K_HEADS] = DEF("num_attention_heads", 80),
              [K_KV_HEADS] = {.key = "num_key_value_heads", .def = 8, .how = D_KV_NULL},
              [K_MAXPOS] = DEF("max_position_embeddings", 524288), [K_HEAD_DIM] = DEF("head_dim", 128),
              [K_QKV_BIAS] = DEF("attention_bias", 1), [K_O_BIAS] = DEF("attention_out_bias", 0),
              [K_MLP_BIAS] = DEF("mlp_bias", 0), [K_P_ATTN] = DEF("attention_dropout", 0.1),
              [K_P_RESID] = DEF("residual_dropout", 0.1)},
     LLAMA_BLOCK, .lora_targets = NULL},
    /* ArceeConfig (configuration_arcee.py @ 008e5743: vocab_size 32000, hidden_size 2560, intermediate_size 18432,
     * num_hidden_layers 32, num_attention_heads 32, num_key_value_heads None -> the heads, hidden_act "relu2",
     * max_position_embeddings 4096, rms_norm_eps 1e-5, tie_word_embeddings False, attention_bias / mlp_bias False,
     * head_dim None -> hidden_size // heads) and ArceeForCausalLM (modular_arcee.py @ 031734d9: LlamaForCausalLM
     * with ArceeMLP = NemotronMLP: up_proj, ACT2FN[hidden_act], down_proj; relu2 is ReLUSquaredActivation, relu then
     * torch.square). PEFT's mapping has no arcee: --lora-targets */
    {.model_type = "arcee", .config_class = "ArceeConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 32000), [K_HIDDEN] = DEF("hidden_size", 2560),
              [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 32),
              [K_INTER] = DEF("intermediate_size", 18432), [K_ACT] = ACT("hidden_act", "relu2"),
              [K_EPS] = DEF("rms_norm_eps", 1e-5), [K_MAXPOS] = DEF("max_position_embeddings", 4096),
              [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0), [K_MLP_BIAS] = DEF("mlp_bias", 0)},
     LLAMA_BLOCK, .mlp = MLP_PLAIN, .up_down = true, .lora_targets = NULL},
    /* Ernie4_5Config (configuration_ernie4_5.py @ 008e5743: the class defaults are ERNIE-4.5-0.3B's; head_dim 128,
     * None -> hidden_size // num_attention_heads); Ernie4_5ForCausalLM (modeling_ernie4_5.py @ 0233e509):
     * LlamaDecoderLayer's template with Ernie4_5RMSNorm (Llama's), q/k/v/o and the MLP's three projections with
     * bias=use_bias, lm_head without bias (tied by default); Ernie4_5RotaryEmbedding returns float32 cos / sin and
     * apply_rotary_pos_emb rotates interleaved pairs (cos[..., :D // 2].repeat_interleave(2), rotate_half over
     * x[..., 0::2] / x[..., 1::2]) on q.float() / rotate_half(q).float(), cast back (RotaryAttention rope_style glm4
     * with rope_f32). PEFT's mapping was not read for ernie4_5: --lora-targets. */
    {.model_type = "ernie4_5", .config_class = "Ernie4_5Config",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 103424), [K_HIDDEN] = DEF("hidden_size", 1024),
              [K_INTER] = DEF("intermediate_size", 3072), [K_LAYERS] = DEF("num_hidden_layers", 18),
              [K_HEADS] = DEF("num_attention_heads", 16), [K_KV_HEADS] = {.key = "num_key_value_heads", .def = 2, .how = D_KV_NULL},
              [K_MAXPOS] = DEF("max_position_embeddings", 131072), [K_EPS] = DEF("rms_norm_eps", 1e-5),
              [K_TIE] = DEF("tie_word_embeddings", 1), [K_HEAD_DIM] = {.key = "head_dim", .def = 128, .how = D_SPLIT_NULL},
              [K_QKV_BIAS] = DEF("use_bias", 0), [K_O_BIAS] = DEF("use_bias", 0), [K_MLP_BIAS] = DEF("use_bias", 0),
              [K_P_ATTN] = FIXED(0) /* Ernie4_5Attention.attention_dropout = 0.0 */},
     LLAMA_BLOCK, .interleaved_rope = true, .rope_f32 = true, .lora_targets = NULL},
    /* Ernie4_5_MoeConfig (configuration_ernie4_5_moe.py @ 001f85b3: the class defaults are ERNIE-4.5-21B-A3B's;
     * num_experts / num_experts_per_tok are attribute_map aliases of moe_num_experts / moe_k; moe_layer_end_index,
     * moe_num_shared_experts, moe_norm_min, use_bias, output_router_logits: hf_ernie.c); Ernie4_5_MoeForCausalLM
     * (modeling_ernie4_5_moe.py @ 0233e509): Ernie4_5's attention and rotation, head_dim getattr(config, "head_dim",
     * hidden_size // num_attention_heads), Ernie4_5_MoeSparseMoeBlock where (i + 1) % moe_layer_interval == 0 and
     * moe_layer_start_index <= i <= moe_layer_end_index (SparseMoE style ernie4_5_moe), Ernie4_5_MoeMLP of
     * intermediate_size elsewhere. PEFT's mapping was not read for ernie4_5_moe: --lora-targets. */
    {.model_type = "ernie4_5_moe", .config_class = "Ernie4_5_MoeConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 103424), [K_HIDDEN] = DEF("hidden_size", 2560),
              [K_INTER] = DEF("intermediate_size", 12288), [K_LAYERS] = DEF("num_hidden_layers", 28),
              [K_HEADS] = DEF("num_attention_heads", 20), [K_KV_HEADS] = DEF("num_key_value_heads", 4),
              [K_MAXPOS] = DEF("max_position_embeddings", 131072), [K_EPS] = DEF("rms_norm_eps", 1e-5),
              [K_TIE] = DEF("tie_word_embeddings", 1), [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT},
              [K_QKV_BIAS] = DEF("use_bias", 0), [K_O_BIAS] = DEF("use_bias", 0), [K_MLP_BIAS] = DEF("use_bias", 0),
              [K_P_ATTN] = FIXED(0), [K_EXPERTS] = DEF("moe_num_experts", 64), [K_TOPK] = DEF("moe_k", 6),
              [K_MOE_INTER] = DEF("moe_intermediate_size", 1536), [K_FIRST_DENSE] = DEF("moe_layer_start_index", 1),
              [K_SPARSE_STEP] = DEF("moe_layer_interval", 1)},
     LLAMA_BLOCK, .moe = MOE_ERNIE, .interleaved_rope = true, .rope_f32 = true, .lora_targets = NULL},
    /* Lfm2Config (configuration_lfm2.py @ 05cd1ec1: every key has a default; layer_types / full_attn_idxs,
     * conv_L_cache, conv_bias, tie_embedding, block_ff_dim and the MLP width: hf_lfm2.c) and modeling_lfm2.py
     * @ 0096ba4f: Lfm2DecoderLayer's short-convolution (layers/shortconv.c) or attention layers (q_layernorm and
     * k_layernorm per head, rotary; dropout 0.0 always), Lfm2MLP's w1 / w3 / w2 (SiLU: no hidden_act key),
     * Lfm2RMSNorm, embedding_norm after the layers (hf_layers.c lfm2_layer). PEFT's mapping has no lfm2:
     * --lora-targets. */
    {.model_type = "lfm2", .config_class = "Lfm2Config",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 65536), [K_HIDDEN] = DEF("hidden_size", 2560),
              [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 32),
              [K_KV_HEADS] = DEF("num_key_value_heads", 8), [K_EPS] = DEF("norm_eps", 1e-5),
              [K_MAXPOS] = DEF("max_position_embeddings", 128000), [K_INTER] = DEF("intermediate_size", 12288),
              [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_ACT] = FIXED(A_SILU), [K_TIE] = DEF("tie_word_embeddings", 1),
              [K_P_ATTN] = FIXED(0)},
     LLAMA_BLOCK, .block = BLK_LFM2, .qk_norm = QK_PER_HEAD, .lora_targets = NULL},
    /* Lfm2MoeConfig (configuration_lfm2_moe.py @ 06053b84: the class defaults are LFM2-8B-A1B's but for its 24
     * layers; layer_types required (Lfm2DecoderLayer indexes it), use_expert_bias: hf_lfm2.c) and
     * modular_lfm2_moe.py @ 0c67e26d: lfm2's layers (Lfm2MoeDecoderLayer = Lfm2DecoderLayer) with Lfm2MoeMLP of
     * intermediate_size (no width adjustment) below num_dense_layers, Lfm2MoeSparseMoeBlock (SparseMoE style
     * lfm2_moe) from it on. PEFT's mapping has no lfm2_moe: --lora-targets. */
    {.model_type = "lfm2_moe", .config_class = "Lfm2MoeConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 65536), [K_HIDDEN] = DEF("hidden_size", 2048),
              [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 32),
              [K_KV_HEADS] = DEF("num_key_value_heads", 8), [K_EPS] = DEF("norm_eps", 1e-5),
              [K_MAXPOS] = DEF("max_position_embeddings", 128000), [K_INTER] = DEF("intermediate_size", 7168),
              [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_ACT] = FIXED(A_SILU), [K_TIE] = DEF("tie_word_embeddings", 1),
              [K_P_ATTN] = FIXED(0), [K_EXPERTS] = DEF("num_experts", 32), [K_TOPK] = DEF("num_experts_per_tok", 4),
              [K_MOE_INTER] = DEF("moe_intermediate_size", 1792), [K_FIRST_DENSE] = DEF("num_dense_layers", 2),
              [K_NORM_TOPK] = DEF("norm_topk_prob", 1), [K_ROUTED_SCALE] = DEF("routed_scaling_factor", 1.0)},
     LLAMA_BLOCK, .block = BLK_LFM2, .moe = MOE_LFM2, .qk_norm = QK_PER_HEAD, .lora_targets = NULL},
    /* CohereConfig (configuration_cohere.py @ 008e5743: vocab_size 256000, hidden_size 8192, intermediate_size 22528,
     * logit_scale 0.0625, num_hidden_layers 40, num_attention_heads 64, num_key_value_heads None: the heads,
     * hidden_act silu, max_position_embeddings 8192, layer_norm_eps 1e-5, tie_word_embeddings True, attention_bias
     * False, attention_dropout 0, use_qk_norm False). CohereForCausalLM (modeling_cohere.py @ 0233e509):
     * CohereDecoderLayer's parallel block (one input_layernorm feeding self_attn and mlp, residual + attn + mlp),
     * CohereLayerNorm (float32, mean-subtracted, weight only: HFRMSNorm variant cohere), CohereAttention (head_dim
     * getattr(config, "head_dim", hidden // heads); q/k/v/o with attention_bias; with use_qk_norm q_norm / k_norm
     * CohereLayerNorm((heads, head_dim)) on the [B, L, heads, head_dim] view: a weight per head), CohereRotaryEmbedding
     * (repeat_interleave, cos / sin .to(x.dtype)) and apply_rotary_pos_emb's q.float(), k.float() (rope_upcast),
     * LlamaMLP, logits * logit_scale. PEFT's mapping has no cohere: --lora-targets. */
    {.model_type = "cohere", .config_class = "CohereConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 256000), [K_HIDDEN] = DEF("hidden_size", 8192),
              [K_LAYERS] = DEF("num_hidden_layers", 40), [K_HEADS] = DEF("num_attention_heads", 64),
              [K_INTER] = DEF("intermediate_size", 22528), [K_EPS] = DEF("layer_norm_eps", 1e-5),
              [K_MAXPOS] = DEF("max_position_embeddings", 8192), [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT},
              [K_TIE] = DEF("tie_word_embeddings", 1), [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0), [K_USE_QK_NORM] = DEF("use_qk_norm", 0),
              [K_LOGITS_SCALE] = DEF("logit_scale", 0.0625), [K_PARALLEL] = FIXED(1)},
     LLAMA_BLOCK, .norm = NORM_COHERE, .qk_norm = QK_HEADS, .rope_upcast = true, .logit_mul = true, .lora_targets = NULL},
    /* Cohere2Config (configuration_cohere2.py @ 008e5743: CohereConfig's defaults without use_qk_norm, sliding_window
     * 4096, layer_types None: "sliding_attention" if (i + 1) % sliding_window_pattern (default 4) else
     * "full_attention"; __post_init__ sets head_dim = hidden_size // num_attention_heads, whatever the config says).
     * Cohere2ForCausalLM (modeling_cohere2.py @ 0233e509): cohere's block, Cohere2Attention's sliding_window on the
     * sliding layers and apply_rotary_pos_emb only there (the full layers NoPE), the sliding mask of
     * create_sliding_window_causal_mask. PEFT's mapping has no cohere2: --lora-targets. */
    {.model_type = "cohere2", .config_class = "Cohere2Config",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 256000), [K_HIDDEN] = DEF("hidden_size", 8192),
              [K_LAYERS] = DEF("num_hidden_layers", 40), [K_HEADS] = DEF("num_attention_heads", 64),
              [K_INTER] = DEF("intermediate_size", 22528), [K_EPS] = DEF("layer_norm_eps", 1e-5),
              [K_MAXPOS] = DEF("max_position_embeddings", 8192), [K_TIE] = DEF("tie_word_embeddings", 1),
              [K_QKV_BIAS] = DEF("attention_bias", 0), [K_O_BIAS] = DEF("attention_bias", 0),
              [K_LOGITS_SCALE] = DEF("logit_scale", 0.0625), [K_PARALLEL] = FIXED(1),
              [K_WINDOW] = OFF_IF_NULL("sliding_window", 4096), [K_LAYER_TYPES] = DEF("layer_types", 0),
              [K_WINDOW_PATTERN] = DEF("sliding_window_pattern", 4)},
     LLAMA_BLOCK, .norm = NORM_COHERE, .window = WIN_PATTERN, .rope_sliding = true, .rope_upcast = true,
     .logit_mul = true, .lora_targets = NULL},
    /* NemotronHConfig (configuration_nemotron_h.py @ 13923c63; every key has a default; num_hidden_layers 52 the
     * checkpoints' remote config's) and modeling_nemotron_h.py @ 008d9e95 (src/hf/hf_granite4.c: the layer pattern,
     * the Mamba2 keys; layers/mamba2.c): NVIDIA Nemotron-H's blocks of one mixer each (Mamba2, NoPE attention or a
     * relu2 MLP), NemotronHRMSNorm (layer_norm_epsilon) before each, norm_f, an untied lm_head. PEFT's mapping has no
     * nemotron_h: --lora-targets. */
    {.model_type = "nemotron_h", .config_class = "NemotronHConfig",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 131072), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_LAYERS] = DEF("num_hidden_layers", 52), [K_HEADS] = DEF("num_attention_heads", 32),
              [K_KV_HEADS] = {.key = "num_key_value_heads", .def = 8, .how = D_KV_NULL},
              [K_INTER] = DEF("intermediate_size", 21504), [K_HEAD_DIM] = DEF("head_dim", 128),
              [K_EPS] = DEF("layer_norm_epsilon", 1e-5), [K_MAXPOS] = DEF("max_position_embeddings", 4096),
              [K_ACT] = {.key = NULL} /* mlp_hidden_act: hf_granite4.c */},
     LLAMA_BLOCK, .block = BLK_NEMOTRON_H, .rope_scaling = false, .lora_targets = NULL},
    /* ViTConfig (configuration_vit.py @ 04ae7571: every key has a default, google/vit-base-patch16-224's: 12 layers
     * of 12 heads, 768 wide, intermediate_size 3072, gelu, both dropouts 0.0, layer_norm_eps 1e-12, image_size 224,
     * patch_size 16, num_channels 3, qkv_bias True) and ViTForImageClassification (modeling_vit.py @ 005db820,
     * hf_layers.c build_vit / vit_layer: the patch Conv2d, the CLS token and position embeddings, pre-LN ViTLayers
     * on sdpa, ViTModel.layernorm, the classifier on the CLS token; image_size / patch_size / num_channels in
     * hf_read.c read_vit). No vocabulary and no position ids: vocab_size and max_position_embeddings fixed at 1, never
     * read. PEFT's mapping (peft @ 00073fe8 utils/constants.py) has no vit: --lora-targets. */
    {.model_type = "vit", .config_class = "ViTConfig",
     .keys = {[K_VOCAB] = FIXED(1), [K_HIDDEN] = DEF("hidden_size", 768), [K_LAYERS] = DEF("num_hidden_layers", 12),
              [K_HEADS] = DEF("num_attention_heads", 12), [K_KV_HEADS] = {.how = D_HEADS},
              [K_EPS] = DEF("layer_norm_eps", 1e-12), [K_MAXPOS] = FIXED(1), [K_INTER] = DEF("intermediate_size", 3072),
              [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("hidden_act", "gelu"), [K_QKV_BIAS] = DEF("qkv_bias", 1),
              [K_P_ATTN] = DEF("attention_probs_dropout_prob", 0), [K_P_RESID] = DEF("hidden_dropout_prob", 0),
              [K_LABELS] = {.key = "id2label"}},
     .block = BLK_VIT, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN,
     .head = HEAD_CLS, .head_class = "ViTForImageClassification", .prefix = "vit", .lora_targets = NULL},
    /* FalconH1Config (configuration_falcon_h1.py @ 020a37d2; every key has a default) and modeling_falcon_h1.py @
     * 68c08116 (src/hf/hf_granite4.c: the mamba_* keys, projectors_bias, the muP multipliers; layers/mamba2.c without
     * the gated norm): TII Falcon-H1's decoder layers, each a Mamba2 mixer and a rotary attention side by side on the
     * same normed input, then a SwiGLU MLP (FalconH1MLP, mlp_bias). PEFT's mapping has no falcon_h1: --lora-targets. */
    {.model_type = "falcon_h1", .config_class = "FalconH1Config",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 128000), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 32),
              [K_KV_HEADS] = {.key = "num_key_value_heads", .def = 8, .how = D_KV_NULL},
              [K_INTER] = DEF("intermediate_size", 14336), [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT},
              [K_EPS] = DEF("rms_norm_eps", 1e-5), [K_MAXPOS] = DEF("max_position_embeddings", 8192),
              [K_QKV_BIAS] = DEF("attention_bias", 0), [K_O_BIAS] = DEF("attention_bias", 0),
              [K_MLP_BIAS] = DEF("mlp_bias", 0), [K_EMB_MULT] = DEF("embedding_multiplier", 1.0)},
     LLAMA_BLOCK, .block = BLK_FALCON_H1, .lora_targets = NULL},
    /* HunYuanDenseV1Config (configuration_hunyuan_v1_dense.py @ 28ca27cb: vocab_size 290943, hidden_size 4096,
     * intermediate_size 11008, num_hidden_layers 32, num_attention_heads 32, num_key_value_heads None -> the heads,
     * max_position_embeddings 2048, rms_norm_eps 1e-5, tie_word_embeddings False, attention_bias False, head_dim None;
     * the checkpoints' other keys: hf_hunyuan.c) and HunYuanDenseV1ForCausalLM (modeling_hunyuan_v1_dense.py @
     * 0233e509): LlamaDecoderLayer's template, HunYuanDenseV1Attention (q/k/v/o with attention_bias, head_dim
     * getattr(config, "head_dim", hidden // heads), query_layernorm / key_layernorm RMSNorm(head_dim) after
     * apply_rotary_pos_emb), HunYuanDenseV1MLP (no bias), the dynamic-NTK alpha rotary (the cos / sin values only).
     * PEFT's mapping was not read for hunyuan_v1_dense: --lora-targets. */
    {.model_type = "hunyuan_v1_dense", .config_class = "HunYuanDenseV1Config",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(290943, 4096, 11008, 32, 32), [K_EPS] = DEF("rms_norm_eps", 1e-5),
              [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0)},
     LLAMA_BLOCK, .qk_norm = QK_PER_HEAD, .qk_norm_rope = true, .lora_targets = NULL},
    /* HunYuanMoEV1Config (configuration_hunyuan_v1_moe.py @ 6e4054ae: HunYuanDenseV1Config's defaults, num_experts 1,
     * moe_topk 1; moe_topk and the checkpoints' other keys: hf_hunyuan.c) and HunYuanMoEV1ForCausalLM
     * (modeling_hunyuan_v1_moe.py @ 0233e509): hunyuan_v1_dense's attention, HunYuanMoEV1Moe in every layer
     * (SparseMoE style hunyuan_v1_moe: HunYuanMoEV1Gate's float32 wg, softmax top-k renormalised, HunYuanMoEV1Experts
     * of intermediate_size, shared_mlp of intermediate_size). PEFT's mapping was not read for hunyuan_v1_moe:
     * --lora-targets. */
    {.model_type = "hunyuan_v1_moe", .config_class = "HunYuanMoEV1Config",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(290943, 4096, 11008, 32, 32), [K_EPS] = DEF("rms_norm_eps", 1e-5),
              [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0), [K_EXPERTS] = DEF("num_experts", 1), [K_TOPK] = FIXED(1),
              [K_MOE_INTER] = DEF("intermediate_size", 11008), [K_NORM_TOPK] = FIXED(1)},
     LLAMA_BLOCK, .moe = MOE_HUNYUAN, .qk_norm = QK_PER_HEAD, .qk_norm_rope = true, .lora_targets = NULL},
    /* Dinov2Config (the keys and defaults: hf_read.c read_dinov2; layer_norm_eps 1e-6) and Dinov2ForImageClassification
     * (modeling_dinov2.py @ 015e68769f9823df27f5f7372dc155277e6ff7e6; hf_layers.c build_vit / dinov2_layer): ViT's
     * patch Conv2d, CLS token and position embeddings, mask_token (use_mask_token; unused without bool_masked_pos),
     * pre-LN Dinov2Layers with LayerScale (lambda1) after the attention and the MLP (Dinov2MLP, or Dinov2SwiGLUFFN with
     * use_swiglu_ffn: DINOv2-g), Dinov2Model.layernorm, the classifier on [CLS, mean of the patch tokens]. The
     * facebook/dinov2-* checkpoints are Dinov2Model (no labels: PretrainedConfig's num_labels 2 builds the head).
     * PEFT's mapping (peft @ 00073fe8 utils/constants.py) has no dinov2: --lora-targets. */
    {.model_type = "dinov2", .config_class = "Dinov2Config",
     .keys = {[K_VOCAB] = FIXED(1), [K_HIDDEN] = DEF("hidden_size", 768), [K_LAYERS] = DEF("num_hidden_layers", 12),
              [K_HEADS] = DEF("num_attention_heads", 12), [K_KV_HEADS] = {.how = D_HEADS},
              [K_EPS] = DEF("layer_norm_eps", 1e-6), [K_MAXPOS] = FIXED(1), [K_INTER] = FIXED(1) /* read_dinov2 */,
              [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("hidden_act", "gelu"), [K_QKV_BIAS] = DEF("qkv_bias", 1),
              [K_P_ATTN] = DEF("attention_probs_dropout_prob", 0), [K_P_RESID] = DEF("hidden_dropout_prob", 0),
              [K_LABELS] = {.key = "id2label"}},
     .block = BLK_DINOV2, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN,
     .head = HEAD_CLS, .head_class = "Dinov2ForImageClassification", .prefix = "dinov2", .lora_targets = NULL},
    /* NemotronConfig (configuration_nemotron.py @ 05cd1ec1: vocab_size 256000, hidden_size 6144, intermediate_size
     * 24576, num_hidden_layers 32, num_attention_heads 48, head_dim None -> hidden_size // heads, num_key_value_heads
     * None kept None (NemotronAttention's num_heads // None fails: required), hidden_act "relu2",
     * max_position_embeddings 4096, norm_eps 1e-5, tie_word_embeddings False, partial_rotary_factor 0.5,
     * attention_bias / mlp_bias False, attention_dropout 0.0) and NemotronForCausalLM (modeling_nemotron.py @
     * 0233e509: NemotronDecoderLayer's input_layernorm / post_attention_layernorm and NemotronModel.norm are
     * NemotronLayerNorm1P (LayerNorm with weight and bias, computed with weight + 1), q/k/v/o with
     * bias=attention_bias, apply_rotary_pos_emb on q[..., :rot_dim] with torch.cat of the rest (rot_dim =
     * int(head_dim * partial_rotary_factor)), NemotronMLP up_proj, relu2, down_proj). PEFT's mapping (peft @
     * 00073fe8 utils/constants.py) has no nemotron: --lora-targets */
    {.model_type = "nemotron", .config_class = "NemotronConfig",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(256000, 6144, 24576, 32, 48), [K_KV_HEADS] = REQ("num_key_value_heads"),
              [K_ACT] = ACT("hidden_act", "relu2"), [K_EPS] = DEF("norm_eps", 1e-5),
              [K_MAXPOS] = DEF("max_position_embeddings", 4096), [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT},
              [K_QKV_BIAS] = DEF("attention_bias", 0), [K_O_BIAS] = DEF("attention_bias", 0),
              [K_MLP_BIAS] = DEF("mlp_bias", 0), [K_ROTARY] = DEF("partial_rotary_factor", 0.5)},
     LLAMA_BLOCK, .norm = NORM_LAYER_1P, .mlp = MLP_PLAIN, .up_down = true, .lora_targets = NULL},
    /* ApertusConfig (configuration_apertus.py @ ecbf7a09: vocab_size 131072, hidden_size 4096, intermediate_size
     * 14336, num_hidden_layers 32, num_attention_heads 32, num_key_value_heads None -> the heads, hidden_act "xielu",
     * max_position_embeddings 65536, rms_norm_eps 1e-5, tie_word_embeddings False, rope_scaling llama3 (factor 8 over
     * 8192) by default, attention_bias False; no head_dim key of its own: ApertusAttention's getattr(config,
     * "head_dim", hidden_size // heads)) and ApertusForCausalLM (modeling_apertus.py @ 6e4054ae): LlamaDecoderLayer's
     * template (attention_layernorm, feedforward_layernorm: ApertusRMSNorm = LlamaRMSNorm), q_norm / k_norm =
     * ApertusRMSNorm(head_dim) per head, ApertusMLP up_proj, ACT2FN[hidden_act] (XIELUActivation), down_proj, no MLP
     * bias. PEFT's mapping (peft @ 00073fe8) has no apertus: --lora-targets */
    {.model_type = "apertus", .config_class = "ApertusConfig",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(131072, 4096, 14336, 32, 32), [K_ACT] = ACT("hidden_act", "xielu"),
              [K_EPS] = DEF("rms_norm_eps", 1e-5), [K_MAXPOS] = DEF("max_position_embeddings", 65536),
              [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT}, [K_QKV_BIAS] = DEF("attention_bias", 0),
              [K_O_BIAS] = DEF("attention_bias", 0), [K_MLP_BIAS] = FIXED(0)},
     LLAMA_BLOCK, .mlp = MLP_PLAIN, .up_down = true, .qk_norm = QK_PER_HEAD, .lora_targets = NULL},
    /* SiglipVisionConfig (configuration_siglip.py @ d5ab4d58: hidden_size 768, intermediate_size 3072,
     * num_hidden_layers 12, num_attention_heads 12, num_channels 3, image_size 224, patch_size 16, hidden_act
     * gelu_pytorch_tanh, layer_norm_eps 1e-6, attention_dropout 0.0; vision_use_head is no key of the class: absent,
     * SiglipVisionTransformer's hasattr gives the head) and SiglipVisionModel (modeling_siglip.py @ efa7189c, the
     * classes as hf_vision.c's Gemma 3 tower reads them; hf_layers.c build_siglip_vision / siglip_layer): the patch
     * Conv2d, the position nn.Embedding over the position_ids buffer (no CLS token), pre-LN SiglipEncoderLayers on
     * sdpa (q/k/v/out_proj with biases, SiglipMLP fc1 / fc2), post_layernorm, SiglipMultiheadAttentionPoolingHead
     * (vision_use_head). No loss of its own: training is pooler_output.mean() (last_hidden_state's without the head).
     * PEFT's mapping (peft @ 00073fe8 utils/constants.py) has no siglip_vision_model (nor siglip): --lora-targets. */
    {.model_type = "siglip_vision_model", .config_class = "SiglipVisionConfig",
     .keys = {[K_VOCAB] = FIXED(1), [K_HIDDEN] = DEF("hidden_size", 768), [K_LAYERS] = DEF("num_hidden_layers", 12),
              [K_HEADS] = DEF("num_attention_heads", 12), [K_KV_HEADS] = {.how = D_HEADS},
              [K_EPS] = DEF("layer_norm_eps", 1e-6), [K_MAXPOS] = FIXED(1), [K_INTER] = DEF("intermediate_size", 3072),
              [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("hidden_act", "gelu_pytorch_tanh"), [K_QKV_BIAS] = FIXED(1),
              [K_P_ATTN] = DEF("attention_dropout", 0), [K_P_RESID] = FIXED(0)},
     .block = BLK_SIGLIP_VISION, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN,
     .head = HEAD_CLS, .head_class = "SiglipVisionModel", .prefix = "vision_model", .lora_targets = NULL},
    /* MllamaTextConfig (configuration_mllama.py @ 032b32ab: every key has a default, Llama-3.2-11B-Vision's; the
     * attention dropout is `dropout`; head_dim hidden_size // num_attention_heads) read from MllamaConfig.text_config,
     * and MllamaForConditionalGeneration (modeling_mllama.py @ befb7955; src/hf/hf_mllama.c): without an image
     * MllamaTextModel.forward skips the MllamaCrossAttentionDecoderLayers (cross_attention_layers), so the layers
     * written are the MllamaSelfAttentionDecoderLayers (LlamaDecoderLayer's modules, MllamaRotaryEmbedding's
     * rope_scaling) on an embedding of vocab_size + 8 rows; the cross-attention layers, MllamaVisionModel and the
     * multi_modal_projector loaded frozen, not run; with --image they run (hf_mllama.c, layers/mllama.c). PEFT's
     * mapping (peft @ 00073fe8 utils/constants.py) has no mllama: --lora-targets. */
    {.model_type = "mllama", .config_class = "MllamaTextConfig (MllamaConfig.text_config)",
     .keys = {LLAMA_KEYS, LLAMA_SIZES(128256, 4096, 14336, 40, 32), [K_KV_HEADS] = DEF("num_key_value_heads", 8),
              [K_EPS] = DEF("rms_norm_eps", 1e-5), [K_MAXPOS] = DEF("max_position_embeddings", 131072),
              [K_P_ATTN] = DEF("dropout", 0)},
     LLAMA_BLOCK, .nested = "text_config", .lora_targets = NULL},
    /* PaliGemmaConfig (configuration_paligemma.py @ 04d596e6: text_config["model_type"] defaults to "gemma" and
     * CONFIG_MAPPING[...](**text_config) gives GemmaConfig's defaults for the keys it lacks, the gemma row's; projection_dim
     * 2048, which it writes into vision_config) and PaliGemmaForConditionalGeneration (modeling_paligemma.py @ efa7189c):
     * the language model GemmaForCausalLM read from text_config; vision_tower (SiglipVisionModel, the Gemma 3 tower of
     * hf_vision.c) and PaliGemmaMultiModalProjector counted, loaded frozen, run on --image; the forward's float mask
     * (layers/llm.c prefix_mask_4x) and its own loss (src/engine/loss.c emit_paligemma); generate() greedy with a
     * DynamicCache (prepare_inputs_for_generation's pixel_values in the prefill alone, the mask from generate()'s 2-D
     * attention_mask in every pass: prefix_mask_4x). PaliGemma 2 (text_config model_type gemma2) is the next row.
     * PEFT's mapping (peft @ 00073fe8 utils/constants.py) has no paligemma: --lora-targets. */
    {.model_type = "paligemma", .config_class = "GemmaConfig (PaliGemmaConfig.text_config)",
     .keys = {GEMMA_KEYS}, LLAMA_BLOCK, .norm = NORM_RMS_GEMMA, .embed_scale = true, .nested = "text_config",
     .vision = VIS_PALIGEMMA,
     .lora_targets = NULL},
    /* PaliGemma 2 (google/paligemma2-*: text_config model_type "gemma2"; PaliGemmaConfig @ 04d596e6 builds
     * CONFIG_MAPPING["gemma2"](**text_config), Gemma2Config's defaults for the keys it lacks, the gemma2 row's) and
     * PaliGemmaForConditionalGeneration (modeling_paligemma.py @ efa7189c: AutoModelForCausalLM.from_config gives
     * Gemma2ForCausalLM): the gemma2 row's language model (pre / post norms, soft-capping, sliding / global
     * alternation; modeling_gemma2.py @ efa7189c Gemma2DecoderLayer's sliding mask made from PaliGemma's, layers/llm.c
     * prefix_sliding) under the paligemma row's tower, projector, mask and loss. Training only: --mode infer
     * (Gemma2Model.forward's HybridCache when not training) and generate refused (hf.c). */
    {.model_type = "paligemma", .config_class = "Gemma2Config (PaliGemmaConfig.text_config)", .keys = {GEMMA2_KEYS},
     LLAMA_BLOCK, .norm = NORM_RMS_GEMMA, .place = PLACE_SANDWICH, .window = WIN_ALTERNATE, .embed_scale = true,
     .nested = "text_config", .vision = VIS_PALIGEMMA, .text_type = "gemma2", .eager_release = true,
     .lora_targets = NULL},
#undef GEMMA_KEYS
#undef GEMMA2_KEYS
    /* SiglipConfig (configuration_siglip.py @ d5ab4d58: text_config and vision_config, each its class's defaults when
     * absent or None) and SiglipModel (modeling_siglip.py @ efa7189c; hf_layers.c build_siglip): the keys below are
     * SiglipTextConfig's (vocab_size 32000, hidden_size 768, intermediate_size 3072, num_hidden_layers 12,
     * num_attention_heads 12, max_position_embeddings 64, hidden_act gelu_pytorch_tanh, layer_norm_eps 1e-6,
     * attention_dropout 0.0), read from text_config; vision_config is read with the siglip_vision_model row above
     * (arch.tower, vc_hf_build). SiglipTextTransformer: token + position embeddings, SiglipEncoderLayers without a
     * mask (siglip_layer), final_layer_norm, pooled = the last token, head nn.Linear(hidden_size, hidden_size). The
     * loss is SiglipModel.forward's own with return_loss=True (loss "siglip", src/engine/loss.c). PEFT's mapping
     * (peft @ 00073fe8 utils/constants.py) has no siglip: --lora-targets. */
    {.model_type = "siglip", .config_class = "SiglipConfig",
     .keys = {[K_VOCAB] = DEF("vocab_size", 32000), [K_HIDDEN] = DEF("hidden_size", 768),
              [K_LAYERS] = DEF("num_hidden_layers", 12), [K_HEADS] = DEF("num_attention_heads", 12),
              [K_KV_HEADS] = {.how = D_HEADS}, [K_EPS] = DEF("layer_norm_eps", 1e-6),
              [K_MAXPOS] = DEF("max_position_embeddings", 64), [K_INTER] = DEF("intermediate_size", 3072),
              [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("hidden_act", "gelu_pytorch_tanh"), [K_QKV_BIAS] = FIXED(1),
              [K_P_ATTN] = DEF("attention_dropout", 0), [K_P_RESID] = FIXED(0)},
     .block = BLK_SIGLIP, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN,
     .pos = POS_LEARNED, .head = HEAD_CLS, .head_class = "SiglipModel", .prefix = "text_model", .nested = "text_config",
     .lora_targets = NULL},
    /* MarianConfig (configuration_marian.py MarianConfig.__init__, read through the code index without its commit:
     * vocab_size 58101, decoder_vocab_size None (vocab_size), max_position_embeddings 1024, 12 + 12 layers of 16
     * heads, ffn 4096, d_model 1024, gelu, dropout 0.1, attention and activation dropout 0, scale_embedding False,
     * share_encoder_decoder_embeddings True; tie_word_embeddings PretrainedConfig's True) and MarianMTModel
     * (modeling_marian.py @00b676f8, src/hf/hf_bart.c): bart's row with MarianSinusoidalPositionalEmbedding (a frozen
     * nn.Embedding of max_position_embeddings rows, no offset, looked up under no_grad), embed_tokens(ids) *
     * embed_scale, no layernorm_embedding; the layers and MarianAttention "Copied from" bart's (post-LN). PEFT's
     * mapping (peft @ 00073fe8 utils/constants.py) has no marian: --lora-targets. */
    {.model_type = "marian", .config_class = "MarianConfig",
     .keys = {BART_KEYS(58101)},
     .block = BLK_BART, .norm = NORM_LAYER, .place = PLACE_POST, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN, .pos = POS_LEARNED,
     .head = HEAD_LM, .head_class = "MarianMTModel", .lora_targets = NULL},
    /* PegasusConfig (configuration_pegasus.py @00e12e7c PegasusConfig.__init__: vocab_size 50265, max_position_embeddings
     * 1024, 12 + 12 layers of 16 heads, ffn 4096, d_model 1024, gelu, dropout 0.1, attention and activation dropout 0,
     * scale_embedding False; tie_word_embeddings PretrainedConfig's True) and PegasusForConditionalGeneration
     * (modeling_pegasus.py @00b676f8, src/hf/hf_bart.c): marian's embeddings (PegasusSinusoidalPositionalEmbedding is
     * "Copied from" Marian's), MBart's pre-LN layers (PegasusEncoderLayer / PegasusDecoderLayer "Copied from" them) and
     * each stack's final layer_norm; the attention "Copied from" bart's. PEFT's mapping (peft @ 00073fe8) has no
     * pegasus: --lora-targets. */
    {.model_type = "pegasus", .config_class = "PegasusConfig",
     .keys = {BART_KEYS(50265)},
     .block = BLK_BART, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN, .pos = POS_LEARNED,
     .head = HEAD_LM, .head_class = "PegasusForConditionalGeneration", .lora_targets = NULL},
    /* DeepseekV4Config (DeepSeek-V4-Flash / -Pro; configuration_deepseek_v4.py @ 015c0781, modeling_deepseek_v4.py
     * @ 01976081): a count-only row. Its keys are read and its parameters counted by hf_deepseek_v4.c, not by the
     * row's reading and writing (no block template runs: vc_hf_build refuses every estimate after the count, as the
     * compressed attention, the hyper-connections and the hash-MoE are not modelled). */
    {.model_type = "deepseek_v4", .config_class = "DeepseekV4Config", .keys = {[K_ACT] = ACT("hidden_act", "silu")},
     LLAMA_BLOCK, .lora_targets = NULL},
    /* Ministral3Config (configuration_ministral3.py @ 008e5743: every key has a default, Ministral-3-8B's: vocab_size
     * 131072, hidden_size 4096, intermediate_size 14336, 34 layers, 32 heads, num_key_value_heads 8 (None: the heads),
     * head_dim 128 (None: hidden_size // num_attention_heads), max_position_embeddings 262144, rms_norm_eps 1e-5,
     * untied, sliding_window None, rope_parameters None: yarn with llama_4_scaling_beta 0.1 and
     * original_max_position_embeddings 16384) and Ministral3ForCausalLM (modular_ministral3.py @ 00b364c7):
     * MistralForCausalLM's modules, Ministral3Attention the MistralAttention plus the llama-4 attention scale of q after
     * the rotation (hf_read.c read_l4_scale, layers/llm.c llama4_scale). PEFT's mapping (peft @ 00073fe8
     * utils/constants.py) has no ministral3: --lora-targets. */
#define MINISTRAL3_KEYS                                                                                         \
    LLAMA_KEYS, LLAMA_SIZES(131072, 4096, 14336, 34, 32),                                                      \
        [K_KV_HEADS] = {.key = "num_key_value_heads", .def = 8, .how = D_KV_NULL},                             \
        [K_HEAD_DIM] = {.key = "head_dim", .def = 128, .how = D_SPLIT_NULL}, [K_EPS] = DEF("rms_norm_eps", 1e-5), \
        [K_MAXPOS] = DEF("max_position_embeddings", 262144), [K_WINDOW] = OFF_IF_NULL("sliding_window", 0)
    {.model_type = "ministral3", .config_class = "Ministral3Config", .keys = {MINISTRAL3_KEYS},
     LLAMA_BLOCK, .l4_scale = true, .lora_targets = NULL},
    /* Mistral3Config (configuration_mistral3.py @ 0db25542) with text_config.model_type "ministral3"
     * (Ministral-3-3B/8B/14B-*-2512): CONFIG_MAPPING["ministral3"](**text_config), Ministral3Config's defaults for
     * what text_config lacks (the ministral3 row's), Ministral3Model as the language model
     * (modeling_mistral3.py @ 00dcc6dd: AutoModel.from_config(config.text_config)); the vision tower and projector as
     * the mistral3 row's (hf_pixtral.c). */
    {.model_type = "mistral3", .config_class = "Ministral3Config (Mistral3Config.text_config)", .keys = {MINISTRAL3_KEYS},
     LLAMA_BLOCK, .l4_scale = true, .nested = "text_config", .vision = VIS_PIXTRAL, .text_type = "ministral3",
     .lora_targets = NULL},
    /* MBartConfig (configuration_mbart.py @008f5c8c MBartConfig.__init__: bart's defaults, vocab_size 50265, 1024
     * positions, 12 + 12 layers of 16 heads, ffn 4096, d_model 1024, gelu, dropout 0.1, attention and activation
     * dropout 0, scale_embedding False, pad 1, eos 2, forced_eos_token_id 2; tie_word_embeddings PretrainedConfig's
     * True) and MBartForConditionalGeneration (modeling_mbart.py @efa7189c, the bart row's commit; src/hf/hf_bart.c):
     * bart's embeddings (MBartLearnedPositionalEmbedding and MBartScaledWordEmbedding "Copied from" bart's,
     * layernorm_embedding), pegasus's pre-LN layers (MBartEncoderLayer / MBartDecoderLayer, which pegasus's copy) and
     * each stack's final layer_norm, its own shift_tokens_right. PEFT's mapping (peft @ 00073fe8) has no mbart:
     * --lora-targets. */
    {.model_type = "mbart", .config_class = "MBartConfig",
     .keys = {BART_KEYS(50265)},
     .block = BLK_BART, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN, .pos = POS_LEARNED,
     .head = HEAD_LM, .head_class = "MBartForConditionalGeneration", .lora_targets = NULL},
    /* CLIPConfig (configuration_clip.py @ 01841b34) and CLIPModel (modeling_clip.py @ 000f1ffd; hf_layers.c
     * build_clip): hf_clip.c checks the config and counts the parameters (projection_dim); the keys below are
     * CLIPTextConfig's (vocab_size 49408, hidden_size 512, intermediate_size 2048, num_hidden_layers 12,
     * num_attention_heads 8, max_position_embeddings 77, hidden_act quick_gelu, layer_norm_eps 1e-5, attention_dropout
     * 0.0), read from text_config; vision_config with vc__hf_clip_vision below (arch.tower, vc_hf_build), SigLIP's
     * two-tower mechanism. CLIPTextTransformer: token + position embeddings, CLIPEncoderLayers on sdpa with is_causal
     * (siglip_layer, causal), final_layer_norm, pooled = the eos position's row, text_projection (no bias); the loss
     * CLIPModel.forward's clip_loss with return_loss=True (loss "clip", src/engine/loss.c). PEFT's mapping (peft @
     * 00073fe8 utils/constants.py) has no clip: --lora-targets. */
    {.model_type = "clip", .config_class = "CLIPConfig",
     .keys = {[K_VOCAB] = DEF("vocab_size", 49408), [K_HIDDEN] = DEF("hidden_size", 512),
              [K_LAYERS] = DEF("num_hidden_layers", 12), [K_HEADS] = DEF("num_attention_heads", 8),
              [K_KV_HEADS] = {.how = D_HEADS}, [K_EPS] = DEF("layer_norm_eps", 1e-5),
              [K_MAXPOS] = DEF("max_position_embeddings", 77), [K_INTER] = DEF("intermediate_size", 2048),
              [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("hidden_act", "quick_gelu"), [K_QKV_BIAS] = FIXED(1),
              [K_P_ATTN] = DEF("attention_dropout", 0), [K_P_RESID] = FIXED(0)},
     .block = BLK_CLIP, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN,
     .pos = POS_LEARNED, .head = HEAD_CLS, .head_class = "CLIPModel", .prefix = "text_model", .nested = "text_config",
     .lora_targets = NULL},
    /* M2M100Config (configuration_m2m_100.py @04591daa M2M100Config.__init__, the stored version: vocab_size 128112,
     * max_position_embeddings 1024, 12 + 12 layers of 16 heads, ffn 4096, d_model 1024, relu, dropout 0.1,
     * attention_dropout 0.1, activation_dropout 0, layerdrop 0.05, scale_embedding True, pad 1, bos 0, eos 2,
     * decoder_start 2; tie_word_embeddings PretrainedConfig's True) and M2M100ForConditionalGeneration
     * (modeling_m2m_100.py @efa7189c, the bart row's commit; src/hf/hf_bart.c): facebook/m2m100_418M, m2m100_1.2B and
     * NLLB-200 (nllb-200-distilled-600M / -1.3B, nllb-200-3.3B are m2m_100 configs). M2M100ScaledWordEmbedding
     * (bart's, x embed_scale), M2M100SinusoidalPositionalEmbedding (a non-persistent buffer of max_position_embeddings +
     * 2 rows indexed from the padding mask: layers/bart.c M2M100Positions), no layernorm_embedding, MBart's pre-LN
     * layers and each stack's final layer_norm, bart's shift_tokens_right, lm_head tied to shared, no
     * final_logits_bias. PEFT's mapping (peft @ 00073fe8 utils/constants.py) has no m2m_100: --lora-targets. */
    {.model_type = "m2m_100", .config_class = "M2M100Config",
     .keys = {BART_KEYS_WITH(128112, "relu", 0.1)},
     .block = BLK_BART, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN, .pos = POS_LEARNED,
     .head = HEAD_LM, .head_class = "M2M100ForConditionalGeneration", .lora_targets = NULL},
    /* SmolVLMConfig (configuration_smolvlm.py @ 9a3f7081) and Idefics3Config (configuration_idefics3.py @ 842a28d0):
     * the language model is LlamaConfig's, read from text_config (CONFIG_MAPPING[text_config.get("model_type",
     * "llama")]; text_config None: LlamaConfig's defaults, the llama row's); SmolVLMForConditionalGeneration
     * (modeling_smolvlm.py @ b282e23b) and Idefics3ForConditionalGeneration (modeling_idefics3.py @ 9a80143c): the vision
     * transformer and the connector counted and loaded frozen, never run without an image (hf_idefics3.c: --image,
     * --serve, --tp refused); the text-only step is LlamaForCausalLM's (its loss_function). PEFT's mapping (peft
     * @ 00073fe8 utils/constants.py) has neither: --lora-targets. */
#define IDEFICS3_KEYS                                                                                          \
    LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 32000), [K_HIDDEN] = DEF("hidden_size", 4096),                   \
        [K_LAYERS] = DEF("num_hidden_layers", 32), [K_HEADS] = DEF("num_attention_heads", 32),                 \
        [K_INTER] = DEF("intermediate_size", 11008), [K_HEAD_DIM] = {.key = "head_dim", .how = D_SPLIT},       \
        [K_QKV_BIAS] = DEF("attention_bias", 0), [K_O_BIAS] = DEF("attention_bias", 0), [K_MLP_BIAS] = DEF("mlp_bias", 0)
    {.model_type = "smolvlm", .config_class = "LlamaConfig (SmolVLMConfig.text_config)", .keys = {IDEFICS3_KEYS},
     LLAMA_BLOCK, .nested = "text_config", .vision = VIS_IDEFICS3, .lora_targets = NULL},
    {.model_type = "idefics3", .config_class = "LlamaConfig (Idefics3Config.text_config)", .keys = {IDEFICS3_KEYS},
     LLAMA_BLOCK, .nested = "text_config", .vision = VIS_IDEFICS3, .lora_targets = NULL},
#undef IDEFICS3_KEYS
    /* Glm4vConfig (models/glm4v/configuration_glm4v.py @ 68c08116): the language model is Glm4vTextConfig's, read from
     * text_config, else (text_config None: Glm4vTextConfig(**kwargs)) from the config's own keys: vocab 151552, hidden
     * 4096, intermediate 13696, 40 layers, 32 heads, 2 kv heads, rms_norm_eps 1e-5, max_position_embeddings 32768,
     * untied; no head_dim key (Glm4vTextAttention: hidden_size // num_attention_heads), no partial_rotary_factor
     * default (modeling_rope_utils.py @ 0044e3b3: 1.0 when absent). Glm4vTextModel (modeling_glm4v.py @ 03eac6f6):
     * Glm4vTextDecoderLayer is Glm4DecoderLayer's four norms (input_layernorm, post_self_attn_layernorm,
     * post_attention_layernorm, post_mlp_layernorm: PLACE_SANDWICH_GLM4), Glm4vTextAttention q/k/v with biases always
     * (bias=True), o_proj without, Glm4vTextMLP's gate_up_proj / chunk / down_proj (Phi3MLP's ops), the interleaved
     * partial rotary (rotate_half_llm over (even, odd) pairs after mrope's sections: hf_glm4.c, hf_glm4v.c); the
     * vision tower counted and loaded frozen, never run (hf_glm4v.c: --image, --serve, --tp refused). PEFT's mapping
     * (peft @ 00073fe8 utils/constants.py) has no glm4v: --lora-targets. */
    {.model_type = "glm4v", .config_class = "Glm4vTextConfig (Glm4vConfig.text_config)",
     .keys = {LLAMA_KEYS, [K_VOCAB] = DEF("vocab_size", 151552), [K_HIDDEN] = DEF("hidden_size", 4096),
              [K_INTER] = DEF("intermediate_size", 13696), [K_LAYERS] = DEF("num_hidden_layers", 40),
              [K_HEADS] = DEF("num_attention_heads", 32), [K_KV_HEADS] = DEF("num_key_value_heads", 2),
              [K_EPS] = DEF("rms_norm_eps", 1e-5), [K_MAXPOS] = DEF("max_position_embeddings", 32768),
              [K_QKV_BIAS] = FIXED(1), [K_O_BIAS] = FIXED(0), [K_ROTARY] = DEF("partial_rotary_factor", 1)},
     LLAMA_BLOCK, .place = PLACE_SANDWICH_GLM4, .mlp = MLP_GATED_FUSED, .interleaved_rope = true, .nested = "text_config",
     .nested_opt = true, .vision = VIS_GLM4V, .lora_targets = NULL},
    /* InternVLConfig (configuration_internvl.py @ 04ea98d5: text_config["model_type"] defaults to "qwen2",
     * CONFIG_MAPPING[...](**text_config)) and InternVLForConditionalGeneration (modeling_internvl.py @ 2fd44548:
     * InternVLModel's language_model = AutoModel.from_config(text_config), lm_head): InternVL3 (text_config qwen2,
     * Qwen2Config's defaults for what it lacks, the qwen2 row's) and InternVL3.5 (qwen3, the qwen3 row's); the vision
     * tower and the projector counted and loaded frozen, never run without an image (hf_internvl.c: --image, --serve,
     * --tp refused). PEFT's mapping (peft @ 00073fe8 utils/constants.py) has no internvl: --lora-targets. */
    {.model_type = "internvl", .config_class = "Qwen2Config (InternVLConfig.text_config)", .keys = {QWEN2_KEYS},
     LLAMA_BLOCK, .window = WIN_FROM_LAYER, .nested = "text_config", .vision = VIS_INTERNVL, .lora_targets = NULL},
    {.model_type = "internvl", .config_class = "Qwen3Config (InternVLConfig.text_config)", .keys = {QWEN3_KEYS},
     LLAMA_BLOCK, .window = WIN_FROM_LAYER, .qk_norm = QK_PER_HEAD, .nested = "text_config", .vision = VIS_INTERNVL,
     .text_type = "qwen3", .lora_targets = NULL},
#undef QWEN2_KEYS
#undef QWEN3_KEYS
};
/* CLIPVisionConfig (configuration_clip.py @ 01841b34: hidden_size 768, intermediate_size 3072, num_hidden_layers 12,
 * num_attention_heads 12, num_channels 3, image_size 224, patch_size 32, hidden_act quick_gelu, layer_norm_eps 1e-5,
 * attention_dropout 0.0), CLIPModel's vision tower (CLIPVisionTransformer, modeling_clip.py @ 000f1ffd; hf_layers.c
 * build_clip_vision): no model_type of its own here, read by vc_hf_build from a clip config's vision_config. */
const hf_family vc__hf_clip_vision = {
    .model_type = "clip", .config_class = "CLIPVisionConfig",
    .keys = {[K_VOCAB] = FIXED(1), [K_HIDDEN] = DEF("hidden_size", 768), [K_LAYERS] = DEF("num_hidden_layers", 12),
             [K_HEADS] = DEF("num_attention_heads", 12), [K_KV_HEADS] = {.how = D_HEADS},
             [K_EPS] = DEF("layer_norm_eps", 1e-5), [K_MAXPOS] = FIXED(1), [K_INTER] = DEF("intermediate_size", 3072),
             [K_HEAD_DIM] = {.how = D_SPLIT}, [K_ACT] = ACT("hidden_act", "quick_gelu"), [K_QKV_BIAS] = FIXED(1),
             [K_P_ATTN] = DEF("attention_dropout", 0), [K_P_RESID] = FIXED(0)},
    .block = BLK_CLIP_VISION, .norm = NORM_LAYER, .place = PLACE_PRE, .attn = ATTN_SPLIT, .mlp = MLP_PLAIN,
    .head = HEAD_CLS, .head_class = "CLIPModel", .prefix = "vision_model", .lora_targets = NULL};
#pragma GCC diagnostic pop
const int vc__hf_nfamilies = (int)(sizeof vc__hf_families / sizeof vc__hf_families[0]);

#undef REQ
#undef DEF
#undef FIXED
#undef OFF_IF_NULL
#undef ACT
#undef LLAMA_KEYS
#undef LLAMA_BLOCK

const char *vc_hf_families(void) { return FAMILIES; }

static const hf_family *family_of(const cJSON *cfg)
{
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    const hf_family *f = NULL;
    for (int i = 0; i < vc__hf_nfamilies && cJSON_IsString(mt); i++) {
        const hf_family *g = &vc__hf_families[i];
        if (strcmp(mt->valuestring, g->model_type)) continue;
        if (!g->text_type) { /* the row for any nested model_type but those a text_type row claims */
            if (!f) f = g;
            continue;
        }
        /* mistral3 with a ministral3 language model: Mistral3Config's CONFIG_MAPPING[text_config["model_type"]] */
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(cfg, g->nested);
        const cJSON *t = cJSON_IsObject(n) ? cJSON_GetObjectItemCaseSensitive(n, "model_type") : NULL;
        if (cJSON_IsString(t) && !strcmp(t->valuestring, g->text_type)) return g;
    }
    return f;
}

/* PEFT's default target_modules per model_type (peft/utils/constants.py
 * TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING), as the layers here
 * are named: the row's lora_targets. */
const char *vc_hf_lora_targets(const cJSON *cfg)
{
    const hf_family *f = family_of(cfg);
    return f && f->lora_targets ? f->lora_targets : ""; /* none: PEFT's mapping lacks the model_type */
}

/* Whether the family's vision tower runs a batch's images as one sequence:
 * Qwen2.5-VL's (Qwen2_5_VisionTransformerPretrainedModel, modeling_qwen2_5_vl.py
 * @ efa7189c: the patches of every image concatenated, attention under a
 * [1, n, n] block mask, its memory growing with the batch squared), Qwen3-VL's
 * and Qwen3.5's (Qwen3VLVisionAttention, modeling_qwen3_vl.py @ 00709b86: the
 * patches concatenated, sdpa run on one image after another, so that a batch's
 * attention temporaries are one image's, which a per-sample plan would scale by
 * the batch), not SigLIP's (SiglipVisionModel: the images a batch dimension). */
bool vc_hf_images_one_sequence(const cJSON *cfg)
{
    const hf_family *f = family_of(cfg);
    return f && (f->vision == VIS_QWEN2_5 || f->vision == VIS_QWEN2 || f->vision == VIS_QWEN3 || f->vision == VIS_QWEN3_5 || f->vision == VIS_PIXTRAL);
}

/* vllm/config/model.py (vllm-project/vllm @ 18ec6629): _find_dtype reads
 * config.dtype (transformers turns a config.json's "torch_dtype" into it);
 * _STR_DTYPE_TO_TORCH_DTYPE names; _FLOAT16_NOT_SUPPORTED_MODELS. */
int vc_hf_dtype(const cJSON *cfg, bool *no_fp16)
{
    static const struct { const char *name; int dt; } names[] = {
        {"float32", VC_DT_F32}, {"float", VC_DT_F32}, {"float16", VC_DT_F16}, {"half", VC_DT_F16},
        {"bfloat16", VC_DT_BF16},
    };
    static const char *const no16[] = {"gemma2", "gemma3", "gemma3_text", "plamo2", "glm4"};
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    *no_fp16 = false;
    for (size_t i = 0; i < sizeof no16 / sizeof *no16 && cJSON_IsString(mt); i++)
        *no_fp16 |= !strcmp(mt->valuestring, no16[i]);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(cfg, "dtype");
    if (!cJSON_IsString(d)) d = cJSON_GetObjectItemCaseSensitive(cfg, "torch_dtype");
    for (size_t i = 0; i < sizeof names / sizeof *names && cJSON_IsString(d); i++)
        if (!strcmp(d->valuestring, names[i].name)) return names[i].dt;
    return -1;
}

bool vc_hf_is_config(const cJSON *root)
{
    return cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "model_type") &&
           !cJSON_GetObjectItemCaseSensitive(root, "layers");
}

/* --liger: transformers' Trainer (use_liger_kernel=True; TRL's SFTTrainer the same) calls Liger-Kernel's
 * _apply_liger_kernel_to_instance(model, **liger_kernel_config), which looks model.config.model_type up in
 * MODEL_TYPE_TO_APPLY_LIGER_FN, keeps the keyword arguments apply_liger_kernel_to_<model_type> takes and calls it
 * with model=model (src/liger_kernel/transformers/monkey_patch.py @ ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c,
 * l.3623-3648). Its defaults: rope, rms_norm, swiglu (geglu for the gemma families), fused_linear_cross_entropy
 * True; cross_entropy False (apply_liger_kernel_to_llama l.221-286, _mistral l.688, _qwen2 l.1598, _qwen3 l.1665,
 * _gemma l.921-987, _gemma2 l.990-1061, _gemma3_text l.1064-1148, _mixtral l.799-869, _qwen3_moe l.1722-1784).
 * An unknown model_type is only logged there (nothing patched): refused here, as the option would do nothing.
 * Modelled (each layer's RMSNorms, mlp, the module's apply_rotary_pos_emb, the lce_forward):
 *   llama, mistral, qwen2, qwen3, mixtral, qwen3_moe: base_model.norm, each layer's input_layernorm and
 *     post_attention_layernorm through _patch_rms_norm_module's defaults (offset 0, casting_mode "llama", in_place
 *     True); the mlp through _patch_swiglu_module(LigerSwiGLUMLP). Qwen3's and Qwen3-MoE's q_norm / k_norm are no
 *     instance attributes it patches: they stay Qwen3RMSNorm.
 *   gemma: _patch_rms_norm_module(offset 1.0, casting_mode "gemma") on the same three, _patch_geglu_module(mlp).
 *   gemma2: the same with in_place False, also on pre_feedforward_layernorm / post_feedforward_layernorm;
 *     gemma2.py's lce_forward passes final_logit_softcapping to the fused loss (src/engine/loss.c's softcap).
 *   gemma3_text: geglu and the fused loss only. Its rms_norm also patches self_attn.q_norm / k_norm, which
 *     Gemma3Attention.forward runs on q_proj(x).view(...).transpose(1, 2): LigerRMSNormFunction's ensure_contiguous
 *     copies that view, and LigerRopeFunction's transpose(1, 2).contiguous() then copies the norm's [B, heads, L, D]
 *     output (ops/rope.py rope_forward): neither copy is modelled, so rope and rms_norm are refused there.
 * mixtral and qwen3_moe's swiglu at transformers >= 5 binds LigerExperts.forward to decoder_layer.mlp.experts
 * (LigerFusedMoEFunction, ops/fused_moe.py: layers/llm.c liger_fused_moe), whatever the experts_implementation
 * (its forward replaces the decorated one); below 5 it rebinds each expert module (LigerBlockSparseTop2MLP /
 * LigerQwen3MoeSwiGLUMLP: LigerSiLUMulFunction in each expert of 4.x's loop, modelled with --experts-implementation
 * per_expert). Both through the SparseMoE layer's "liger" flag.
 * cross_entropy (False by default; --liger-kernels) sets transformers.loss.loss_utils' nn.functional.cross_entropy
 * = liger_cross_entropy (_llama l.259-262, _gemma l.960-963, _gemma2 l.1032-1035, _gemma3_text l.1113-1116,
 * _mixtral l.834-837, _qwen2 l.1633-1636, _qwen3 l.1691-1694, _qwen3_moe l.1749-1752): ForCausalLMLoss with
 * LigerCrossEntropyFunction, src/engine/loss.c's liger_cross_entropy row; _mistral's (l.723-724) sets
 * modeling_mistral.CrossEntropyLoss, which no loss reads any more: refused. */
static const char *const liger_kernel_names[] = {"rope", "rms_norm", "swiglu", "geglu", "fused_linear_cross_entropy",
                                                 "cross_entropy", NULL}; /* the LIGER_* bits' order */

/* --liger-kernels "a,b": the LIGER_* bits named, each at most once; -1 (err set) on an unknown or empty name */
static int liger_kernels_parse(const char *list, vc_error *err)
{
    int m = 0;
    for (const char *p = list;;) {
        size_t n = strcspn(p, ",");
        int k = 0;
        while (liger_kernel_names[k] && (strlen(liger_kernel_names[k]) != n || strncmp(p, liger_kernel_names[k], n)))
            k++;
        if (!liger_kernel_names[k] || (m & (1 << k))) {
            vc_set_error(err, VC_ERR_USAGE, O("liger_kernels"), "'%.*s' is %s (choose among rope, rms_norm, swiglu, "
                         "geglu, fused_linear_cross_entropy, cross_entropy, each once)", (int)(n > 64 ? 64 : n), p,
                         liger_kernel_names[k] ? "named twice" : "no keyword of apply_liger_kernel_to_*");
            return -1;
        }
        m |= 1 << k;
        if (!p[n]) return m;
        p += n + 1;
    }
}

static int liger_family(arch *a, const char *fam, const char *kernels, vc_error *err)
{
    static const char *const swiglu[] = {"llama", "mistral", "qwen2", "qwen3", "mixtral", "qwen3_moe", NULL};
    static const char *const geglu[] = {"gemma", "gemma2", "gemma3_text", NULL};
    /* MODEL_TYPE_TO_APPLY_LIGER_FN's keys at ead96b61 that are families here */
    static const char *const patched[] = {"gemma3", "gemma4_text", "gemma4", "glm4", "gpt_oss", "llama4_text", "llama4",
                                          "granite", "nemotron", "olmo2", "olmo3", "pixtral", "qwen2_vl", "qwen2_5_vl",
                                          "qwen3_next", "qwen3_vl", "qwen3_vl_moe", "smollm3", "phi3", "falcon_h1",
                                          "exaone4", "paligemma",
                                          /* mllama: MODEL_TYPE_TO_APPLY_LIGER_FN["mllama"] = apply_liger_kernel_to_mllama in
                                           * the monkey_patch.py texts read through the code search (no pinned commit) */
                                          "mllama",
                                          /* smolvlm: MODEL_TYPE_TO_APPLY_LIGER_FN["smolvlm"] = apply_liger_kernel_to_smolvlm
                                           * (monkey_patch.py @ ead96b61 l.2784, l.3581); idefics3 has none */
                                          "smolvlm",
                                          /* glm4v: apply_liger_kernel_to_glm4v (Glm4vRMSNorm, the text MLPs'
                                           * LigerPhi3SwiGLUMLP, glm4v lce_forward) in a monkey_patch.py text read through
                                           * the code search (no pinned commit) */
                                          "glm4v",
                                          /* internvl: MODEL_TYPE_TO_APPLY_LIGER_FN["internvl"] =
                                           * apply_liger_kernel_to_internvl in the monkey_patch.py texts read through the
                                           * code search (no pinned commit) */
                                          "internvl", NULL};
    int g = 0; /* 1 swiglu, 2 geglu */
    for (int i = 0; !g && swiglu[i]; i++) g = strcmp(fam, swiglu[i]) ? 0 : 1;
    for (int i = 0; !g && geglu[i]; i++) g = strcmp(fam, geglu[i]) ? 0 : 2;
    if (!g) {
        for (int i = 0; patched[i]; i++)
            if (!strcmp(fam, patched[i]))
                return vc_set_error(err, VC_ERR_USAGE, O("liger"), "%s: apply_liger_kernel_to_%s's patch set is not "
                                    "modelled (modelled: llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text, "
                                    "mixtral, qwen3_moe); " OV("loss", "liger") " models its fused linear cross-entropy "
                                    "alone", fam, fam);
        return vc_set_error(err, VC_ERR_USAGE, O("liger"), "%s: Liger-Kernel has no apply_liger_kernel_to_%s "
                            "(_apply_liger_kernel_to_instance patches nothing for it)", fam, fam);
    }
    const int mlp = g == 1 ? LIGER_SWIGLU : LIGER_GEGLU;
    int m = LIGER_ROPE | LIGER_RMS_NORM | mlp | LIGER_FLCE; /* the defaults */
    if (kernels && kernels[0]) {
        if ((m = liger_kernels_parse(kernels, err)) < 0) return err->code;
        if (m & (LIGER_SWIGLU | LIGER_GEGLU) & ~mlp) /* the key _apply_liger_kernel_to_instance would drop */
            return vc_set_error(err, VC_ERR_USAGE, O("liger_kernels"), "%s: apply_liger_kernel_to_%s takes %s, not %s",
                                fam, fam, g == 1 ? "swiglu" : "geglu", g == 1 ? "geglu" : "swiglu");
        if ((m & LIGER_CE) && (m & LIGER_FLCE)) /* every apply_liger_kernel_to_*'s assert */
            return vc_set_error(err, VC_ERR_USAGE, O("liger_kernels"), "cross_entropy and fused_linear_cross_entropy "
                                "cannot both be True");
        if ((m & LIGER_CE) && !strcmp(fam, "mistral")) /* monkey_patch.py l.723-724 */
            return vc_set_error(err, VC_ERR_USAGE, O("liger_kernels"), "mistral: apply_liger_kernel_to_mistral's "
                                "cross_entropy sets modeling_mistral.CrossEntropyLoss, which MistralForCausalLM's loss "
                                "(transformers' ForCausalLMLoss) does not call: it would change nothing");
    }
    /* apply_liger_kernel_to_qwen3_moe's swiglu reads decoder_layer.mlp.experts on every layer (l.1776-1781, both
     * transformers branches): a dense layer's Qwen3MoeMLP has none, and nn.Module raises AttributeError */
    if ((m & LIGER_SWIGLU) && !strcmp(fam, "qwen3_moe") &&
        (a->sparse_step != 1 || a->E < 1 || cJSON_GetArraySize(a->mlp_only) > 0))
        return vc_set_error(err, VC_ERR_USAGE, O("liger"), "qwen3_moe: swiglu patches decoder_layer.mlp.experts on "
                            "every layer, which a dense layer (mlp_only_layers, decoder_sparse_step) lacks: "
                            "apply_liger_kernel_to_qwen3_moe raises AttributeError; " O("liger_kernels") " without "
                            "swiglu leaves it out");
    if ((m & (LIGER_ROPE | LIGER_RMS_NORM)) && !strcmp(fam, "gemma3_text"))
        return vc_set_error(err, VC_ERR_USAGE, O("liger"), "gemma3_text: rope and rms_norm (q_norm / k_norm on the "
                            "transposed heads, copied by the Functions' contiguous()) are not modelled; "
                            O("liger_kernels") " geglu,fused_linear_cross_entropy leaves them out");
    if ((m & LIGER_SWIGLU) && a->act != A_SILU) /* LigerSwiGLUMLP.__init__ raises ValueError for another hidden_act */
        return vc_set_error(err, VC_ERR_USAGE, O("liger"), "%s: LigerSwiGLUMLP takes hidden_act silu only", fam);
    if ((m & LIGER_ROPE) && a->R != a->D) /* liger_rotary_pos_emb's kernel rotates the whole head_dim */
        return vc_set_error(err, VC_ERR_USAGE, O("liger"), "%s: a partial rotary (%lld of head_dim %lld) is not "
                            "what LigerRopeFunction rotates", fam, (long long)a->R, (long long)a->D);
    a->liger = m;
    a->liger_copy = g == 2 && strcmp(fam, "gemma"); /* gemma2's and gemma3_text's partial: in_place=False */
    return 0;
}

static void defaults(vc_hf_options *o)
{
    memset(o, 0, sizeof *o);
    o->seq = 0; /* 0: VC_HF_DEFAULT_SEQ, or the learned-position limit when smaller */
    o->moe_imbalance = 1.0;
    o->checkpoint = 0;
    o->loss = VC_LOSS_IMPL_HF;
    o->experts = VC_EXPERTS_GROUPED_MM;
    o->loss_chunks = 8; /* CEWithChunkedOutputLoss(num_output_chunks=8) */
    o->ckpt_every = 1;  /* every decoder layer checkpointed */
    o->image_w = o->image_h = 0;
    o->images = 0;
    o->target_seq = 0; /* 0: the encoder's --seq */
}

void vc_hf_options_init_size(vc_hf_options *o, size_t size)
{
    vc_hf_options d;
    defaults(&d);
    d.size = size;
    memcpy(o, &d, size < sizeof d ? size : sizeof d);
}

void(vc_hf_options_init)(vc_hf_options *o) { vc_hf_options_init_size(o, sizeof *o); }

/* The first vc_hf_options with a size (release 0.1): up to images. */
#define HF_OPTIONS_SIZE_FIRST (offsetof(vc_hf_options, images) + sizeof(int64_t))

vc_status vc__hf_options_in(const vc_hf_options **o, vc_hf_options *full, vc_error *err)
{
    size_t n = (*o)->size;
    if (n == sizeof **o) return VC_OK;
    if (n < HF_OPTIONS_SIZE_FIRST || n > sizeof **o)
        return vc_set_error(err, VC_ERR_USAGE, NULL, "vc_hf_options of %zu bytes: this library takes %zu to %zu (set it up "
                            "with vc_hf_options_init before setting a field)", n, (size_t)HF_OPTIONS_SIZE_FIRST, sizeof **o);
    defaults(full);
    memcpy(full, *o, n);
    full->size = sizeof *full;
    *o = full;
    return VC_OK;
}

int vc_experts_impl_from_name(const char *s)
{
#define VC__EXPERTS_NAME(e, n) if (s && !strcmp(s, n)) return VC_EXPERTS_##e;
    VC_EXPERTS_MAP(VC__EXPERTS_NAME)
#undef VC__EXPERTS_NAME
    return -1;
}
/* The sequence's bounds that the layers enforce per sample, checked here so
 * that the error names --seq rather than a layer of the model built:
 * RotaryAttention's heads x seq x seq scores (layers/llm.c attention setup,
 * 2^56 elements) and the widest output, seq x width (setup.c: 2^56 elements
 * per sample). */
static int check_seq(const arch *a, vc_error *err)
{
    const int64_t lim = INT64_C(1) << 56;
    int64_t t;
    if (__builtin_mul_overflow(a->NH, a->seq, &t) || __builtin_mul_overflow(t, a->seq, &t) || t > lim) {
        vc_set_error(err, VC_ERR_USAGE, O("seq"), "%lld tokens: the attention scores (%lld heads x %lld x %lld) would have "
                     "more than 2^56 elements per sample", (long long)a->seq, (long long)a->NH, (long long)a->seq,
                     (long long)a->seq);
        return -1;
    }
    /* the Linear outputs: the LM head, the hidden size, the (fused) MLP up and attention projections */
    /* qwen3_next: q_proj's query and gate, in_proj_qkvz's 2 key_dim + 2 value_dim */
    const int64_t widths[] = {a->V, a->H, a->f->mlp == MLP_GATED_FUSED ? 2 * a->I : a->I,
                              a->f->attn == ATTN_FUSED ? (a->NH + 2 * a->KV) * a->D : a->NH * a->D,
                              a->f->hybrid ? 2 * a->NH * a->D : 0,
                              a->f->hybrid ? 2 * a->lin_kh * a->lin_kd + 2 * a->lin_vh * a->lin_vd : 0};
    int64_t w = 0;
    for (size_t i = 0; i < sizeof widths / sizeof *widths; i++) w = widths[i] > w ? widths[i] : w;
    if (__builtin_mul_overflow(w, a->seq, &t) || t > lim) {
        vc_set_error(err, VC_ERR_USAGE, O("seq"), "%lld tokens: a layer's output (%lld x %lld) would have more than 2^56 "
                     "elements per sample", (long long)a->seq, (long long)a->seq, (long long)w);
        return -1;
    }
    return 0;
}

/* SiglipModel's vision tower (vc_hf_build): vision_config (absent or None: SiglipVisionConfig's defaults) read with the
 * siglip_vision_model row, errors naming vision_config.KEY; the head must exist (image_embeds is its pooler_output).
 * CLIPModel's (a clip config): read with vc__hf_clip_vision (CLIPVisionConfig's defaults), its sequence the patches and
 * the class token; the projections give both towers projection_dim, so the widths may differ. */
static int siglip_tower(const cJSON *cfg, const arch *a, arch *t, const cJSON *no_keys, vc_error *err)
{
    const bool clip = a->f->block == BLK_CLIP;
    memset(t, 0, sizeof *t);
    if (clip) t->f = &vc__hf_clip_vision;
    for (int i = 0; i < vc__hf_nfamilies && !t->f; i++)
        if (vc__hf_families[i].block == BLK_SIGLIP_VISION) t->f = &vc__hf_families[i];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, "vision_config");
    if (v && !cJSON_IsNull(v) && !cJSON_IsObject(v)) /* clip: hf_clip.c refused it before */
        return vc_set_error(err, VC_ERR_MODEL, "vision_config", "expected an object: SiglipConfig builds "
                            "SiglipVisionConfig(**vision_config)");
    rd rt = {v && cJSON_IsObject(v) ? v : no_keys, err, clip ? "clip" : "siglip", false, 1, "vision_config"};
    t->ckpt = a->ckpt;
    t->ckpt_every = a->ckpt_every;
    if (vc__hf_read(&rt, t)) return -1;
    if (clip) {
        t->seq = t->vit.patches + 1;
        t->clip_proj = a->clip_proj;
        return 0;
    }
    if (!t->vit.head)
        return vc_set_error(err, VC_ERR_MODEL, "vision_config.vision_use_head", "false: SiglipModel.forward's image_embeds "
                            "is the vision tower's pooler_output, None without SiglipMultiheadAttentionPoolingHead");
    if (t->H != a->H) /* named where the config has it (the defaults agree) */
        return vc_set_error(err, VC_ERR_MODEL, cJSON_GetObjectItemCaseSensitive(rt.cfg, "hidden_size")
                                                   ? "vision_config.hidden_size" : "text_config.hidden_size",
                            "text_config's %lld and vision_config's %lld differ: SiglipModel.forward's "
                            "matmul(text_embeds, image_embeds.t()) needs one width (the text head is "
                            "nn.Linear(hidden_size, hidden_size))", (long long)a->H, (long long)t->H);
    t->seq = t->vit.patches;
    return 0;
}

/* One named input of the model file: {"shape": dims, "dtype": dt}, a float one made in float32 ("cast": false) */
static bool siglip_input(cJSON *ins, const char *name, int nd, const int64_t *dims, const char *dt)
{
    cJSON *o = cJSON_AddObjectToObject(ins, name);
    cJSON *sh = o ? cJSON_AddArrayToObject(o, "shape") : NULL;
    bool ok = sh != NULL;
    for (int d = 0; ok && d < nd; d++) {
        cJSON *x = cJSON_CreateNumber((double)dims[d]);
        ok = x && cJSON_AddItemToArray(sh, x);
        if (!ok) cJSON_Delete(x);
    }
    return ok && cJSON_AddStringToObject(o, "dtype", dt) && (strcmp(dt, "float32") || cJSON_AddFalseToObject(o, "cast"));
}

vc_status vc_hf_build(const cJSON *cfg, const vc_hf_options *o, vc_hf_split split, const vc_hf_release *rel, cJSON **model,
                      vc_error *err)
{
    *model = NULL;
    rd r = {cfg, err, "", false, 1};
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    if (!cJSON_IsString(mt))
        return vc_set_error(err, VC_ERR_MODEL, "model_type", "expected a string naming the architecture (supported: " FAMILIES ")");
    arch a;
    memset(&a, 0, sizeof a);
    a.f = family_of(cfg);
    if (!a.f) {
        char e[80];
        vc_escape(e, sizeof e, mt->valuestring);
        return vc_set_error(err, VC_ERR_MODEL, "model_type", "unsupported model_type \"%s\" (supported: " FAMILIES ")", e);
    }
    r.fam = a.f->model_type;
    if (!strcmp(r.fam, "deepseek_v4")) { /* count-only (hf_deepseek_v4.c): the exact count, then the refusal */
        int64_t n;
        if (vc__hf_deepseek_v4_count(&r, &n)) return err->code;
        return vc_set_error(err, VC_ERR_MODEL, "model_type", "deepseek_v4: the compressed attention (CSA/HCA), "
                            "hyper-connections and hash-MoE are not modelled for training or transformers' inference; "
                            "the parameter count is exact: %lld parameters (DeepseekV4ForCausalLM's named_parameters(), "
                            "buffers excluded); " O("serve") " estimates vLLM's engine for it (src/engine/serve_dsv4.c)",
                            (long long)n);
    }
    /* clip (hf_clip.c): CLIPConfig checked (the legacy *_config_dict keys, projection_dim, both sub-configs) and
     * counted before the towers are read */
    int64_t clip_params = 0;
    if (!strcmp(r.fam, "clip") && vc__hf_clip_count(&r, &clip_params, &a.clip_proj)) return err->code;
    const cJSON *nest = a.f->nested ? cJSON_GetObjectItemCaseSensitive(cfg, a.f->nested) : NULL;
    /* SiglipConfig.__init__ / CLIPConfig.__init__: text_config / vision_config None (absent) -> {}, the class's
     * defaults; clip: CLIPModel on SigLIP's two-tower path */
    static const cJSON no_keys = {.type = cJSON_Object};
    const bool clip = a.f->block == BLK_CLIP, siglip = a.f->block == BLK_SIGLIP || clip;
    /* SmolVLMConfig.__init__ (configuration_smolvlm.py @ 9a3f7081): text_config None -> LlamaConfig's defaults */
    if ((siglip || !strcmp(a.f->model_type, "smolvlm")) && (!nest || cJSON_IsNull(nest))) {
        r.cfg = &no_keys;
        r.nested = a.f->nested;
    } else if (a.f->nested && !(a.f->nested_opt && (!nest || cJSON_IsNull(nest)))) {
        /* Gemma3Config: the language model's keys are text_config's (Qwen2_5_VLConfig: when it has one) */
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(cfg, a.f->nested);
        if (!cJSON_IsObject(t))
            return vc_set_error(err, VC_ERR_MODEL, a.f->nested, "expected an object: %s reads the language model's keys "
                                "from it (%s)", r.fam, a.f->config_class);
        r.cfg = t;
        r.nested = a.f->nested;
    }
    a.imbalance = o ? o->moe_imbalance : 1.0;
    a.vllm = split.vllm != 0;
    /* the experts: as the options set them, or the release's default for the family (a family whose
     * experts run one way in every release keeps the library's, grouped_mm) */
    vc_experts_impl ex = o ? o->experts : VC_EXPERTS_GROUPED_MM;
    if (rel && rel->experts_default)
        ex = a.f->experts_fixed ? VC_EXPERTS_GROUPED_MM : (vc_experts_impl)vc_transformers_value(rel->release, VC_TF_EXPERTS);
    a.experts_impl = ex == VC_EXPERTS_PER_EXPERT ? EXPERTS_PER_EXPERT : EXPERTS_GROUPED_MM;
    /* eager attention: the family's in every release, or its release's default (gemma2) */
    a.eager = a.f->eager || (a.f->eager_release && vc_transformers_value(rel ? rel->release : 0, VC_TF_GEMMA2_EAGER));
    /* Mistral's 4.x float sliding mask (release.c VC_TF_SLIDING_FLOAT_MASK; the other sliding families' 4.x
     * masks were not read: they run masking_utils' at every release, docs/llm.md) */
    /* MistralModel; a ministral3 language model exists only in releases with masking_utils (transformers 5) */
    a.mask_4x = (!strcmp(a.f->model_type, "mistral") || (!strcmp(a.f->model_type, "mistral3") && !a.f->text_type)) &&
                vc_transformers_value(rel ? rel->release : 0, VC_TF_SLIDING_FLOAT_MASK);
    a.ckpt = o && o->checkpoint;
    a.ckpt_every = o && o->ckpt_every > 1 ? o->ckpt_every : 1;
    const bool q3vm = !strcmp(a.f->model_type, "qwen3_vl_moe"); /* hf_qwen3_vl_moe.c */
    if (q3vm && vc__hf_qwen3_vl_moe_experts(&a, rel ? rel->release : 0, rel && rel->experts_default, err)) return err->code;
    if (vc__hf_read(&r, &a)) return err->code; /* the keys, checked (hf_read.c) */
    arch tower; /* siglip: SiglipModel's vision tower, vision_config read with the siglip_vision_model row */
    if (siglip && siglip_tower(cfg, &a, &tower, &no_keys, err)) return err->code;
    if (q3vm && vc__hf_qwen3_vl_moe_read(cfg, &a, err)) return err->code;
    const bool vllm = a.vllm || (rel && rel->serve);
    /* cohere2 under vLLM: Cohere2ForCausalLM is served by the same CohereForCausalLM (vllm-project/vllm#11203, merged
     * 2024-12: "Sliding window support as done in HuggingFace Transformers", its commandr.py diff applying the rotary
     * only where the layer has a sliding window: the full layers NoPE, as Cohere2Attention; #11583, merged: each
     * layer's Attention(per_layer_sliding_window=sliding_window) on the sliding layers, None on every
     * sliding_window_pattern-th, the log's layers 3 and 7 of R7B). So its sliding layers are SlidingWindowSpec and the
     * full ones FullAttentionSpec, paged as gemma2's and gpt_oss's (src/engine/serve.c, the hybrid KV cache
     * manager). The commandr.py of those PRs could not be read at a commit: the stored copies (@ 1f7c5555, 00db0119)
     * predate them; what follows holds for both families. */
    /* vLLM's ApertusMLP (vllm/model_executor/models/apertus.py @ 055e47c2): ValueError "Unsupported activation"
     * for any hidden_act but xielu */
    if (vllm && !strcmp(a.f->model_type, "apertus") && a.act != A_XIELU)
        return vc_set_error(err, VC_ERR_MODEL, "hidden_act", "other than xielu under %s: vLLM's ApertusMLP "
                            "(apertus.py @ 055e47c2) raises ValueError (only xIELU is supported)", O("serve"));
    if (vllm && a.f->logit_mul) { /* vLLM's CohereForCausalLM (commandr.py @ 1f7c5555): what it does not load */
        const char *k = a.qkv_bias ? "attention_bias" : !a.tie ? "tie_word_embeddings" : a.D * a.NH != a.H ? "head_dim" : NULL;
        if (k)
            return vc_set_error(err, VC_ERR_MODEL, k, "%s under %s: vLLM's CohereForCausalLM (commandr.py @ 1f7c5555) "
                                "builds qkv_proj and o_proj without bias, head_dim = hidden_size // num_attention_heads "
                                "and the logits from embed_tokens (lm_head.weight skipped)",
                                a.qkv_bias ? "true" : !a.tie ? "false" : "not hidden_size / num_attention_heads", O("serve"));
    }
    if (rel && rel->generate && a.f->head != HEAD_LM) /* a sequence classifier (request.c: --mode generate) */
        return vc_set_error(err, VC_ERR_USAGE, O("mode"), "generate: %s is an encoder (%s), not a causal language model or "
                            "an encoder-decoder; it has no tokens to generate", r.fam, a.f->head_class);
    if (a.f->block == BLK_T5) { /* T5ForConditionalGeneration (hf_t5.c): what is not modelled is refused */
        if (a.ckpt && a.ckpt_every > 1) /* T5Stack checkpoints every T5Block (hf_t5.c) */
            return vc_set_error(err, VC_ERR_USAGE, O("grad_ckpt_every"), "t5: T5Stack checkpoints every T5Block of both "
                                "stacks; every N-th layer (torchtune's selective AC) is not modelled for it");
        if (o && o->loss != VC_LOSS_IMPL_HF)
            return vc_set_error(err, VC_ERR_USAGE, O("loss"), "t5: T5ForConditionalGeneration computes its own "
                                "CrossEntropyLoss on the decoder's logits; only " OV("loss", "hf") " is modelled");
        if (split.tp > 1)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "t5: tensor parallelism of an encoder-decoder is not modelled");
    } else if (a.f->block == BLK_WHISPER) { /* WhisperForConditionalGeneration (hf_whisper.c): what is not modelled */
        if (a.ckpt && a.ckpt_every > 1) /* WhisperEncoder / WhisperDecoder checkpoint every layer (hf_whisper.c) */
            return vc_set_error(err, VC_ERR_USAGE, O("grad_ckpt_every"), "whisper: WhisperEncoder and WhisperDecoder "
                                "checkpoint every layer; every N-th layer (torchtune's selective AC) is not modelled for it");
        if (o && o->loss != VC_LOSS_IMPL_HF)
            return vc_set_error(err, VC_ERR_USAGE, O("loss"), "whisper: WhisperForConditionalGeneration computes its own "
                                "CrossEntropyLoss on proj_out's logits; only " OV("loss", "hf") " is modelled");
        if (split.tp > 1 && !split.vllm) /* vLLM's split under --serve: hf_tp.c */
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "whisper: tensor parallelism of an encoder-decoder is modelled "
                                "only as vLLM splits it, under " O("serve"));
        if (o && o->target_seq > 0 && o->seq > 0 && o->seq != o->target_seq)
            return vc_set_error(err, VC_ERR_USAGE, O("seq"), "%lld and " O("target_seq") " %lld: whisper's encoder always "
                                "reads the feature extractor's 30 s of mel frames; both options give the decoder's tokens "
                                "(the labels)", (long long)o->seq, (long long)o->target_seq);
    } else if (a.f->block == BLK_BART) { /* BartForConditionalGeneration (hf_bart.c): what is not modelled */
        if (a.ckpt && a.ckpt_every > 1) /* BartEncoder / BartDecoder checkpoint every layer (hf_bart.c) */
            return vc_set_error(err, VC_ERR_USAGE, O("grad_ckpt_every"), "%s: BartEncoder and BartDecoder checkpoint "
                                "every layer; every N-th layer (torchtune's selective AC) is not modelled for it", r.fam);
        if (o && o->loss != VC_LOSS_IMPL_HF)
            return vc_set_error(err, VC_ERR_USAGE, O("loss"), "%s: %s computes its own CrossEntropyLoss on the biased "
                                "logits; only " OV("loss", "hf") " is modelled", r.fam, a.f->head_class);
        if (split.tp > 1)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%s: tensor parallelism of an encoder-decoder is not modelled",
                                r.fam);
    } else if (o && o->target_seq > 0) {
        return vc_set_error(err, VC_ERR_USAGE, O("target_seq"), "is the decoder's length of an encoder-decoder (t5, whisper, bart); "
                            "%s has one sequence: " O("seq"), r.fam);
    }
    rd rv = {cfg, err, r.fam, false, 1};
    if (a.f->block == BLK_GEMMA4) { /* hf_gemma4.c: the parameters exact, the memory of the dense models written */
        if (a.f->nested && vc__hf_gemma4_towers_read(&rv, &a, o)) return err->code;
        if (!a.f->nested && o && (o->image_w > 0 || o->images > 0))
            return vc_set_error(err, VC_ERR_USAGE, O("image"), "gemma4_text has no vision tower (Gemma4ForCausalLM)");
        if (vc__hf_gemma4_unmodelled(&a, r.fam, split, err)) return err->code;
    }
    if (a.f->vision == VIS_PALIGEMMA) { /* PaliGemmaForConditionalGeneration (modeling_paligemma.py @ efa7189c) */
        if (rel && rel->generate && a.f->text_type) /* Gemma2ForCausalLM's generate(): a HybridCache @ efa7189c */
            return vc_set_error(err, VC_ERR_USAGE, O("mode"), "generate: PaliGemma 2's generate() (Gemma2's HybridCache "
                                "under PaliGemma's _update_causal_mask, modeling_paligemma.py @ efa7189c) is not "
                                "modelled; PaliGemma 2's training is");
        /* PaliGemma's generate(): greedy with a DynamicCache (layers/llm.c rope_emit refuses the other caches and
         * beams; prefix_mask_4x: the mask from generate()'s 2-D attention_mask in every pass) */
        /* --serve: vLLM's PaliGemmaForConditionalGeneration (src/engine/serve_mm.c); under --tp vLLM splits its
         * SiglipVisionModel as Gemma 3's (hf_vision.c vision_tp; siglip.py @ 0c028ba4) and Gemma's layers, the
         * projector (nn.Linear) whole on every rank */
        if (split.tp > 1 && !vllm)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "paligemma on tensor-parallel ranks is not modelled");
        if (a.f->text_type && a.eager) /* release.c VC_TF_GEMMA2_EAGER: Gemma 2's eager default up to 4.46 */
            return vc_set_error(err, VC_ERR_USAGE, O("transformers"), "PaliGemma 2 under eager attention (Gemma 2's "
                                "default up to 4.46) is not modelled: PaliGemma's float mask is modelled with sdpa "
                                "(4.47 on)");
        if (o && o->loss != VC_LOSS_IMPL_HF)
            return vc_set_error(err, VC_ERR_USAGE, O("loss"), "paligemma: PaliGemmaForConditionalGeneration computes its "
                                "own CrossEntropyLoss (the language model gets no labels); only " OV("loss", "hf")
                                " is modelled");
    }
    if (a.f->vision == VIS_IDEFICS3 && vc__hf_idefics3_unmodelled(r.fam, split, vllm, err)) return err->code;
    if (a.f->vision == VIS_GLM4V && vc__hf_glm4v_unmodelled(r.fam, o, split, vllm, rel && rel->generate, err)) return err->code; /* hf_glm4v.c */
    if (a.f->vision == VIS_INTERNVL && vc__hf_internvl_unmodelled(split, vllm, err)) return err->code;
    if (a.f->block == BLK_GRANITE4 && vc__hf_granite4_unmodelled(&a, split, err)) return err->code; /* hf_granite4.c */
    if (a.f->block == BLK_MAMBA2 && vc__hf_mamba2_unmodelled(&a, split, err)) return err->code; /* hf_granite4.c */
    if (a.f->block == BLK_FALCON_H1 && vc__hf_falcon_h1_unmodelled(&a, split, err)) return err->code; /* hf_granite4.c */
    if (a.f->block == BLK_LFM2 && vc__hf_lfm2_unmodelled(&a, r.cfg, split, vllm, err)) return err->code; /* hf_lfm2.c */
    if ((a.f->block == BLK_GRANITE4 || a.f->block == BLK_NEMOTRON_H) && vc__hf_granite4_unmodelled(&a, split, err))
        return err->code; /* hf_granite4.c */
    if (a.f->moe == MOE_LLAMA4 && a.f->nested && vc__hf_llama4_vision_read(&rv, &a, o, split)) return err->code; /* hf_llama4.c */
    if (siglip) { /* SiglipModel / CLIPModel: one image of the vision tower's image_size per sample */
        const char *cls = clip ? "CLIPModel" : "SiglipModel";
        if (o && o->image_w > 0 && (o->image_w != tower.vit.img || o->image_h != tower.vit.img))
            return vc_set_error(err, VC_ERR_USAGE, O("image"), "%lldx%lld: %s runs vision_config's image_size (%lld x "
                                "%lld; %sVisionEmbeddings' position ids do not fit another size unless "
                                "interpolate_pos_encoding, which is not modelled)", (long long)o->image_w,
                                (long long)o->image_h, r.fam, (long long)tower.vit.img, (long long)tower.vit.img,
                                clip ? "CLIP" : "Siglip");
        if (o && o->images > 1)
            return vc_set_error(err, VC_ERR_USAGE, O("images"), "%lld: %s pairs one image with each text (" O("batch")
                                " is the pairs)", (long long)o->images, cls);
        if (split.tp > 1) return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%s: tensor parallelism is not modelled", r.fam);
        if (a.ckpt && a.ckpt_every > 1) /* SiglipEncoder / CLIPEncoder checkpoints every layer of both towers */
            return vc_set_error(err, VC_ERR_USAGE, O("grad_ckpt_every"), "%s: %sEncoder checkpoints every "
                                "%sEncoderLayer of both towers; every N-th layer is not modelled for it", r.fam,
                                clip ? "CLIP" : "Siglip", clip ? "CLIP" : "Siglip");
        if (o && o->loss != VC_LOSS_IMPL_HF)
            return vc_set_error(err, VC_ERR_USAGE, O("loss"), "%s: %s computes its own %s loss "
                                "(return_loss=True); only " OV("loss", "hf") " is modelled", r.fam, cls,
                                clip ? "contrastive (clip_loss)" : "sigmoid");
    }
    const bool siglip_v = a.f->block == BLK_SIGLIP_VISION; /* SiglipVisionModel: no CLS token */
    const bool vit = a.f->block == BLK_VIT || a.f->block == BLK_DINOV2 || siglip_v; /* pixel_values in (hf_read.c read_vit) */
    if (vit) { /* ViTForImageClassification / Dinov2ForImageClassification: the image is the input */
        if (o && o->image_w > 0 && a.f->block != BLK_DINOV2 && (o->image_w != a.vit.img || o->image_h != a.vit.img))
            return vc_set_error(err, VC_ERR_USAGE, O("image"), "%lldx%lld: %s runs the config's image_size (%lld x %lld; "
                                "%s another size unless interpolate_pos_encoding, which is not modelled)",
                                (long long)o->image_w, (long long)o->image_h, r.fam, (long long)a.vit.img,
                                (long long)a.vit.img, siglip_v ? "SiglipVisionEmbeddings' position ids do not fit"
                                                               : "ViTPatchEmbeddings raises ValueError on");
        if (o && o->image_w > 0 && a.f->block == BLK_DINOV2) { /* Dinov2Embeddings.forward at any height x width: the
                                                                 * patch grid (height // patch_size) x (width // patch_size),
                                                                 * the position embeddings interpolated (hf_layers.c) */
            int64_t t;
            if (o->image_w < a.vit.P || o->image_h < a.vit.P)
                return vc_set_error(err, VC_ERR_USAGE, O("image"), "%lldx%lld: smaller than dinov2's patch_size (%lld), "
                                    "no patch", (long long)o->image_w, (long long)o->image_h, (long long)a.vit.P);
            if (__builtin_mul_overflow(o->image_w, o->image_h, &t) || __builtin_mul_overflow(t, a.vit.cin, &t) ||
                t > (INT64_C(1) << 48) || __builtin_mul_overflow((o->image_w / a.vit.P) * (o->image_h / a.vit.P) + 1, a.H, &t) ||
                t > (INT64_C(1) << 48))
                return vc_set_error(err, VC_ERR_USAGE, O("image"), "%lldx%lld: the image or its embeddings are more than "
                                    "2^48 elements", (long long)o->image_w, (long long)o->image_h);
            a.vit.w = o->image_w;
            a.vit.h = o->image_h;
            a.vit.patches = (a.vit.w / a.vit.P) * (a.vit.h / a.vit.P);
        }
        if (o && o->images > 1)
            return vc_set_error(err, VC_ERR_USAGE, O("images"), "%lld: %s takes one image per sample (" O("batch") " "
                                "is the images)", (long long)o->images, r.fam);
        if (siglip_v && o && o->seq > 0 && o->seq != a.vit.patches)
            return vc_set_error(err, VC_ERR_USAGE, O("seq"), "%lld: %s's sequence is the image's patches ((image_size / "
                                "patch_size)^2 = %lld, no CLS token)", (long long)o->seq, r.fam, (long long)a.vit.patches);
        if (o && o->seq > 0 && o->seq != a.vit.patches + 1 && !siglip_v)
            return vc_set_error(err, VC_ERR_USAGE, O("seq"), "%lld: %s's sequence is the image's %lld patches and the "
                                "CLS token ((image_size / patch_size)^2 + 1 = %lld)", (long long)o->seq, r.fam,
                                (long long)a.vit.patches, (long long)(a.vit.patches + 1));
    } else if (!strcmp(a.f->model_type, "mllama")) { /* MllamaConfig's tower and cross-attention layers (hf_mllama.c) */
        if (vc__hf_mllama_read(&rv, &a, o, split, vllm, rel && rel->generate)) return err->code;
    } else if (!siglip && !a.l4v.on && vc__hf_vision_read(&rv, &a, o, split)) { /* vision_config, --image (hf_vision.c) */
        return err->code;
    }
    /* the sequence: --seq, else 2048, or the learned positions when fewer */
    int64_t npos = a.f->pos == POS_LEARNED || a.f->pos == POS_LEARNED_OPT ? a.maxpos
                   : a.f->pos == POS_LEARNED_PAD                      ? a.maxpos - a.pos_off
                                                                      : 0;
    a.seq = o && o->seq > 0 ? o->seq : vit ? a.vit.patches + !siglip_v : VC_HF_DEFAULT_SEQ;
    if (a.f->block == BLK_WHISPER && o && o->target_seq > 0) /* the labels' tokens: --target-seq or --seq (hf_whisper.c) */
        a.seq = o->target_seq;
    if (!(o && (o->seq > 0 || (a.f->block == BLK_WHISPER && o->target_seq > 0))) && npos > 0 && npos < a.seq) a.seq = npos;
    if (a.f->block == BLK_WHISPER && a.seq > npos) /* WhisperForConditionalGeneration.forward's ValueError */
        return vc_set_error(err, VC_ERR_USAGE, o && o->target_seq > 0 ? O("target_seq") : O("seq"), "%lld decoder tokens: "
                            "whisper's decoder has %lld learned positions (max_target_positions; "
                            "WhisperForConditionalGeneration.forward raises ValueError past them)", (long long)a.seq,
                            (long long)npos);
    if (npos > 0 && a.seq > npos)
        return vc_set_error(err, VC_ERR_USAGE, O("seq"), "%lld tokens: %s has %lld %s positions (%s)", (long long)a.seq,
                            r.fam, (long long)npos, a.bt.sinus || a.bt.m2m ? "sinusoidal" : "learned", a.f->keys[K_MAXPOS].key);
    if (a.seq > MAX_SIZE) return vc_set_error(err, VC_ERR_USAGE, O("seq"), "%lld tokens: more than 2^40", (long long)a.seq);
    /* the image tokens join the text: the language model's sequence is --seq + the images' tokens (hf_vision.c) */
    if (a.vis.tokens > MAX_SIZE - a.seq)
        return vc_set_error(err, VC_ERR_USAGE, O("image"), "%lld text + %lld image tokens: more than 2^40",
                            (long long)a.seq, (long long)a.vis.tokens);
    if (!a.vis.decode) a.seq += a.vis.tokens; /* a decoding step: the images ran in the prefill (hf_vision.c) */
    if (a.f->block == BLK_T5 || a.f->block == BLK_BART) { /* the decoder's length: --target-seq, else the encoder's */
        a.tgt = o && o->target_seq > 0 ? o->target_seq : a.seq;
        if (a.tgt > MAX_SIZE)
            return vc_set_error(err, VC_ERR_USAGE, O("target_seq"), "%lld tokens: more than 2^40", (long long)a.tgt);
        /* m2m_100: M2M100SinusoidalPositionalEmbedding.forward rebuilds its buffer (make_weights(max_pos + 2), a new
         * table in float32 cast to the old one's dtype) once padding_idx + 1 + seq_len + past passes its
         * max_position_embeddings + 2 rows: not modelled, refused (src/hf/hf_bart.c) */
        const int64_t m2m_lim = a.maxpos + 1 - a.bt.pad; /* generate's --new-tokens: bart_check (hf_whisper.c) */
        if (a.bt.m2m && (a.seq > m2m_lim || a.tgt > m2m_lim))
            return vc_set_error(err, VC_ERR_USAGE, a.seq > m2m_lim ? O("seq") : O("target_seq"), "%lld tokens: past "
                                "max_position_embeddings + 1 - pad_token_id (%lld) M2M100SinusoidalPositionalEmbedding "
                                "rebuilds its position buffer (make_weights), which is not modelled",
                                (long long)(a.seq > m2m_lim ? a.seq : a.tgt), (long long)m2m_lim);
        if (a.f->block == BLK_BART && a.tgt > a.maxpos) /* the decoder's embed_positions: IndexError past them */
            return vc_set_error(err, VC_ERR_USAGE, O("target_seq"), "%lld decoder tokens: %s's decoder has %lld %s "
                                "positions (max_position_embeddings)", (long long)a.tgt, r.fam, (long long)a.maxpos,
                                a.bt.sinus || a.bt.m2m ? "sinusoidal" : "learned");
        /* the decoder's self- and cross-attention biases and scores (heads x target x target, heads x target x
         * seq) and its widest output (target x the vocabulary or d_ff) within 2^56 elements per sample, as
         * check_seq bounds the encoder's */
        const int64_t lim = INT64_C(1) << 56, wide = a.V > a.I ? a.V : a.I, kmax = a.tgt > a.seq ? a.tgt : a.seq;
        int64_t t;
        if (__builtin_mul_overflow(a.NH, a.tgt, &t) || __builtin_mul_overflow(t, kmax, &t) || t > lim ||
            __builtin_mul_overflow(wide, a.tgt, &t) || t > lim)
            return vc_set_error(err, VC_ERR_USAGE, O("target_seq"), "%lld tokens: the decoder's attention scores (%lld "
                                "heads x %lld x %lld) or its widest output (%lld x %lld) would have more than 2^56 "
                                "elements per sample", (long long)a.tgt, (long long)a.NH, (long long)a.tgt,
                                (long long)kmax, (long long)a.tgt, (long long)wide);
    }
    if (a.f->pos == POS_LEARNED_PAD && npos <= 0 && a.f->keys[K_PAD].key) /* RoBERTa: position ids from padding_idx + 1 up */
        return vc_set_error(err, VC_ERR_MODEL, "pad_token_id", "%lld: the positions start after it, at %lld, past "
                            "max_position_embeddings (%lld): no position is left for a token",
                            (long long)(a.pos_off - 1), (long long)a.pos_off, (long long)a.maxpos);
    if (a.f->pos == POS_LEARNED_PAD && npos <= 0) /* mpnet: padding_idx fixed at 1 (MPNetEmbeddings) */
        return vc_set_error(err, VC_ERR_MODEL, a.f->keys[K_MAXPOS].key, "%lld: the positions start after padding_idx "
                            "%lld (fixed), at %lld: no position is left for a token", (long long)a.maxpos,
                            (long long)(a.pos_off - 1), (long long)a.pos_off);
    /* OPTLearnedPositionalEmbedding holds max_position_embeddings + 2 rows (its offset, modeling_opt.py):
     * bounded here so that the error names the key, not the emitted model's layer */
    if (a.f->pos == POS_LEARNED_OPT && a.maxpos > MAX_SIZE - 2)
        return vc_set_error(err, VC_ERR_MODEL, a.f->keys[K_MAXPOS].key, "%lld: the position table holds it + 2 rows "
                            "(OPT's offset), more than the limit of 2^40", (long long)a.maxpos);
    /* --loss: the causal LM's loss, a row of src/engine/loss.c's table by its option name */
    bool encoder = a.f->head != HEAD_LM; /* the encoders' sequence-classification heads */
    unsigned li = o ? (unsigned)o->loss : VC_LOSS_IMPL_HF;
#define VC__LNAME(e, n) n,
    static const char *const loss_opts[] = {VC_LOSS_MAP(VC__LNAME) NULL};
#undef VC__LNAME
    if (li >= VC_LOSS_IMPL__N) return vc_set_error(err, VC_ERR_USAGE, O("loss"), "unknown loss");
    if (o && o->liger) { /* --liger: apply_liger_kernel_to_<model_type>'s defaults or --liger-kernels (liger_family) */
        char lk[sizeof o->liger_kernels];
        snprintf(lk, sizeof lk, "%.*s", (int)(sizeof lk - 1), o->liger_kernels);
        if (liger_family(&a, r.fam, lk, err)) return err->code;
        if (a.liger & LIGER_FLCE) {
            if (li != VC_LOSS_IMPL_HF && li != VC_LOSS_IMPL_LIGER)
                return vc_set_error(err, VC_ERR_USAGE, O("liger"), "applies the fused linear cross-entropy "
                                    "(fused_linear_cross_entropy=True, its default); " O("loss") " %s is another loss",
                                    loss_opts[li]);
            li = VC_LOSS_IMPL_LIGER;
        } else if (li == VC_LOSS_IMPL_LIGER) {
            return vc_set_error(err, VC_ERR_USAGE, O("liger_kernels"), "leaves fused_linear_cross_entropy out; "
                                OV("loss", "liger") " is that loss");
        } else if ((a.liger & LIGER_CE) && li != VC_LOSS_IMPL_HF) { /* it patches ForCausalLMLoss's cross_entropy */
            return vc_set_error(err, VC_ERR_USAGE, O("liger_kernels"), "cross_entropy patches transformers' "
                                "ForCausalLMLoss (" OV("loss", "hf") "); " O("loss") " %s is another loss", loss_opts[li]);
        }
    }
    /* --liger-kernels cross_entropy: ForCausalLMLoss with LigerCrossEntropyFunction (src/engine/loss.c) */
    int lrow = o && o->liger && (a.liger & LIGER_CE) ? VC_LOSS_LIGER_CE : vc__loss_from_option(loss_opts[li]);
    if (siglip_v && li != VC_LOSS_IMPL_HF) /* SiglipVisionModel returns no loss: pooler_output.mean() (below) */
        return vc_set_error(err, VC_ERR_USAGE, O("loss"), "%s: SiglipVisionModel returns no loss; training is modelled "
                            "as its pooled output's mean, " OV("loss", "hf") " only", loss_opts[li]);
    if (encoder && li != VC_LOSS_IMPL_HF)
        return vc_set_error(err, VC_ERR_USAGE, O("loss"), "%s is a causal-LM loss; %s is an encoder with a classification "
                            "head (cross_entropy)", loss_opts[li], r.fam);
    const vc_loss_row *lr = lrow >= 0 ? vc_loss_row_get((vc_loss)lrow) : NULL;
    if (o && (o->ckpt_every < 0 || o->ckpt_every > MAX_SIZE)) /* 0: all, as torchtune's `not every_x_layer` */
        return vc_set_error(err, VC_ERR_USAGE, O("grad_ckpt_every"), "expected a positive number of layers, at most 2^40");
    if (o && (o->loss_chunks < 1 || o->loss_chunks > MAX_SIZE))
        return vc_set_error(err, VC_ERR_USAGE, O("loss_chunks"), "expected a positive number of chunks, at most 2^40");
    if (lrow == VC_LOSS_LIGER_CE && split.tp > 1) /* the row's tp_why, named by the option that chose it */
        return vc_set_error(err, VC_ERR_USAGE, O("liger_kernels"), "cross_entropy with " O("tp") " is not modelled: %s",
                            lr->tp_why);
    if (lr && lr->tp_why && split.tp > 1) /* a row a tensor-parallel rank cannot run (src/engine/loss.c) */
        return vc_set_error(err, VC_ERR_USAGE, O("loss"), "%s with " O("tp") " is not modelled: %s", loss_opts[li], lr->tp_why);
    if (a.f->block == BLK_MODERNBERT && split.tp > 1) /* Megatron's split of Wqkv / Wi is not modelled */
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "modernbert: tensor parallelism is not modelled");
    if (vit && split.tp > 1) /* no tensor-parallel plan of ViT's (DINOv2's) modules is read */
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%s: tensor parallelism is not modelled", r.fam);
    if (a.f->block == BLK_MPNET && split.tp > 1) /* hf_mpnet.c writes the whole model */
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "mpnet: tensor parallelism is not modelled");
    if (vc__hf_tp_split(&a, split, err)) return err->code; /* one tensor-parallel rank's share (hf_tp.c) */
    if (check_seq(&a, err)) return err->code;
    r.sp = a.sp;
    /* a decoder on a tensor-parallel rank: Megatron's vocab-parallel cross-entropy (hf_tp.c) */
    a.wh.part = a.f->block == BLK_WHISPER ? split.whisper_part : 0; /* --serve's profiling parts (hf_whisper.c) */
    const bool wh_dec = a.wh.part == 2; /* vLLM's decoder alone: token ids in, logits out (src/engine/serve_encdec.c) */
    const char *loss_name = wh_dec ? "causal_lm"
                            : a.f->block == BLK_T5 || a.f->block == BLK_WHISPER || a.f->block == BLK_BART
                                ? "seq2seq_lm" /* T5ForConditionalGeneration's / WhisperForConditionalGeneration's CrossEntropyLoss */
                            : siglip_v ? "logits_mean" /* loss = outputs.pooler_output.mean() (no .float()) */
                            : a.f->vision == VIS_PALIGEMMA ? "paligemma_lm" /* PaliGemmaForConditionalGeneration's own */
                            : clip     ? "clip" /* CLIPModel.forward(..., return_loss=True).loss: clip_loss */
                            : siglip   ? "siglip" /* SiglipModel.forward(..., return_loss=True).loss */
                            : encoder ? "cross_entropy" : split.tp > 1 ? "vocab_parallel" : lr ? lr->name : "causal_lm";

    cJSON *m = cJSON_CreateObject();
    cJSON *layers = m ? cJSON_CreateArray() : NULL;
    if (!layers) {
        cJSON_Delete(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    char nm[160], src[120];
    const cJSON *arch_list = cJSON_GetObjectItemCaseSensitive(cfg, "architectures");
    const cJSON *a0 = cJSON_IsArray(arch_list) ? cJSON_GetArrayItem(arch_list, 0) : NULL;
    char an[80] = "";
    if (cJSON_IsString(a0)) vc_escape(an, sizeof an, a0->valuestring);
    if (a.f->head_class) /* the task head built, whatever the checkpoint's class */
        snprintf(an, sizeof an, "%s", a.f->head_class);
    snprintf(nm, sizeof nm, "%s%s%s (Hugging Face config, seq %lld)", r.fam, an[0] ? " " : "", an, (long long)a.seq);
    if (a.f->block == BLK_T5 || a.f->block == BLK_BART)
        snprintf(nm, sizeof nm, "%s%s%s (Hugging Face config, seq %lld, target %lld)", r.fam, an[0] ? " " : "", an,
                 (long long)a.seq, (long long)a.tgt);
    if (siglip)
        snprintf(nm, sizeof nm, "%s%s%s (Hugging Face config, %lld text tokens, %lld x %lld image, %lld patches)", r.fam,
                 an[0] ? " " : "", an, (long long)a.seq, (long long)tower.vit.w, (long long)tower.vit.h,
                 (long long)tower.vit.patches);
    if (vit)
        snprintf(nm, sizeof nm, "%s%s%s (Hugging Face config, %lld x %lld image, %lld patches%s)", r.fam, an[0] ? " " : "",
                 an, (long long)a.vit.w, (long long)a.vit.h, (long long)a.vit.patches, siglip_v ? "" : " + CLS");
    if (a.f->block == BLK_WHISPER) { /* a.tgt: the decoder's tokens; the encoder's input is fixed (hf_whisper.c) */
        a.tgt = a.seq;
        snprintf(nm, sizeof nm, "%s%s%s (Hugging Face config, %lld mel bins x %lld frames, target %lld)", r.fam,
                 an[0] ? " " : "", an, (long long)a.wh.mel, (long long)(2 * a.wh.src), (long long)a.tgt);
        if (a.wh.part) /* --serve's profiling parts (src/engine/serve_encdec.c) */
            snprintf(nm, sizeof nm, "%s%s%s (Hugging Face config: vLLM's %s)", r.fam, an[0] ? " " : "", an,
                     a.wh.part == 1 ? "encoder over the dummy clips" : "decoder's dummy run");
    }
    snprintf(src, sizeof src, "transformers modeling_%s.py (model_type %s%s)",
             !strcmp(r.fam, "gemma3_text") ? "gemma3" : !strcmp(r.fam, "llama4_text") ? "llama4" : r.fam,
             r.fam, a.l4v.on || a.ml.on || ((a.f->vision == VIS_IDEFICS3 || a.f->vision == VIS_PIXTRAL ||
                                             a.f->vision == VIS_GLM4V || a.f->vision == VIS_INTERNVL) && !a.vis.patches)
                        ? ": the vision tower's weights loaded, not run"
                    : a.f->vision ? ""
                                : a.f->nested && !siglip ? ": the language model; the vision tower is not modelled" : "");
    if (siglip) { /* "inputs": pixel_values [num_channels, image_size, image_size] float32 (SiglipImageProcessor's,
                   * cast by SiglipVisionEmbeddings), input_ids [seq] */
        cJSON *ins = cJSON_AddStringToObject(m, "name", nm) && cJSON_AddStringToObject(m, "source", src)
                         ? cJSON_AddObjectToObject(m, "inputs") : NULL;
        const int64_t pd[3] = {tower.vit.cin, tower.vit.h, tower.vit.w};
        bool ok = ins && siglip_input(ins, "pixel_values", 3, pd, "float32") && siglip_input(ins, "input_ids", 1, &a.seq, "int64") &&
                  cJSON_AddStringToObject(m, "loss", loss_name) && cJSON_AddItemToObject(m, "layers", layers);
        if (!ok) {
            if (!cJSON_GetObjectItemCaseSensitive(m, "layers")) cJSON_Delete(layers);
            cJSON_Delete(m);
            return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
        }
        a.tower = &tower;
        vc__hf_write(&r, layers, &a); /* the layers (hf_layers.c build_siglip) */
        if (r.oom) {
            cJSON_Delete(m);
            return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
        }
        *model = m;
        return VC_OK;
    }
    cJSON *in = cJSON_AddStringToObject(m, "name", nm) && cJSON_AddStringToObject(m, "source", src)
                    ? cJSON_AddObjectToObject(m, "input") : NULL;
    cJSON *shape = in ? cJSON_AddArrayToObject(in, "shape") : NULL;
    bool ok = shape != NULL;
    /* whisper: input_features [num_mel_bins, 2 x max_source_positions] in the model's dtype (hf_whisper.c) */
    /* vit: pixel_values [num_channels, image_size, image_size] float32 (ViTImageProcessor's); dinov2: [num_channels,
     * height, width] at --image WxH */
    const bool features = (a.f->block == BLK_WHISPER && !wh_dec) || vit;
    const int64_t dims[3] = {vit ? a.vit.cin : features ? a.wh.mel : a.seq, vit ? a.vit.h : 2 * a.wh.src, a.vit.w};
    for (int d = 0; ok && d < (vit ? 3 : features ? 2 : 1); d++) {
        cJSON *len = cJSON_CreateNumber((double)dims[d]);
        ok = len && cJSON_AddItemToArray(shape, len);
        if (!ok) cJSON_Delete(len);
    }
    ok = ok && cJSON_AddStringToObject(in, "dtype", features ? "float32" : "int64") &&
         (!vit || cJSON_AddFalseToObject(in, "cast")) && /* ViTImageProcessor's float32, cast by ViTModel.forward */
         cJSON_AddStringToObject(m, "loss", loss_name);
    if (ok && lrow == VC_LOSS_CHUNKED && !encoder && !(split.tp > 1)) /* torchtune's num_output_chunks (src/engine/loss.c emit_chunked) */
        ok = cJSON_AddNumberToObject(m, "loss_chunks", (double)(o ? o->loss_chunks : 8)) != NULL;
    /* the positions a generation may reach: max_position_embeddings (n_positions), unless a
     * sliding window bounds what attention sees (generate.c refuses longer prompts) */
    bool slides = false;
    for (int64_t i = 0; i < a.N && !slides; i++) slides = vc__hf_layer_window(&a, i) > 0;
    if (ok && a.maxpos > 0 && !slides && !encoder && a.f->block != BLK_WHISPER && a.f->block != BLK_BART &&
        a.f->block != BLK_MAMBA2 /* no positions: Mamba2ForCausalLM */)
        ok = cJSON_AddNumberToObject(m, "max_positions", (double)a.maxpos) != NULL;
    if (!ok || !cJSON_AddItemToObject(m, "layers", layers)) {
        cJSON_Delete(layers);
        cJSON_Delete(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    vc__hf_write(&r, layers, &a); /* the layers (hf_layers.c) */
    if (r.oom) {
        cJSON_Delete(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    *model = m;
    return VC_OK;
}
