/*
 * hf_arch.h — the architecture a Hugging Face config.json describes, as
 * src/hf/hf_read.c reads it, src/hf/hf_tp.c splits it over tensor-parallel ranks
 * and src/hf/hf_layers.c writes it as layers; src/hf/hf.c holds the family table
 * and runs the three. Private to those files (and tests/test_hf.c's check of
 * the table).
 */
#ifndef VC_HF_ARCH_H
#define VC_HF_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "hf.h"
#include "vramcalc/vramcalc.h"

/* ------------------------------------------------------------ the family table
 *
 * A family is one row of vc__hf_families (src/hf/hf.c): the config keys it reads
 * with their defaults, and the block template its layers are written from.
 * hf_read.c reads every row the same way, hf_layers.c writes every row the
 * same way: a new family is a new row (docs/contributing.md).
 */

/* What a key of the config gives; each is read into one field of arch
 * (hf_read.c's key_roles: the field, its type and range). */
enum {
    K_VOCAB, K_HIDDEN, K_LAYERS, K_HEADS, K_KV_HEADS, K_EPS, K_MAXPOS, K_INTER, K_HEAD_DIM, K_ACT, K_TIE,
    K_QKV_BIAS, K_O_BIAS, K_MLP_BIAS, K_P_ATTN, K_P_RESID, K_P_EMBD, K_ROTARY, K_PARALLEL, K_USE_WINDOW, K_WINDOW,
    K_FINAL_CAP, K_ATTN_CAP, K_EXPERTS, K_TOPK, K_MOE_INTER, K_SHARED_INTER, K_SPARSE_STEP, K_NORM_TOPK,
    K_MLP_ONLY, K_TYPES, K_LABELS, K_P_CLS, K_PAD, K_WINDOW_LAYERS, K_LAYER_TYPES,
    K_NOPE_LAYERS, K_NOPE_INTERVAL, K_EMB_MULT, K_RESID_MULT, K_LOGITS_SCALE, K_MULTI_QUERY,
    K_PROJ_DIM, K_NORM_BEFORE, K_NORM_AFFINE, K_QK_LAYERNORM,
    /* DeepSeek-V3 (MLA, its MoE): q_lora_rank, kv_lora_rank, qk_nope_head_dim, v_head_dim (qk_rope_head_dim is
     * K_HEAD_DIM, as DeepseekV3Config's head_dim), n_shared_experts, n_group, topk_group, first_k_dense_replace,
     * num_nextn_predict_layers, rope_interleave, routed_scaling_factor */
    K_Q_LORA, K_KV_LORA, K_QK_NOPE, K_V_HEAD, K_N_SHARED, K_N_GROUP, K_TOPK_GROUP, K_FIRST_DENSE, K_NEXTN,
    K_ROPE_INTERLEAVE, K_ROUTED_SCALE,
    K_USE_QK_NORM, /* glm4_moe: use_qk_norm turns the row's q_norm / k_norm on */
    K_WINDOW_PATTERN, K_QUERY_SCALAR, K_ROPE_LOCAL, K_SWIGLU_ALPHA, K_SWIGLU_LIMIT,
    K_SINUSOIDAL, /* distilbert: sinusoidal_pos_embds */
    K_LIN_KH, K_LIN_VH, K_LIN_KD, K_LIN_VD, K_CONV_K, K_FULL_INTERVAL, K_HYBRID_TYPES,
    /* t5: num_decoder_layers (absent or null: num_layers), relative_attention_num_buckets,
     * relative_attention_max_distance (feed_forward_proj, is_gated_act, dense_act_fn: hf_t5.c) */
    K_DEC_LAYERS, K_REL_BUCKETS, K_REL_MAXDIST,
    K_NEW_ARCH, K_ALIBI, K_NUM_LN, /* falcon: new_decoder_architecture, alibi, num_ln_in_parallel_attn */
    /* whisper (hf_whisper.c): decoder_attention_heads, decoder_ffn_dim, num_mel_bins, max_source_positions,
     * activation_dropout (decoder_layers: K_DEC_LAYERS; max_target_positions: K_MAXPOS) */
    K_DEC_HEADS, K_DEC_INTER, K_MEL, K_SRC_POS, K_P_ACT,
    K_COUNT
};

/* Where a key's value comes from when the config lacks it (or has null). */
enum {
    D_VALUE,    /* .def (a string default in .sdef) */
    D_REQUIRED, /* none: an error naming the key */
    D_HEADS,    /* the number of attention heads (num_key_value_heads) */
    D_SPLIT,    /* hidden size / heads, which must divide it (head_dim) */
    D_4H,       /* 4 x hidden size (GPT-2's n_inner) */
    D_RESID,    /* the residual dropout (classifier_dropout) */
    D_HIDDEN,   /* the hidden size (OPT's word_embed_proj_dim) */
    D_SPLIT_NULL, /* .def when absent, hidden size / heads when null (Ernie4_5Config's head_dim 128, `self.head_dim if
                   * self.head_dim is not None else self.hidden_size // self.num_attention_heads`) */
    D_KV_NULL,  /* .def when absent, the number of attention heads when null (MistralConfig's and
                 * Qwen2Config's num_key_value_heads: a default, and `if self.num_key_value_heads is None:
                 * self.num_key_value_heads = self.num_attention_heads` in __post_init__) */
};

typedef struct {
    const char *key;  /* the config key; NULL: the family has none, its value is always .def */
    double def;       /* the default (D_VALUE) */
    unsigned char how;  /* D_* */
    bool null_none;   /* null is Python's None: the feature is off (0), not the default */
    const char *alt;  /* read when .key is absent (gemma: hidden_activation, else hidden_act) */
    const char *sdef; /* K_ACT: the activation's default name */
} hf_key;

/* The block templates: the layer each family's decoder (or encoder) layer is
 * written as, with the module names of its modeling file (hf_layers.c). */
enum {
    BLK_DECODER, /* LlamaDecoderLayer and its relatives: model.layers.N.self_attn/mlp */
    BLK_GPT2,    /* GPT2Block: transformer.h.N.attn.c_attn/mlp.c_fc */
    BLK_NEOX,    /* GPTNeoXLayer: gpt_neox.layers.N.attention.query_key_value */
    BLK_BERT,    /* BertLayer: <prefix>.encoder.layer.N.attention.self.query */
    BLK_OPT,     /* OPTDecoderLayer: model.decoder.layers.N.self_attn.q_proj, fc1, fc2 */
    BLK_PHI,     /* PhiDecoderLayer: model.layers.N.self_attn.q_proj/dense, mlp.fc1/fc2, parallel */
    BLK_DISTILBERT, /* TransformerBlock: distilbert.transformer.layer.N.attention.q_lin, ffn.lin1 */
    BLK_T5,         /* T5Block: encoder.block.N.layer.0.SelfAttention.q, decoder's layer.1.EncDecAttention
                     * (hf_t5.c: the parameters counted; the memory not modelled, the build refused) */
    BLK_FALCON,     /* FalconDecoderLayer: transformer.h.N.self_attention.query_key_value, mlp.dense_h_to_4h */
    BLK_MODERNBERT, /* ModernBertEncoderLayer: model.layers.N.attn.Wqkv, mlp.Wi (hf_modernbert.c) */
    BLK_WHISPER,    /* WhisperEncoderLayer / WhisperDecoderLayer: model.encoder.layers.N.self_attn.q_proj,
                     * model.decoder.layers.N.encoder_attn (hf_whisper.c) */
    BLK_GEMMA4,     /* Gemma4TextDecoderLayer (hf_gemma4.c: the parameters counted, the layers written) */
    BLK_MPNET,      /* MPNetLayer: mpnet.encoder.layer.N.attention.attn.q, the encoder's shared
                     * relative_attention_bias (hf_mpnet.c) */
    BLK_BART,       /* BartEncoderLayer / BartDecoderLayer: model.encoder.layers.N.self_attn.q_proj, post-LN,
                     * model.decoder.layers.N.encoder_attn (hf_bart.c) */
    BLK_GRANITE4,   /* GraniteMoeHybridDecoderLayer: Mamba2 or attention, shared_mlp (hf_granite4.c) */
    BLK_MAMBA2,     /* Mamba2Block: norm, Mamba2 mixer, the residual (hf_granite4.c) */
    BLK_LFM2,       /* Lfm2DecoderLayer: short convolution or attention, feed_forward (hf_lfm2.c, hf_layers.c lfm2_layer) */
    BLK_NEMOTRON_H, /* NemotronHBlock: norm, one Mamba2, attention or MLP mixer (hf_granite4.c) */
    BLK_VIT,        /* ViTLayer: vit.encoder.layer.N.attention.attention.query, pre-LN (hf_layers.c vit_layer);
                     * the model's input is pixel_values [num_channels, image_size, image_size] */
    BLK_FALCON_H1,  /* FalconH1DecoderLayer: Mamba2 and attention side by side, the MLP (hf_granite4.c) */
    BLK_DINOV2,     /* Dinov2Layer: dinov2.encoder.layer.N.norm1, LayerScale, MLP or SwiGLU FFN (hf_layers.c dinov2_layer);
                     * the model's input is pixel_values as BLK_VIT's (hf_read.c read_vit) */
    BLK_SIGLIP_VISION, /* SiglipEncoderLayer: vision_model.encoder.layers.N.self_attn.q_proj, pre-LN (hf_layers.c
                        * siglip_layer); SiglipVisionModel on pixel_values as BLK_VIT's, no CLS token */
    BLK_SIGLIP, /* SiglipModel: text_model.encoder.layers.N (siglip_layer, no mask) beside BLK_SIGLIP_VISION's tower
                 * (arch.tower), pixel_values and input_ids in (hf_layers.c build_siglip) */
    BLK_CLIP_VISION, /* CLIPEncoderLayer (siglip_layer's modules) in CLIPModel's vision tower: class token, pre_layrnorm,
                      * post_layernorm on the pooled token (hf_layers.c build_clip_vision; hf.c's vc__hf_clip_vision row) */
    BLK_CLIP, /* CLIPModel: text_model.encoder.layers.N (siglip_layer, causal) beside BLK_CLIP_VISION's tower (arch.tower),
               * SiglipLogits' clip variant (hf_layers.c build_clip) */
};
enum {
    NORM_RMS, NORM_RMS_GEMMA /* (1 + weight) */, NORM_LAYER, NORM_RMS_F32 /* GptOssRMSNorm: a float32 weight, (w * x).to(dtype) */,
    NORM_RMS_OLMO, /* Olmo3RMSNorm: (w * x.float()).to(dtype), the weight in the model's dtype (HFRMSNorm variant olmo) */
    NORM_COHERE,   /* CohereLayerNorm: float32, mean-subtracted, a weight and no bias (HFRMSNorm variant cohere) */
    NORM_LAYER_1P  /* NemotronLayerNorm1P: nn.LayerNorm (weight and bias) computed with weight + 1 (LayerNorm one_plus) */
};
enum {
    PLACE_PRE,      /* norm before attention and MLP */
    PLACE_SANDWICH, /* gemma2: and after each, before the residual add */
    PLACE_POST,     /* BERT: after each residual add */
    PLACE_SUBLAYER, /* olmo2: after attention and MLP, before the residual add, none before */
    PLACE_SANDWICH_GLM4, /* glm4: PLACE_SANDWICH's four norms at the same places under Glm4DecoderLayer's names:
                          * input_layernorm, post_self_attn_layernorm (on the attention's output),
                          * post_attention_layernorm (before the MLP), post_mlp_layernorm (on the MLP's output) */
};
enum {
    QK_NONE, QK_PER_HEAD /* qwen3: RMSNorm(head_dim) */, QK_WHOLE /* olmo2: RMSNorm(heads x head_dim) */,
    QK_HEADS /* cohere: CohereLayerNorm((heads, head_dim)): per head, a weight of its own for each head */
};
enum {
    ATTN_SPLIT, /* q_proj, k_proj, v_proj */
    ATTN_FUSED, /* one qkv projection */
    ATTN_MLA,   /* DeepseekV3Attention: q_a_proj / q_b_proj (or q_proj), kv_a_proj_with_mqa, MLAttention (layers/mla.c) */
};
enum {
    MLP_GATED /* gate_proj, act, up_proj, mul, down_proj */, MLP_GATED_FUSED /* gate_up_proj */,
    MLP_PLAIN /* up, act, down (BLK_DECODER: Starcoder2MLP's c_fc, act, c_proj; NORM_LAYER there: nn.LayerNorm) */
};
/* How the MoE experts run: transformers 5 stacks them (gate_up_proj, down_proj)
 * and runs grouped_mm_experts_forward by default; transformers 4.x looped over
 * an nn.ModuleList of per-expert MLPs (at most 84 experts here). */
enum { EXPERTS_GROUPED_MM, EXPERTS_PER_EXPERT };
enum {
    MOE_NONE,
    MOE_MIXTRAL,  /* block_sparse_moe, every layer */
    MOE_QWEN2,    /* mlp, decoder_sparse_step and mlp_only_layers; shared expert */
    MOE_DEEPSEEK, /* DeepseekV3MoE from first_k_dense_replace on: sigmoid group-limited routing, shared experts */
    MOE_GPT_OSS,  /* mlp: GptOssTopKRouter with bias, biased stacked experts, clamped SwiGLU; every layer */
    MOE_LLAMA4,   /* feed_forward: Llama4TextMoe (router, experts, shared_expert) in moe_layers (hf_llama4.c:
                   * parameters counted, the memory refused) */
    MOE_MINIMAX,  /* mlp: MiniMaxM2SparseMoeBlock (sigmoid routing with e_score_correction_bias, stacked experts, no
                   * shared expert), every layer (hf_minimax_m2.c) */
    MOE_PHIMOE,   /* mlp: PhimoeSparseMoeBlock (sparsemixer's two experts, stacked experts), every layer (hf_phimoe.c) */
    MOE_GRANITE,  /* block_sparse_moe: GraniteMoeMoE (JetMoe's top-k gating and ParallelExperts loop), every layer */
    MOE_ERNIE,    /* mlp: Ernie4_5_MoeSparseMoeBlock (float32 softmax router, e_score_correction_bias for the choice,
                   * stacked experts, shared experts) where (i + 1) % moe_layer_interval == 0 and moe_layer_start_index
                   * <= i <= moe_layer_end_index (hf_ernie.c) */
    MOE_LFM2,     /* feed_forward: Lfm2MoeSparseMoeBlock (sigmoid routing, a float32 expert_bias for the choice, stacked
                   * experts, routed_scaling_factor) from num_dense_layers on (hf_lfm2.c) */
    MOE_HUNYUAN,  /* mlp: HunYuanMoEV1Moe (a float32 gate.wg, softmax top-k renormalised, stacked experts of
                   * intermediate_size, shared_mlp), every layer (hf_hunyuan.c) */
};
enum {
    WIN_ALL,             /* every layer slides */
    WIN_ALTERNATE,       /* layer_idx % 2 == 0 slides (gemma2) */
    WIN_FROM_LAYER,      /* layers from max_window_layers on slide (Qwen2Config / Qwen3Config layer_types) */
    WIN_ALTERNATE_BELOW, /* layer_idx % 2 == 0 below max_window_layers slides (Qwen2MoeConfig layer_types) */
    WIN_NOPE,            /* the NoPE layers slide (SmolLM3Config layer_types) */
    WIN_PATTERN,         /* (i + 1) % pattern != 0 slides (Gemma3TextConfig's sliding_window_pattern, GptOssConfig: 2) */
};
enum {
    POS_ROPE,
    POS_LEARNED,     /* absolute positions (GPT-2, BERT) */
    POS_LEARNED_PAD, /* RoBERTa: after padding_idx */
    POS_LEARNED_OPT, /* OPTLearnedPositionalEmbedding: max_position_embeddings + 2 rows, ids per sample */
};
enum {
    HEAD_LM,         /* the causal LM head (lm_head, tied as tie_word_embeddings says) */
    HEAD_POOLER_CLS, /* BertForSequenceClassification: pooler, dropout, classifier */
    HEAD_CLS,        /* RobertaForSequenceClassification: RobertaClassificationHead */
    HEAD_DISTIL,     /* DistilBertForSequenceClassification: pre_classifier, ReLU, dropout, classifier */
    HEAD_MODERNBERT, /* ModernBertForSequenceClassification: pooling, head (dense, act, norm), drop, classifier */
};

typedef struct {
    const char *model_type;
    const char *config_class;   /* its configuration_*.py, where .keys come from */
    hf_key keys[K_COUNT];       /* absent: the family has no such key, the value is 0 */
    /* the block template */
    unsigned char block, norm, place, attn, mlp, moe, window, pos, head;
    unsigned char qk_norm; /* QK_*: q_norm / k_norm */
    bool nope;         /* NoPE layers: no_rope_layers, or one every no_rope_layer_interval (smollm3) */
    bool mup;          /* embedding_multiplier, residual_multiplier, logits_scaling (granite) */
    bool embed_scale;  /* embeddings x sqrt(hidden size) (gemma) */
    bool eager;        /* eager attention in every release (gpt_oss: _supports_sdpa False) */
    bool eager_release; /* eager where the --transformers release's VC_TF_GEMMA2_EAGER row says so (gemma2:
                         * Gemma2PreTrainedModel._check_and_enable_sdpa up to 4.46), sdpa after */
    bool lm_bias;      /* the LM head has a bias (phi) */
    bool rope_scaling; /* rope_scaling is read and validated */
    bool hybrid;       /* qwen3_next: Gated DeltaNet layers (linear_attention) between gated full-attention layers */
    bool experts_fixed; /* its experts run one way in every transformers release (llama4: Llama4TextExperts'
                         * torch.bmm): the --transformers release's MoE default (VC_TF_EXPERTS) does not apply */
    const char *head_class; /* encoders: the task model built, whatever the checkpoint's class */
    const char *prefix;     /* encoders: the base model's attribute (bert, roberta) */
    const char *lora_targets; /* PEFT's default target_modules (peft/utils/constants.py) */
    /* issue 31 (gemma3, gpt_oss) */
    const char *nested;  /* the keys are read from this object of the config (gemma3's text_config) */
    bool sinks;          /* GptOssAttention.sinks: a learned logit per head (eager attention only) */
    bool local_rope;     /* sliding layers use a second rotary embedding (Gemma3's rope_local_base_freq) */
    bool half_rope;      /* GptOssRotaryEmbedding / _apply_rotary_emb: cos/sin of head_dim / 2, chunk-based rotation */
    /* issue 31 item 4 (vision towers): the tower the config's vision_config describes (src/hf/hf_vision.c) */
    unsigned char vision; /* VIS_* */
    bool nested_opt;      /* .nested may be absent: the keys are then the config's own (Qwen2_5_VLConfig before text_config) */
    /* issue 31 (qwen3_5, qwen3_5_moe): Qwen3_5GatedDeltaNet's four projections in_proj_qkv, in_proj_z,
     * in_proj_b, in_proj_a instead of Qwen3NextGatedDeltaNet's in_proj_qkvz and in_proj_ba */
    bool gdn_split;
    /* issue 31 (deepseek_v2): DeepseekV2Attention's complex rotary and DeepseekV2Moe's softmax routing
     * (topk_method) on DeepSeek-V3's modules (src/hf/hf_deepseek_v2.c) */
    bool ds_v2;
    /* issue 31 (deepseek_v32): DeepSeek Sparse Attention's indexer in every layer (src/hf/hf_deepseek_v32.c:
     * the keys checked; its parameters and transformers' forward layers/mla.c's; its memory vLLM's under --serve) */
    bool dsa;
    /* issue 31 (glm_moe_dsa, GLM-5): dsa with DeepSeek-V3's apply_rotary_pos_emb_interleave (view / transpose /
     * reshape: a copy) in the attention and in the indexer, where DeepSeek-V3.2 rotates even / odd slices in the one
     * and half-splits in the other (modular_glm_moe_dsa.py @ 01f8fa55; MLAttention dsa_rope glm_moe_dsa) */
    bool dsa_glm;
    /* issue 31 (glm4): Glm4's apply_rotary_pos_emb: cos / sin[..., :rotary_dim / 2].repeat_interleave(2) and
     * rotate_half over interleaved (even, odd) pairs (RotaryAttention rope_style glm4) */
    bool interleaved_rope;
    /* issue 31 (arcee): MLP_PLAIN as NemotronMLP names it (modeling_nemotron.py: up_proj, act_fn, down_proj) rather
     * than Starcoder2MLP's c_fc, act, c_proj */
    bool up_down;
    /* issue 31 (olmo2): the rotary embedding returns float32 cos / sin (Olmo2RotaryEmbedding: no .to(x.dtype)) and
     * apply_rotary_pos_emb's products are float32, cast back with .to(q_type) (RotaryEmbedding f32, RotaryAttention
     * rope_f32) */
    bool rope_f32;
    /* issue 31 (exaone4): the full-attention layers skip the rotary when sliding_window is set (Exaone4Attention:
     * apply_rotary_pos_emb `if self.sliding_window is None or self.is_sliding`); sliding_window_pattern is unread when
     * the config has layer_types (it may be a string there: "LLLG") */
    bool nope_full;
    /* issue 31 (cohere, cohere2): apply_rotary_pos_emb's q.float(), k.float() before rope_f32's products, the
     * rotary embedding's cos / sin in the model's dtype (RotaryAttention rope_upcast) */
    bool rope_upcast;
    /* issue 31 (cohere, cohere2): CohereForCausalLM's logits * logit_scale after the LM head (K_LOGITS_SCALE) */
    bool logit_mul;
    /* issue 31 (cohere2): rotary only on the sliding layers, the full-attention ones NoPE (Cohere2Attention:
     * apply_rotary_pos_emb if self.sliding_window is not None) */
    bool rope_sliding;
    /* issue 31 (hunyuan_v1_dense, hunyuan_v1_moe): query_layernorm / key_layernorm per head after
     * apply_rotary_pos_emb (RotaryAttention qk_norm_after_rope) */
    bool qk_norm_rope;
    /* issue 31 (ministral3): Ministral3Attention's llama-4 attention scale, q times 1 + beta * log(1 + floor(positions /
     * original_max_position_embeddings)) after the rotation, in q's dtype (RotaryAttention llama4_attn_scale) */
    bool l4_scale;
    /* issue 31 (mistral3 with a ministral3 language model): the row applies where the nested object's model_type is
     * this (hf.c family_of); rows without one apply to the rest. FAMILIES lists such a row's model_type once. */
    const char *text_type;
} hf_family;

enum {
    VIS_NONE,
    VIS_QWEN2_5, /* Qwen2_5_VisionTransformerPretrainedModel + Qwen2_5_VLPatchMerger */
    VIS_SIGLIP,  /* Gemma3: SiglipVisionModel + Gemma3MultiModalProjector */
    VIS_QWEN3_5, /* Qwen3.5: Qwen3_5VisionModel (Qwen3VLVisionModel without the deepstack mergers), run on --image */
    VIS_QWEN3,   /* Qwen3-VL: Qwen3VLVisionModel with its deepstack mergers, run on --image */
    VIS_PIXTRAL, /* mistral3: PixtralVisionModel + Mistral3MultiModalProjector, run on --image (hf_pixtral.c) */
    VIS_QWEN2,   /* Qwen2-VL: Qwen2VisionTransformerPretrainedModel + PatchMerger (LayerNorm, fc1 / fc2 MLP), run on --image */
    VIS_PALIGEMMA, /* paligemma: SiglipVisionModel (Gemma 3's, hf_vision.c) + PaliGemmaMultiModalProjector (a Linear) */
    VIS_IDEFICS3,  /* smolvlm, idefics3: the SigLIP-like vision transformer + the pixel-shuffle connector, run on --image (hf_idefics3.c) */
    VIS_GLM4V,     /* glm4v: Glm4vVisionModel (blocks, downsample Conv2d, Glm4vVisionPatchMerger), loaded, not run (hf_glm4v.c) */
    VIS_INTERNVL,  /* internvl: InternVLVisionModel + InternVLMultiModalProjector (pixel shuffle, LayerNorm, MLP), run on --image
                    * (hf_internvl.c, hf_vision.c write_internvl) */
};

#define HF_MAX_DEEPSTACK 64 /* deepstack_visual_indexes read with images */
/* A vision tower (vision_config) and the images it sees (--image, --images). */
typedef struct {
    int64_t depth, C, I, NH, cin, P, M, T, out, window; /* Qwen2_5_VLVisionConfig */
    int act;                                            /* A_*: hidden_act */
    int64_t images, h, w;       /* per sample; the size after the processor's smart_resize (0: no image) */
    int64_t patches, tokens;    /* per sample: the tower's patches and the image tokens the LM sees */
    /* VIS_SIGLIP (SiglipVisionConfig, Gemma3Config): image_size, vision_use_head, mm_tokens_per_image; VIS_PALIGEMMA:
     * mm the (image_size / patch_size)^2 image tokens, out PaliGemmaConfig.projection_dim */
    int64_t img, mm;
    bool use_head;
    int64_t npos, ndeep; /* VIS_QWEN3 and VIS_QWEN3_5: num_position_embeddings (Qwen3VLVisionModel.pos_embed's rows);
                          * VIS_QWEN3: len(deepstack_visual_indexes) */
    int64_t deep[HF_MAX_DEEPSTACK]; /* VIS_QWEN3 with images: deepstack_visual_indexes, ascending */
    int64_t embeds; /* per sample: the image embeddings' rows (Qwen2.5-VL: tokens; Gemma3: mm_tokens_per_image
                     * per image, its boi / eoi / "\n\n" tokens text rows) */
    int64_t tp;     /* the Qwen towers under vLLM's split (--serve --tp): the ranks their weights are split over
                     * (hf_vision.c vision_tp); 0 or 1 whole */
    bool decode;    /* with images: generate()'s decoding steps (vc_hf_split.image_decode): the tower written, not
                     * run, no image rows in the sequence (hf_layers.c build_layers, deepstack_add) */
    /* VIS_PIXTRAL (hf_pixtral.c): Mistral3Config's vision_feature_layer count (linear_1's input is hidden_size x
     * nfl), multimodal_projector_bias, projector_hidden_act (A_*) */
    struct {
        int64_t nfl, layer; /* layer: the (first) vision_feature_layer */
        bool bias;
        int act;
    } px;
    int64_t tiles; /* VIS_IDEFICS3 with images: the processor's frames per sample (tiles and global images, hf_idefics3.c) */
    bool qkv_bias; /* VIS_GLM4V: vision_config.attention_bias (the blocks' attn.qkv bias, hf_glm4v.c) */
    /* VIS_INTERNVL (hf_internvl.c): InternVLVisionConfig's attention_bias, use_qk_norm, norm_type "rms_norm",
     * use_mask_token, use_absolute_position_embeddings, and not use_mean_pooling (the tower's final layernorm) */
    struct {
        bool bias, qk, rms, mask, abs_pos, final_ln;
    } iv;
} hf_vision;

extern const hf_family vc__hf_families[];
extern const int vc__hf_nfamilies;

enum { A_SILU, A_GELU, A_GELU_TANH, A_RELU, A_GELU_NEW, A_GELU_FAST, A_GELU_QUICK, A_RELU2, A_XIELU };

#define HF_G4_MAX_TP 128 /* arch.g4.tp with per-layer inputs */

/* arch.liger: the kernels of apply_liger_kernel_to_<family> switched on (hf.c liger_family; --liger-kernels) */
enum { LIGER_ROPE = 1, LIGER_RMS_NORM = 2, LIGER_SWIGLU = 4, LIGER_GEGLU = 8, LIGER_FLCE = 16, LIGER_CE = 32 };

typedef struct arch {
    const hf_family *f;
    int64_t V, H, I, N, NH, KV, D, R, maxpos, types, labels, seq;
    double eps, p_embd, p_attn, p_resid, p_cls, final_cap, attn_cap, rotary;
    double emb_mult, resid_mult, logits_scale; /* granite */
    const cJSON *no_rope;              /* smollm3: no_rope_layers (1: rotary) */
    int64_t nope_interval;             /* smollm3: no_rope_layer_interval */
    bool tie, qkv_bias, o_bias, mlp_bias, parallel, use_window;
    bool mqa;                          /* gpt_bigcode: multi_query, one kv head */
    int64_t proj;                      /* opt: word_embed_proj_dim, the embeddings' width */
    bool norm_before, norm_affine;     /* opt: do_layer_norm_before, layer_norm_elementwise_affine */
    bool qk_layernorm;                 /* phi: qk_layernorm (refused: not modelled) */
    bool sinusoidal;                   /* distilbert: sinusoidal_pos_embds (refused: a frozen position table) */
    int act;
    int64_t window, window_layers;
    int64_t pos_off;                   /* RoBERTa: positions start after pad_token_id */
    int64_t E, K, moe_I, shared_I, sparse_step;
    bool norm_topk;
    const cJSON *mlp_only;             /* qwen2_moe: mlp_only_layers */
    const cJSON *layer_types;          /* "full_attention" / "sliding_attention" per layer, when the config lists them */
    /* qwen3_next: the Gated DeltaNet (linear attention) layers' heads and widths, the conv kernel,
     * full_attention_interval, and layer_types ("linear_attention" / "full_attention") when listed */
    int64_t lin_kh, lin_vh, lin_kd, lin_vd, conv_k, full_interval;
    const cJSON *hybrid_types;
    double imbalance;
    bool eager;         /* the attention runs eager_attention_forward: .eager, or .eager_release at the release */
    int liger;          /* --liger: Liger-Kernel's patch set on the decoder layers, LIGER_* bits (the norms, the gated
                         * MLP, the rotary: layers/llm.c liger_*; the loss is the liger row of src/engine/loss.c) */
    bool liger_copy;    /* its RMSNorms' in_place False (apply_liger_kernel_to_gemma2, _gemma3_text) */
    bool mask_4x;       /* mistral at a --transformers release before masking_utils (VC_TF_SLIDING_FLOAT_MASK): the
                         * sdpa sliding mask is the model's float one (layers/llm.c sliding_mask_4x) */
    int experts_impl;   /* EXPERTS_*: the transformers release's MoE experts (default: transformers 5's grouped_mm) */
    /* deepseek_v3 / kimi_k2: MLA's ranks and head dims (the rope part is D), the MoE's shared experts,
     * groups and dense first layers, the MTP layers (not built: transformers and vLLM do not load them) */
    int64_t q_lora, kv_lora, qk_nope, v_head, n_shared, n_group, topk_group, first_dense, nextn;
    int64_t moe_end; /* ernie4_5_moe: moe_layer_end_index (-1: num_hidden_layers - 1) */
    bool rope_interleave;
    double routed_scale;
    bool use_qk_norm; /* glm4_moe: use_qk_norm (rows without the key: the template's qk_norm alone) */
    bool ckpt;          /* gradient checkpointing per decoder layer */
    int64_t ckpt_every; /* with ckpt: only layers i with (i + 1) % ckpt_every == 0 checkpointed (1: all) */
    int64_t sp;         /* --tp --sp: the TP degree the sequence is split over, 1 none */
    int64_t qk_gather;  /* --serve --tp: QK_WHOLE's q / k all-gathered over these vLLM ranks before the whole norms (hf_tp.c) */
    /* issue 31 (gemma3, gpt_oss): read to be checked; each changes a scale, no tensor's size */
    int64_t window_pattern;            /* sliding_window_pattern */
    double query_scalar, rope_local, swiglu_alpha, swiglu_limit;
    /* t5 (hf_t5.c): the decoder's layers, the relative-position buckets and their reach, the gated MLP */
    int64_t dec_N, rel_buckets, rel_maxdist;
    int64_t param_bound; /* an upper bound of the language model's parameters (hf_read.c check_total; towers add theirs) */
    bool gated;
    int64_t tgt; /* the decoder's tokens per sample (--target-seq, else --seq) */
    /* falcon: new_decoder_architecture (k and v broadcast to every head), alibi (refused),
     * num_ln_in_parallel_attn (0: None) */
    bool new_arch, alibi;
    int64_t num_ln;
    /* whisper (hf_whisper.c): the decoder's heads and MLP width, the mel bins, the encoder's positions
     * (the feature extractor's frames are twice as many), activation_dropout, the layerdrops */
    struct {
        int64_t dec_NH, dec_I, mel, src;
        double p_act, enc_drop, dec_drop;
        int part; /* vc_hf_split.whisper_part: 0 the whole model, 2 vLLM's decoder's dummy run
                   * (src/engine/serve_encdec.c) */
        int64_t tp; /* vLLM's tensor-parallel ranks (hf_tp.c; 0 or 1: none): a rank's attention width d_model / tp */
    } wh;
    /* the bart-like rows (hf_bart.c vc__hf_bart_read): marian's sinusoidal positions (a frozen nn.Embedding, no
     * offset), layernorm_embedding (bart), the decoder's own embed_tokens (marian without
     * share_encoder_decoder_embeddings) and its rows (decoder_vocab_size: the lm_head's and final_logits_bias's) */
    struct {
        bool sinus, ln_emb, share;
        bool mbart_shift; /* mbart: modeling_mbart.py shift_tokens_right (layers/t5.c T5DecoderIds "mbart") */
        bool pre; /* pegasus, mbart, m2m_100: MBartEncoderLayer's pre-LN layers and each stack's final layer_norm */
        bool m2m; /* m2m_100: M2M100SinusoidalPositionalEmbedding's buffer (layers/bart.c M2M100Positions), no
                   * final_logits_bias */
        int64_t dec_V;
        int64_t pad; /* m2m_100: pad_token_id, the positions' padding_idx */
    } bt;
    hf_vision vis; /* issue 31 item 4: f->vision's tower (src/hf/hf_vision.c) */
    /* vit (hf_read.c read_vit): image_size, patch_size, num_channels; the patches (image_size / patch_size)^2 */
    /* dinov2 (the same reader): use_swiglu_ffn, use_mask_token (mask_token, a parameter the forward leaves unused
     * without bool_masked_pos) */
    /* h, w: the image run (the config's image_size, or dinov2's --image), patches (h / patch_size) x (w / patch_size);
     * grid: image_size / patch_size, the side of the learned position grid; drop_path: dinov2's drop_path_rate */
    struct {
        int64_t img, P, cin, patches, h, w, grid;
        bool swiglu, mask_token;
        bool head; /* siglip_vision_model: SiglipMultiheadAttentionPoolingHead (vision_use_head) */
        double drop_path;
    } vit;
    /* llama4 (hf_llama4.c): moe_layers (NULL: every interleave_moe_layer_step-th from step - 1),
     * layer_types ("chunked_attention" / "full_attention"; NULL: chunked where the layer has rope),
     * attention_chunk_size (0: None), attn_temperature_tuning */
    const cJSON *moe_layers, *l4_types;
    int64_t chunk;
    bool temp_tuning;
    /* llama4 (Llama4Config): vision_config's Llama4VisionModel and the projector, loaded, not run */
    struct { int64_t H, I, N, NH, cin, P, img, pin, pout, vout, tp; bool on; } l4v; /* tp: vLLM's ranks (--serve --tp) */
    /* modernbert (hf_modernbert.c): norm_bias, classifier_pooling "mean", classifier_bias, classifier_activation */
    struct {
        bool norm_bias, pool_mean, cls_bias;
        int cls_act;
    } mb;
    /* gemma4 (hf_gemma4.c): global_head_dim (its falsy value: head_dim), num_global_key_value_heads (0: None),
     * num_kv_shared_layers, hidden_size_per_layer_input (0: none), vocab_size_per_layer_input, layer_types
     * (NULL: the default 5:1), attention_k_eq_v, enable_moe_block, use_double_wide_mlp; the towers' parameters;
     * tp: vLLM's ranks under --serve --tp (hf_tp.c: Vp is then a rank's rows), 0 or 1 whole, at most HF_G4_MAX_TP
     * with per-layer inputs (hf_gemma4.c writes their all-gather as a Cat of tp inputs, layers/layer.h's
     * VC_MAX_INPUTS) */
    struct {
        int64_t gD, gKV, S, P, Vp, vision, audio, tp;
        const cJSON *types;
        bool keqv, moe, wide;
    } g4;
    int topk_method; /* deepseek_v2: 0 greedy, 1 group_limited_greedy (hf_deepseek_v2.c) */
    struct { int64_t nh, hd, topk; } dsa; /* deepseek_v32: index_n_heads, index_head_dim, index_topk */
    /* phimoe (hf_phimoe.c): lm_head_bias, input_jitter_noise */
    bool lm_bias;
    double jitter;
    bool vllm; /* the model vLLM loads (vc_hf_split.vllm, --serve): minimax_m2's float32 router (hf_layers.c) */
    /* granitemoehybrid (hf_granite4.c): layer_types ("mamba" / "attention"; NULL: every layer mamba), the
     * Mamba2 layers' heads, head_dim, groups, state, conv kernel, chunk, conv / projection biases,
     * position_embedding_type "rope", attention_multiplier, num_local_experts (0: dense) with their top-k */
    struct {
        const cJSON *types;
        int64_t mh, mp, mg, mn, mk, chunk, E, K;
        bool conv_bias, proj_bias, rope;
        double attn_mult;
        bool resid_f32; /* mamba2 (the same mixer fields): residual_in_fp32 */
        /* vLLM's tensor-parallel ranks of the Mamba2 layers (--serve --tp, hf_tp.c; 0 or 1: whole, mh and mg then
         * a rank's), and the config keys of the heads and groups the refusals name (set by the family's reader) */
        int64_t tp;
        const char *hkey, *gkey;
    } gh;
    /* lfm2 (hf_lfm2.c): layer_types ("conv" / "full_attention"), else full_attn_idxs (both NULL: every layer
     * attention), conv_L_cache, conv_bias */
    struct {
        const cJSON *types, *idxs;
        int64_t k;
        bool bias;
        bool ebias; /* lfm2_moe: use_expert_bias */
        int64_t tp; /* --serve --tp: vLLM's ranks, each holding conv_dim / tp of a ShortConv layer (hf_lfm2.c); 0: 1 */
    } lf;
    /* nemotron_h (hf_granite4.c; its Mamba2 sizes in gh): hybrid_override_pattern (pat) or layers_block_type
     * (list), mlp_bias */
    struct {
        const char *pat;
        const cJSON *list;
        bool mlp_bias;
    } nh;
    /* falcon_h1 (hf_granite4.c; its Mamba2 sizes in gh): projectors_bias (out_proj), mamba_rms_norm, the muP
     * multipliers (lm_head, key, attention in / out, ssm in / out, mlp_multipliers' gate and down) */
    struct {
        bool out_bias, rms_norm;
        double lm_head, key, attn_in, attn_out, ssm_in, ssm_out, mlp_gate, mlp_down;
    } fh;
    /* mllama (hf_mllama.c): text_config's cross_attention_layers (ncross of nall layers; N is then the
     * MllamaSelfAttentionDecoderLayers alone, the layers a text-only forward runs), embed_tokens' 8 rows past
     * vocab_size (vextra), and vision_config's MllamaVisionModel with the multi_modal_projector (run with images):
     * hidden_size, intermediate_size, num_hidden_layers, num_global_layers, attention_heads, num_channels,
     * patch_size, image_size, max_num_tiles, len(supported_aspect_ratios), vision_output_dim */
    struct {
        bool on;
        int64_t nall, ncross, vextra;
        const cJSON *cross;
        int64_t H, I, N, G, NH, cin, P, img, tiles, ratios, vout;
        /* --image / --images (hf_mllama.c): images per sample, the processor's canvas in tiles (th x tw), the
         * intermediate states the tower cats; images > 0: the tower, the projector and the cross-attention layers run */
        int64_t images, th, tw, nint;
    } ml;
    /* siglip (SiglipModel): the vision tower's arch, vision_config read with the siglip_vision_model row (hf.c) */
    const struct arch *tower;
    int64_t clip_proj; /* clip: CLIPConfig.projection_dim, the bias-free projections' width (hf_clip.c) */
    /* ministral3 (hf_read.c read_l4_scale): rope_parameters' llama_4_scaling_beta and original_max_position_embeddings,
     * read to be checked (the scale's values size no tensor) */
    double l4_beta;
    int64_t l4_orig;
} arch;

/* The supported model_types, as the errors list them: each row's model_type
 * once (test_hf test_family_table checks it). */
#define FAMILIES                                                                                                  \
    "llama, mistral, qwen2, qwen3, gemma, gemma2, phi3, mixtral, qwen2_moe, gpt2, gpt_neox, bert, roberta, smollm3, " \
    "granite, olmo2, gpt_bigcode, opt, phi, qwen3_moe, deepseek_v3, kimi_k2, glm4_moe, glm4_moe_lite, gpt_oss, gemma3_text, gemma3, distilbert, xlm-roberta, qwen3_next, t5, falcon, qwen2_5_vl, llama4_text, llama4, qwen3_5, qwen3_5_moe, qwen3_5_text, qwen3_5_moe_text, modernbert, qwen3_vl, gemma4_text, gemma4, whisper, deepseek_v2, deepseek_v32, glm_moe_dsa, glm4, olmo3, starcoder2, qwen3_vl_moe, mpnet, mt5, bart, mistral3, ministral, minimax_m2, phimoe, granitemoe, granitemoeshared, granitemoehybrid, umt5, olmoe, mamba2, exaone4, seed_oss, ernie4_5, ernie4_5_moe, lfm2, cohere, cohere2, nemotron_h, vit, qwen2_vl, falcon_h1, lfm2_moe, arcee, hunyuan_v1_dense, hunyuan_v1_moe, dinov2, nemotron, apertus, siglip_vision_model, mllama, paligemma, siglip, marian, pegasus, deepseek_v4, ministral3, mbart, clip, m2m_100, smolvlm, idefics3, glm4v, internvl"

/* The largest size a key or --seq may give: 2^40. */
#define MAX_SIZE (INT64_C(1) << 40)

/* The reader's state, which the writer shares for oom and sp. */
typedef struct {
    const cJSON *cfg;
    vc_error *err;
    const char *fam;
    bool oom;
    int64_t sp; /* arch.sp: Linears and embeddings get their sequence-parallel keys */
    const char *nested; /* the object the keys are read from (gemma3's text_config): errors name nested.key */
} rd;

/* hf_read.c: an error (VC_ERR_MODEL, -1 returned) naming key, as r->nested.key when the keys are
 * read from a nested object (text_config); every family's reader reports through it. */
int vc__hf_bad(rd *r, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* hf_read.c: the family's keys (r->fam and a->fam set) read into a, with
 * their PretrainedConfig defaults, then the products that become tensor
 * sizes checked. -1 with r->err naming the key. */
int vc__hf_read(rd *r, arch *a);
/* hf_layers.c: layer i's sliding window (0: full attention), by the config's
 * layer_types, else the row's pattern. */
int64_t vc__hf_layer_window(const arch *a, int64_t i);
/* hf_layers.c: whether layer i applies the rotary embedding (false: a NoPE layer). */
bool vc__hf_layer_rope(const arch *a, int64_t i);
/* hf_layers.c: whether layer i is a Gated DeltaNet (linear_attention) layer (qwen3_next). */
bool vc__hf_layer_linear(const arch *a, int64_t i);
/* hf_layers.c: a's layers appended to arr (r->oom set when out of memory). */
void vc__hf_write(rd *r, cJSON *arr, const arch *a);

/* hf_t5.c: T5ForConditionalGeneration's parameters (a read by vc__hf_read), as
 * named_parameters() counts them: the shared embedding once, lm_head only
 * when untied. */
int64_t vc__hf_t5_parameters(const arch *a);
/* hf_t5.c: feed_forward_proj, is_gated_act, dense_act_fn, is_encoder_decoder
 * and the buckets' consistency, read into a after the row's keys; -1 with
 * r->err naming the key. */
int vc__hf_t5_read(rd *r, arch *a);
/* hf_t5.c: T5ForConditionalGeneration's layers appended to arr (r->oom set when out of memory). */
void vc__hf_t5_write(rd *r, cJSON *arr, const arch *a);
/* hf_whisper.c: WhisperConfig's keys the row's reading cannot check (the decoder's heads dividing
 * d_model, the layerdrops, apply_spec_augment, is_encoder_decoder, scale_embedding), read into a->wh
 * after the row's keys; -1 with r->err naming the key. */
int vc__hf_whisper_read(rd *r, arch *a);
/* hf_whisper.c: WhisperForConditionalGeneration's parameters (named_parameters(): proj_out counted
 * only when untied; the encoder's frozen embed_positions included). */
int64_t vc__hf_whisper_parameters(const arch *a);
/* hf_whisper.c: WhisperForConditionalGeneration's layers appended to arr (r->oom set when out of memory). */
void vc__hf_whisper_write(rd *r, cJSON *arr, const arch *a);
/* hf_llama4.c: Llama4TextConfig's keys the row's reading cannot check (null head_dim and
 * num_key_value_heads, moe_layers, no_rope_layers, layer_types, attention_chunk_size, the
 * temperature tuning), read into a after the row's keys; -1 with r->err naming the key. */
int vc__hf_llama4_read(rd *r, arch *a);
/* hf_llama4.c: Llama4ForCausalLM's parameters (named_parameters(), the lm_head counted unless
 * tied) and, in *active, those one token runs through (top-k of the routed experts). */
int64_t vc__hf_llama4_parameters(const arch *a, int64_t *active);
/* hf_llama4.c: whether decoder layer i is a Llama4TextMoe layer (config.moe_layers). */
bool vc__hf_llama4_moe_layer(const arch *a, int64_t i);
/* hf_llama4.c: llama4's vision_config (Llama4VisionConfig's defaults), read into a->l4v and checked
 * (errors name vision_config.KEY; r reads the config's root); --image and --images refused; under
 * vLLM's split (split.vllm, split.tp > 1) a rank's shards (a->l4v.tp). */
int vc__hf_llama4_vision_read(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split);
/* hf_llama4.c: Llama4VisionModel's and Llama4MultiModalProjector's weights appended to arr as frozen
 * VisionWeights layers (loaded, not run), when a->l4v.on. */
void vc__hf_llama4_vision_write(rd *r, cJSON *arr, const arch *a);
/* hf_llama4.c: layer i's attention_chunk_size when it is a "chunked_attention" layer with a
 * chunk size, else 0 (full attention). */
int64_t vc__hf_llama4_chunk(const arch *a, int64_t i);
/* hf_gemma4.c: Gemma4TextConfig's keys the row's reading cannot check (layer_types with the last
 * layer forced full, global_head_dim, num_global_key_value_heads, attention_k_eq_v, the kv-shared
 * layers, the per-layer embeddings, the MoE block), read into a->g4; -1 with r->err naming the key. */
int vc__hf_gemma4_read(rd *r, arch *a);
/* hf_gemma4.c: whether decoder layer i is a "sliding_attention" layer (Gemma4TextConfig.__post_init__). */
bool vc__hf_gemma4_sliding(const arch *a, int64_t i);
/* hf_gemma4.c: the language model's parameters (Gemma4ForCausalLM's named_parameters(), the lm_head
 * counted unless tied) and, in *active, those one token runs through (top-k of the experts). */
int64_t vc__hf_gemma4_parameters(const arch *a, int64_t *active);
/* hf_gemma4.c: gemma4's vision_config and audio_config (r reads the config's root; errors name
 * vision_config.KEY / audio_config.KEY), the towers' and embedders' parameters into a->g4.vision and
 * a->g4.audio; --image and --images refused. */
int vc__hf_gemma4_towers_read(rd *r, arch *a, const vc_hf_options *o);
/* hf_gemma4.c: 0, or -1 with err naming the option the layers do not model for Gemma 4 (a Megatron
 * tensor-parallel rank, per_expert experts). */
int vc__hf_gemma4_unmodelled(const arch *a, const char *fam, vc_hf_split split, vc_error *err);
/* hf_gemma4.c: Gemma4ForCausalLM's layers (gemma4's towers as frozen weights first) appended to arr. */
void vc__hf_gemma4_write(rd *r, cJSON *arr, const arch *a);
/* hf_vision.c: vision_config read and checked (errors name vision_config.KEY), then the
 * images of o (--image, --images) turned into patches and tokens as the processor does;
 * a family without a tower refuses the options; over tp > 1 ranks the Qwen towers are split as
 * vLLM splits them (split.vllm, without images) and refused otherwise. -1 with r->err set. */
int vc__hf_vision_read(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split);
/* hf_vision.c: the tower's layers appended to arr, before the language model; returns the
 * name of the image embeddings' layer (NULL: the tower's weights only, no image). */
const char *vc__hf_vision_write(rd *r, cJSON *arr, const arch *a);

/* hf_deepseek_v2.c: DeepseekV2Config's keys the row's reading cannot check (topk_method, n_group /
 * topk_group with it, n_shared_experts null, moe_layer_freq, scoring_func, mlp_bias), read into a
 * after the row's keys; -1 with r->err naming the key. */
int vc__hf_deepseek_v2_read(rd *r, arch *a);

/* hf_deepseek_v32.c: DeepseekV32Config's indexer keys (index_n_heads, index_head_dim, index_topk) and
 * the checks the row's reading cannot make (q_lora_rank null, mlp_layer_types, layer_types); -1 with
 * r->err naming the key. */
int vc__hf_deepseek_v32_read(rd *r, arch *a);
/* hf_deepseek_v32.c: glm4_moe_lite's mlp_layer_types (leading "dense", then "sparse") into a->first_dense, and
 * first_k_dense_replace, where the config has it, checked against it; -1 with r->err naming the key. */
int vc__hf_glm4_moe_lite_read(rd *r, arch *a);

/* hf_glm4.c: glm4's partial_rotary_factor (and rope_parameters' copy of it) checked against head_dim: an even
 * number of rotary dimensions above 0, a->R set; -1 with r->err naming the key. */
int vc__hf_glm4_read(rd *r, arch *a);
/* hf_qwen3_vl_moe.c: 0, or -1 with err naming the option: --transformers for a release (release: its
 * major x 100 + minor, 0 none named) without the model, or when the release chose per_expert, else
 * --experts-implementation, when qwen3_vl_moe's experts would run per_expert, which no release does. */
int vc__hf_qwen3_vl_moe_experts(const arch *a, int release, bool from_release, vc_error *err);
/* hf_qwen3_vl_moe.c: after the row's keys, text_config's mlp_only_layers checked (layer indices) and lm_head's
 * tie taken from the config's own tie_word_embeddings (Qwen3VLMoeConfig's False when absent; text_config's is
 * not what transformers reads); -1 with err naming the key. */
int vc__hf_qwen3_vl_moe_read(const cJSON *root, arch *a, vc_error *err);
/* hf_pixtral.c: mistral3's vision_config (PixtralVisionConfig) and Mistral3Config's projector keys read and
 * checked (errors name vision_config.KEY or the key; text_config.model_type other than mistral refused), the
 * tower's and projector's sizes into a->vis, --image / --images turned into patches and tokens as PixtralProcessor
 * does; a Megatron --tp refused (vLLM's split under --serve taken). */
int vc__hf_pixtral_read(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split);
/* hf_pixtral.c: PixtralVisionModel's and Mistral3MultiModalProjector's layers appended to arr: with images the
 * run (returns the image embeddings' layer), else their weights as frozen VisionWeights layers (NULL). */
const char *vc__hf_pixtral_write(rd *r, cJSON *arr, const arch *a);
/* hf_idefics3.c: smolvlm's / idefics3's vision_config and scale_factor read and checked into a->vis (errors name
 * vision_config.KEY or the key; text_config.model_type other than llama, a tie_word_embeddings that disagrees with
 * text_config's, idefics3's vocab_size other than text_config's refused). -1 with r->err. */
int vc__hf_idefics3_read(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split);
/* hf_idefics3.c: --image / --images, --serve and --tp refused naming the option (0 when none is asked). */
int vc__hf_idefics3_unmodelled(const char *fam, vc_hf_split split, bool serve, vc_error *err);
/* hf_idefics3.c: the vision transformer's and the connector's weights appended to arr as frozen VisionWeights layers. */
void vc__hf_idefics3_write(rd *r, cJSON *arr, const arch *a);
/* hf_glm4v.c: glm4v's vision_config read and checked into a->vis (errors name vision_config.KEY; out_hidden_size other
 * than the text hidden_size, a top-level tie_word_embeddings that disagrees with text_config's refused). -1 with
 * r->err. */
int vc__hf_glm4v_read(rd *r, arch *a, const vc_hf_options *o);
/* hf_glm4v.c: the language model's rope_scaling.mrope_section checked against the rotary dimensions (a->R, after
 * vc__hf_glm4_read). -1 with r->err. */
int vc__hf_glm4v_text_read(rd *r, const arch *a);
/* hf_glm4v.c: --image / --images under --mode generate, --serve and --tp refused naming the option (0 when none is
 * asked). */
int vc__hf_glm4v_unmodelled(const char *fam, const vc_hf_options *o, vc_hf_split split, bool serve, bool generate,
                            vc_error *err);
/* hf_glm4v.c: Glm4vVisionModel's weights appended to arr as frozen VisionWeights layers. */
void vc__hf_glm4v_write(rd *r, cJSON *arr, const arch *a);
/* hf_vision.c: vision_config.KEY as a bool into *out (def when absent or null); -1 with r->err naming it */
int vc__hf_vision_bool(rd *r, const cJSON *v, const char *key, bool def, bool *out);
/* hf_internvl.c: internvl's vision_config (InternVLVisionConfig) and InternVLConfig's projector keys read and checked into
 * a->vis (errors name vision_config.KEY or the key; text_config.model_type other than the row's, a tie_word_embeddings
 * that disagrees with text_config's refused); --image / --images turned into the processor's tiles and tokens. -1 with
 * r->err. */
int vc__hf_internvl_read(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split);
/* hf_internvl.c: --serve and --tp refused naming the option (0 when none is asked). */
int vc__hf_internvl_unmodelled(vc_hf_split split, bool serve, vc_error *err);
/* hf_internvl.c: InternVLVisionModel's and InternVLMultiModalProjector's weights appended to arr as frozen VisionWeights
 * layers (loaded, not run). */
void vc__hf_internvl_write(rd *r, cJSON *arr, const arch *a);
/* hf_mllama.c: MllamaConfig's keys the row does not read (text_config.cross_attention_layers, vision_config's
 * MllamaVisionConfig) read into a->ml and checked (errors name text_config.KEY or vision_config.KEY); a->N becomes
 * the self-attention layers'; --image / --images, --tp and --serve refused naming the option. -1 with r->err. */
int vc__hf_mllama_read(rd *r, arch *a, const vc_hf_options *o, vc_hf_split split, bool serve, bool generate);
/* hf_mllama.c: with images, the cross-attention decoder layers that follow self-attention layer s of the text-only
 * numbering (s = -1: those before the first), written after the stack's run that ends there, on the hidden state named
 * `in` (NULL: the layer before); returns the last one's name, in buf (in when none). */
const char *vc__hf_mllama_cross_write(rd *r, cJSON *arr, const arch *a, int64_t s, const char *in, char *buf, size_t n);
/* hf_mllama.c: with images, whether a cross-attention layer comes right before self-attention layer s */
bool vc__hf_mllama_cross_before(const arch *a, int64_t s);
/* hf_mllama.c: whether language_model.model.layers.i is a MllamaCrossAttentionDecoderLayer (cross_attention_layers). */
bool vc__hf_mllama_cross(const arch *a, int64_t i);
/* hf_mllama.c: MllamaVisionModel's, the multi_modal_projector's and the MllamaCrossAttentionDecoderLayers' weights
 * appended to arr as frozen VisionWeights layers (a text-only forward never runs them), when a->ml.on. */
void vc__hf_mllama_write(rd *r, cJSON *arr, const arch *a);
/* hf_pixtral.c: a frozen VisionWeights layer (layers/vision.c) named name: the weight [d0, d1] or [d0] (d1 0), its
 * bias [d0] when bias, "linear": false for a 2-D weight that is not an nn.Linear's. */
void vc__hf_frozen_weights(rd *r, cJSON *arr, const char *name, int64_t d0, int64_t d1, bool bias, bool linear);
/* hf_pixtral.c: vision_config's (v, NULL when absent) key: an integer in [min, 2^40], def when absent or null; an
 * activation ACT2FN has among gelu, gelu_pytorch_tanh, silu, relu (A_*; gelu when absent). -1 with r->err naming
 * vision_config.KEY. */
int vc__hf_vision_int(rd *r, const cJSON *v, const char *key, int64_t def, int64_t min, int64_t *out);
int vc__hf_vision_act(rd *r, const cJSON *v, const char *key, int *out);
/* hf_granite4.c: GraniteMoeHybridConfig's keys the row does not read (layer_types, the mamba_* keys,
 * position_embedding_type, attention_multiplier, num_local_experts and num_experts_per_tok,
 * shared_intermediate_size), read into a->gh after the row's keys; -1 with r->err naming the key. */
int vc__hf_granite4_read(rd *r, arch *a);
/* hf_granite4.c: whether decoder layer i is a Mamba2 layer (config.layers_block_type[i] == "mamba"). */
bool vc__hf_granite4_mamba(const arch *a, int64_t i);
/* hf_granite4.c: GraniteMoeHybridForCausalLM's parameters (named_parameters(), the lm_head counted unless
 * tied) and, in *active, those one token runs through (top-k of the routed experts). */
int64_t vc__hf_granite4_parameters(const arch *a, int64_t *active);
/* hf_granite4.c: 0, or -1 with err naming the option the layers do not model for granitemoehybrid. */
int vc__hf_granite4_unmodelled(const arch *a, vc_hf_split split, vc_error *err);
/* hf_granite4.c: GraniteMoeHybridForCausalLM's layers appended to arr. */
void vc__hf_granite4_write(rd *r, cJSON *arr, const arch *a);
/* hf_granite4.c: Mamba2Config's keys the row does not read (the mixer's, residual_in_fp32, the init-only ones). */
int vc__hf_mamba2_read(rd *r, arch *a);
/* hf_granite4.c: 0, or -1 with err naming the option not modelled for mamba2 (--tp, --serve). */
int vc__hf_mamba2_unmodelled(const arch *a, vc_hf_split split, vc_error *err);
/* hf_granite4.c: Mamba2ForCausalLM's layers appended to arr. */
void vc__hf_mamba2_write(rd *r, cJSON *arr, const arch *a);
/* hf_lfm2.c: Lfm2Config's keys the row does not read (layer_types / full_attn_idxs, conv_L_cache, conv_bias,
 * tie_embedding, block_ff_dim and the MLP width's adjustment); 0, or -1 with the error naming the key. */
int vc__hf_lfm2_read(rd *r, arch *a);
/* hf_lfm2.c: whether decoder layer i is a short-convolution layer (layer_types[i] == "conv"). */
bool vc__hf_lfm2_conv(const arch *a, int64_t i);
/* hf_lfm2.c: 0, or -1 with err naming the option the layers do not model for lfm2 (vllm: the model --serve loads,
 * checked against cfg, the config's keys); under vLLM's --tp, a->lf.tp. */
int vc__hf_lfm2_unmodelled(arch *a, const cJSON *cfg, vc_hf_split split, bool vllm, vc_error *err);
/* hf_granite4.c: NemotronHConfig's keys the row does not read (the layer pattern, the Mamba2 mixers' keys, the
 * activations, mlp_bias), read into a->gh and a->nh after the row's keys; -1 with r->err naming the key. */
int vc__hf_nemotron_h_read(rd *r, arch *a);
/* hf_granite4.c: block i's mixer: 'M' Mamba2, '*' attention, '-' MLP, 'E' MoE. */
char vc__hf_nemotron_h_kind(const arch *a, int64_t i);
/* hf_granite4.c: NemotronHForCausalLM's layers appended to arr. */
void vc__hf_nemotron_h_write(rd *r, cJSON *arr, const arch *a);
/* hf_granite4.c: FalconH1Config's keys the row does not read (the mamba_* keys, projectors_bias, the multipliers,
 * num_logits_to_keep), read into a->gh and a->fh after the row's keys; -1 with r->err naming the key. */
int vc__hf_falcon_h1_read(rd *r, arch *a);
/* hf_granite4.c: 0, or -1 with err naming the option not modelled for falcon_h1 (--tp; --serve: serve.c). */
int vc__hf_falcon_h1_unmodelled(const arch *a, vc_hf_split split, vc_error *err);
/* hf_granite4.c: FalconH1ForCausalLM's layers appended to arr. */
void vc__hf_falcon_h1_write(rd *r, cJSON *arr, const arch *a);

/* hf_modernbert.c: ModernBertConfig's keys the row does not read (norm_bias, classifier_pooling,
 * classifier_bias, classifier_activation, the rotary bases, reference_compile, layer_types against
 * global_attn_every_n_layers), read into a after the row's keys; -1 with r->err naming the key. */
int vc__hf_modernbert_read(rd *r, arch *a);
/* hf_layers.c: the JSON writer every family's writer builds its layers with (hf_layers.c,
 * hf_t5.c, hf_modernbert.c, hf_vision.c); each sets r->oom when cJSON runs out of memory.
 * vc__hf_layer: {"type": type, "name": name (when not NULL)} appended to arr (NULL: out of
 * memory); vc__hf_num / _flag / _str: o[k] = v (nothing when o is NULL); vc__hf_ins:
 * o["inputs"] = [a, b, c, d] up to the first NULL. */
cJSON *vc__hf_layer(rd *r, cJSON *arr, const char *type, const char *name);
void vc__hf_num(rd *r, cJSON *o, const char *k, double v);
void vc__hf_flag(rd *r, cJSON *o, const char *k, bool v);
void vc__hf_str(rd *r, cJSON *o, const char *k, const char *v);
void vc__hf_ins(rd *r, cJSON *o, const char *a, const char *b, const char *c, const char *d);

/* hf_minimax_m2.c: MiniMax-M2's config keys transformers' MiniMaxM2Config does not declare but the checkpoint's
 * config.json carries (rotary_dim, use_qk_norm, qk_norm_type, scoring_func, use_routing_bias,
 * shared_intermediate_size, attn_type_list, the MTP modules), read into a after the row's keys and checked
 * against what MiniMaxM2ForCausalLM builds; -1 with r->err naming the key. */
int vc__hf_minimax_m2_read(rd *r, arch *a);

/* hf_phimoe.c: PhimoeConfig's keys the row does not read (lm_head_bias, input_jitter_noise, router_jitter_noise,
 * a null num_key_value_heads) and the checks of what PhimoeForCausalLM builds; -1 with r->err naming the key. */
int vc__hf_phimoe_read(rd *r, arch *a);

/* hf_olmoe.c: OlmoeConfig's keys the row does not read (clip_qkv, a head_dim other than hidden / heads,
 * output_router_logits) checked against what OlmoeForCausalLM builds; -1 with r->err naming the key. */
int vc__hf_olmoe_read(rd *r, arch *a);
/* hf_deepseek_v4.c (issue 31, DeepSeek-V4): DeepseekV4Config's keys checked and DeepseekV4ForCausalLM's parameters
 * counted exactly (sum of named_parameters()' numels, buffers excluded) into *params; its memory is not modelled, so
 * vc_hf_build refuses every estimate after the count (0: counted; else err's code, naming the key) */
int vc__hf_deepseek_v4_count(rd *r, int64_t *params);
/* An int key of a count-only family's config object r->cfg (cls the config class the error names): def when absent,
 * else an integer in [lo, MAX_SIZE] (hf_deepseek_v4.c; 0, or -1 with r->err naming the key) */
int vc__hf_count_int(rd *r, const char *key, int64_t def, int64_t lo, const char *cls, int64_t *out);
/* What vLLM (vllm-project/vllm, sources in hf_deepseek_v4.c) allocates for DeepSeek-V4 beside its weights, per rank
 * (nothing of it is split by tensor parallelism): layers[0..2] the sliding-only, CSA (compress ratio 4) and HCA (128)
 * layers of compress_ratios; the pages of the fp8_ds_mla cache, each rounded up to 576 bytes: page_swa every layer's
 * sliding-window cache (64 tokens, window tokens kept), page_compressed[1] / [2] a CSA / HCA layer's compressed latent
 * and page_indexer a CSA layer's indexer keys per block_size (256) tokens of context (per_block: all of them, all
 * layers), page_state[1] / [2] and page_indexer_state the compressors' float32 state pages (sliding windows of 8 and
 * 128 tokens); topk_buffer and mtp_buffer the model's int32 top-k indices and bf16 MTP hidden buffer at
 * max_num_batched_tokens; prefill_workspace the profiling run's largest bf16 gather workspace at max_model_len. Served
 * by src/engine/serve_dsv4.c (--serve). */
typedef struct {
    int64_t layers[3], block_size, window, page_swa, page_compressed[3], page_indexer, page_state[3], page_indexer_state;
    int64_t per_block, topk_buffer, mtp_buffer, prefill_workspace;
    /* one tensor-parallel rank's weights as vLLM loads them (vc_hf_v4_rank's split), bytes: all of them, and of it the
     * routed experts; index_head_dim, hidden_size, heads, head_dim, q_lora_rank, o_groups, o_lora_rank, experts,
     * top-k, moe_intermediate_size, vocab_size of the config (serve_dsv4.c sizes the profiling run's tensors with them) */
    int64_t weights, experts;
    int64_t ihd, hidden, heads, head_dim, q_lora, o_groups, o_lora, n_experts, topk, inter, vocab, hc;
} vc_hf_v4_vllm;
/* the rank: tensor_parallel_size, the MXFP4 backend's round-up of a rank's intermediate size and of hidden_size (0 or 1:
 * none), and the bytes of an element of the experts' kept biases (src/policy/quant.c mxfp4_vllm_tensors) */
typedef struct {
    int64_t tp, ipad, hpad, bias_bytes;
} vc_hf_v4_rank;
/* hf_deepseek_v4.c: vc_hf_v4_vllm of the config r->cfg (checked and counted first) for the rank, 0; else -1 with r->err
 * naming the key (compress_ratios and quantization_config are required: vLLM reads them), or O("tp") where vLLM cannot
 * split the model that many ways */
int vc__hf_deepseek_v4_vllm(rd *r, const vc_hf_v4_rank *rank, int64_t max_num_batched_tokens, int64_t max_model_len,
                            vc_hf_v4_vllm *out);
/* hf_clip.c (issue 31, towers): CLIPConfig's keys checked (text_config.* / vision_config.* named), CLIPModel's
 * parameters counted exactly into *params and projection_dim into *proj (0: counted; else err's code, naming the key);
 * vc_hf_build then reads the towers with the clip row and vc__hf_clip_vision (hf.c) */
int vc__hf_clip_count(rd *r, int64_t *params, int64_t *proj);
/* CLIPVisionConfig's row (hf.c): CLIPModel's vision tower, no model_type of its own */
extern const hf_family vc__hf_clip_vision;
/* hf_olmoe.c: output_router_logits, a bool whose true (the auxiliary load_balancing_loss_func) is refused naming it
 * (OlmoeForCausalLM's and Ernie4_5_MoeForCausalLM's); -1 with r->err. */
int vc__hf_no_router_logits(rd *r);

/* hf_ernie.c: Ernie4_5_MoeConfig's keys the ernie4_5_moe row does not read (moe_layer_end_index,
 * moe_num_shared_experts, moe_norm_min, use_bias, output_router_logits) checked against what Ernie4_5_MoeForCausalLM
 * builds; -1 with r->err naming the key. */
int vc__hf_ernie_moe_read(rd *r, arch *a);

/* hf_hunyuan.c: the keys of the HunYuan checkpoints' config.json the hunyuan_v1_dense / hunyuan_v1_moe rows do not
 * read (num_experts, moe_topk, moe_intermediate_size, num_shared_expert, use_mixed_mlp_moe, use_qk_norm, use_cla,
 * rope_scaling's alpha) checked against what HunYuanDenseV1ForCausalLM / HunYuanMoEV1ForCausalLM build; -1 with
 * r->err naming the key. */
int vc__hf_hunyuan_read(rd *r, arch *a);

/* hf_modernbert.c: whether layer i is a local (sliding-window) attention layer. */
bool vc__hf_modernbert_local(const arch *a, int64_t i);
/* hf_modernbert.c: ModernBertForSequenceClassification's layers appended to arr. */
void vc__hf_modernbert_write(rd *r, cJSON *arr, const arch *a);

/* hf_mpnet.c: MPNetConfig's relative_attention_num_buckets against compute_position_bias's fixed 32
 * buckets, and gradient checkpointing (MPNetPreTrainedModel does not support it), read after the row's
 * keys; -1 with r->err naming the key or option. */
int vc__hf_mpnet_read(rd *r, arch *a);
/* hf_mpnet.c: MPNetForSequenceClassification's layers appended to arr. */
void vc__hf_mpnet_write(rd *r, cJSON *arr, const arch *a);

/* hf_bart.c: BartConfig's keys the row's reading cannot check (the decoder's heads dividing d_model, the
 * layerdrops, scale_embedding, is_encoder_decoder, the decoder's sizes), read after the row's keys; -1 with
 * r->err naming the key. */
int vc__hf_bart_read(rd *r, arch *a);
/* hf_bart.c: BartForConditionalGeneration's layers appended to arr. */
void vc__hf_bart_write(rd *r, cJSON *arr, const arch *a);

/* hf_tp.c: a's share on one of s.tp tensor-parallel ranks (Megatron's
 * split, docs/parallel.md 2.6): the column-parallel widths divided, the
 * vocabulary padded and divided. Errors name --tp / --sp. */
int vc__hf_tp_split(arch *a, vc_hf_split s, vc_error *err);
/* With --sp: "sequence_gather" for a column-parallel Linear, "sequence_scatter"
 * for a row-parallel one (by the HF module name's last part), NULL otherwise. */
const char *vc__hf_sp_role(const char *name);

#endif
