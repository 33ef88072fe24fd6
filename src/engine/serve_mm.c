/*
 * serve_mm.c — --serve for a multimodal model (issue 31): vLLM's encoder profiling, the first part of its
 * profiling run (src/engine/serve.c vc_serve calls vc__serve_mm, then takes the larger of the two phases).
 *
 * vLLM's profile_run (vllm-project/vllm @ 000fc94b754f66aeb60ef5acf1ea2e94cdc65164,
 * vllm/v1/worker/gpu_model_runner.py GPUModelRunner.profile_run): for a model that supports multimodal
 * inputs, unless skip_mm_profiling or every modality's limit is 0, before the language model's
 * _dummy_run(max_num_tokens):
 *   dummy_modality = mm_budget.get_modality_with_max_tokens(); max_mm_items_per_batch =
 *   mm_budget.mm_max_items_per_batch[dummy_modality]; batched_dummy_mm_inputs = _get_mm_dummy_batch(modality,
 *   items) (one dummy item of the processor's, repeated items times); dummy_encoder_outputs =
 *   model.embed_multimodal(**batched_dummy_mm_inputs): ONE call over the whole batch; each output kept in
 *   self.encoder_cache["tmp_i"]; then _dummy_run and _dummy_sampler_run; encoder_cache.clear() only after
 *   them. batched_dummy_mm_inputs and dummy_encoder_outputs are profile_run's locals, never deleted before it
 *   returns: the dummy batch's pixel values (on the GPU, in the model's dtype: vllm/inputs/registry.py
 *   @ f06ae651 InputProcessingContext.call_hf_processor casts the processor's floating outputs to
 *   model_config.dtype) and the encoder's outputs are resident through the language model's dummy run.
 * The run is under torch.inference_mode (no autograd). So the profiling run has two phases:
 *   - the encoder phase: the weights, plus the tower's live tensors at its worst op (pixel values included);
 *   - the language model phase: the weights, the language model's run (serve.c) plus the pixel values and
 *     the encoder's outputs;
 * and its peak (memory_profiling's torch peak) is the larger.
 *
 * The dummy batch. MultiModalBudget (vllm/multimodal/encoder_budget.py @ 042a4d3e):
 *   - mm_max_toks_per_item from processor.info.get_mm_max_tokens_per_item(seq_len = max_model_len,
 *     mm_counts = the limits), the limits MultiModalConfig.get_limit_per_prompt's (vllm/config/multimodal.py
 *     @ 55e847c0: 999 for a modality limit_mm_per_prompt does not name);
 *   - compute_mm_encoder_budget (vllm/v1/core/encoder_cache_manager.py @ 003ad86e): the compute budget
 *     max(max_num_batched_encoder_embeds, default max_num_batched_tokens; the largest item's tokens), the
 *     cache size max(encoder_cache_size, default the same; the largest item's): get_encoder_budget the
 *     smaller, max(max_num_batched_tokens, tokens per item) under the defaults;
 *   - _get_max_items: per prompt max(1, min(limit, max_model_len // tokens)); per batch max(1,
 *     min(budget // tokens, max_num_seqs x per prompt)) (chunked prefill on: max_num_seqs not cut).
 * The Qwen towers (Qwen2VLProcessingInfo, vllm/model_executor/models/qwen2_vl.py @ 002d181a,
 * get_mm_max_tokens_per_item: {"image": get_max_image_tokens(), "video": get_max_video_tokens(seq_len,
 * mm_counts)}; Qwen2.5-VL's and Qwen3.5's processing infos derive from it or from Qwen3VLProcessingInfo,
 * qwen3_vl.py @ 4f5768c7):
 *   - an image: src/hf/hf_vision.c vc__hf_vision_max_image (the processor's max_pixels through smart_resize);
 *   - a video under the default limit of 999: Qwen2-VL's get_num_frames_with_most_features gives max(min(
 *     frames that fit max_model_len // 999, ...), 1) = 1 frame, padded to temporal_patch_size: grid_t 1, the
 *     same tokens as the largest image (the tie goes to "video" by name, the same patches); Qwen3-VL's
 *     video is 2 frames at the video processor's longest_edge / temporal_patch_size pixels (the published
 *     Qwen3-VL video processor's 25165824 / 2: fewer tokens than the image's 16777216);
 *   so each dummy item is counted at the largest image's tokens (for Qwen2.5-VL the tie goes to "video" by
 *   name, get_modality_with_max_tokens; the HF video processor's own resize of that dummy video is not
 *   read: vramcalc has the config only), patches = tokens x spatial_merge_size^2, each patch
 *   in_channels x temporal_patch_size x patch_size^2 pixel values;
 *   - embed_multimodal's output per item: [tokens, out_hidden_size] in the model's dtype (the merger's),
 *     Qwen3-VL's with its deepstack features cat'ed on dim 1 (Qwen3_VisionTransformer.forward: torch.cat(
 *     [hidden_states] + deepstack_feature_lists, dim=1)): out_hidden_size x (1 + len(deepstack_visual_indexes)).
 * Gemma 3 (vllm/model_executor/models/gemma3_mm.py @ e5fa94509b708330e28208a55c84aba8a7781675):
 *   Gemma3ProcessingInfo.get_num_image_tokens = (num_crops + 1) x processor.image_seq_length, num_crops 0
 *   with do_pan_and_scan off (get_num_crops; Gemma3ImageProcessor's default, the published
 *   preprocessor_config.json leaves it off), so get_mm_max_tokens_per_item {"image": image_seq_length},
 *   the config's mm_tokens_per_image (256); the dummy image (get_image_size_with_most_features: 50 x
 *   50 x pan_and_scan_max_num_crops) is resized by the processor to vision_config.image_size squared:
 *   pixel_values [1, num_channels, image_size, image_size] per item (flat_from_sizes(num_crops + 1));
 *   _process_image_input: vision_tower(pixel_values) over the whole batch, multi_modal_projector, split
 *   per image: the outputs [mm_tokens_per_image, text hidden_size] per item.
 * Llama 4 (vllm-project/vllm vllm/model_executor/models/mllama4.py, the newest stored text: embed_multimodal,
 *   MMEncoderAttention, Llama4VisionModel under support_torch_compile(enable_if=should_torch_compile_mm_vit), off
 *   by default; the same modules and processing info at 00dd5493 and 60d375cb):
 *   Mllama4ProcessingInfo defines no get_mm_max_tokens_per_item, so the budget (get_mm_max_toks_per_item) counts
 *   the dummy image's get_num_embeds: the <|patch|> tokens (_get_prompt_updates: PromptUpdateDetails.select_text(
 *   repl, img_patch_token)). The dummy image (get_image_size_with_most_features) is get_max_num_tiles() =
 *   the image processor's max_patches (16: transformers' Llama4ImageProcessorFast and the published
 *   preprocessor_config.json; vramcalc reads the config only) x image_size high and image_size wide, whose best
 *   fit (get_best_fit over find_supported_resolutions) is 16 x 1 tiles: patches_per_image 1 + 16 (a global tile),
 *   each tile get_patch_per_chunk = (image_size // patch_size)^2 // round(1 / pixel_shuffle_ratio^2) tokens:
 *   2448 a Scout / Maverick item. The budget counts more: encoder_budget.py @ 042a4d3e (the newest stored
 *   vllm-project/vllm text; it has #34533's (tokens, name) tie-break, which the other stored text, 83e07779, lacks)
 *   MultiModalBudget.__init__ calls get_mm_max_toks_per_item with mm_counts = {m: mm_limits.get(m, 1)}, the allowed
 *   limits (999 images under the defaults); with no get_mm_max_tokens_per_item it builds
 *   mm_registry.get_dummy_mm_inputs(mm_counts) (Mllama4DummyInputsBuilder.get_dummy_mm_data: mm_counts["image"]
 *   images) and returns, per modality, sum(item.get_num_embeds() for item in placeholders): 999 x 2448 = 2,445,552
 *   as the image's "max tokens per item". So the budget is 2,445,552 (compute_mm_encoder_budget's max), per prompt
 *   max(1, min(999, max_model_len // 2,445,552)) = 1 and items max(1, min(budget // 2,445,552, ...)) = 1: one dummy
 *   item (GPUModelRunner._get_mm_dummy_batch builds one item and repeats it), 17 tiles of 2448 tokens. (The older
 *   text, and forks of vLLM stored with the tie-break, pass mm_counts = 1 per modality: 2448 and 3 items on an
 *   H100's 8192 tokens.) The Qwen videos' frames already follow the limits (above). pixel_values [tiles,
 *   num_channels, image_size, image_size] (flat_from_sizes);
 *   _process_image_input: vision_model over all tiles, multi_modal_projector, split per image (views): the
 *   outputs [tokens, text hidden_size] per item.
 * PaliGemma, PaliGemma 2 (vllm/model_executor/models/paligemma.py as 1CatAI/1Cat-vLLM @
 *   92a785cb21e2b2acbd4be1dfd87e799c9c632a37 holds it, a fork's copy of upstream's V1 text; upstream's own stored text,
 *   vllm-project/vllm @ fd472a64727c1ccf0a487d630a141e91c82214e5, is V0's, the same tower, projector and scaling):
 *   PaliGemmaProcessingInfo.get_supported_mm_limits {"image": 1}, get_num_image_tokens the SigLIP encoder info's
 *   (image_size // patch_size)^2 (256 at 224 / 14); no get_mm_max_tokens_per_item, so the budget counts the dummy
 *   inputs' embeddings at mm_counts = the allowed limit, one image: 256 (_get_prompt_updates:
 *   PromptUpdateDetails.select_token_id(image_tokens + [bos], embed_token_id=image_token_id)); per prompt 1.
 *   PaliGemmaDummyInputsBuilder: images of vision_config.image_size squared; pixel_values MultiModalFieldConfig
 *   .batched("image"): [items, 3, image_size, image_size] in the model's dtype. _process_image_input:
 *   vision_tower(pixel_values.to(dtype)) (SiglipVisionModel, vision_use_head false in the published configs, as
 *   Gemma 3's), multi_modal_projector (nn.Linear(vision hidden, projection_dim) with bias); embed_multimodal:
 *   vision_embeddings * hidden_size**-0.5: the outputs [256, projection_dim = text hidden_size] an item.
 *   The language model is vLLM's GemmaForCausalLM or Gemma2ForCausalLM (text_config.model_type), served as the
 *   text rows are (serve.c: Gemma 2's sliding layers in their own KV cache group).
 * Gemma 4 (vllm-project/vllm @ 49e6e4739167b1c261e06909e08f0b50dd576be4 vllm/model_executor/models/gemma4_mm.py; the
 *   same processing info and dummy inputs at 01bae2190e1c298115941f50bd6ed508216f24e7; both read max_soft_tokens
 *   and the video num_frames hint, #41799 / #41837, neither given here):
 *   Gemma4ProcessingInfo.get_mm_max_tokens_per_item gives "image" default_output_length
 *   (280), "audio" the processor's audio_seq_length (Gemma4Processor's 750) and "video" _VIDEO_MAX_FRAMES 32 x
 *   (_VIDEO_MAX_SOFT_TOKENS 70 + 2 + 6) = 2496, so the dummy modality is the video at 2496 tokens an item;
 *   Gemma4DummyInputsBuilder's video is 32 frames of 224 x 224 (the image processor's size is None), each frame
 *   processed as an image with max_soft_tokens 70 (_call_hf_processor): pixel_values_videos [frames, 70 x
 *   pooling_kernel_size^2 patches (padded), patch_size^2 x 3] in the model's dtype; per video the output is
 *   [32 x _compute_num_soft_tokens(224, 224, 70), text hidden_size]. The tower is transformers' Gemma4VisionModel
 *   (AutoModel.from_config; transformers @ 0246b4f3335464614ef1de66531f9131a44ec801 modeling_gemma4.py). At 49e6e473
 *   _process_video_input ran it frame by frame; at 01bae219 (the newer text: #43169, "Batch vision encoder calls
 *   for image and video processing", merged 2026-05-20) it runs
 *   vt.patch_embedder and vt.encoder over chunks of all the batch's frames, _encoder_chunk(patches, free, total,
 *   position_embedding_size) = max(1, min(free // 2, total // 10) // (patches x 4 x position_embedding_size x 8))
 *   frames a chunk (free and total: current_platform.mem_get_info() as the encoder starts), keeps each chunk's
 *   last_hidden_state in a list, then torch.cat, the pooler frame by frame and one embed_vision call. The worst op
 *   is the patch embedder's one-hot cast (gemma4_tower below); the encoder layers (SDPA, transformers' default for
 *   from_config), the pooler and the projection hold less (measured below). pixel_position_ids_videos (two int64 a
 *   patch) and padding_positions (a bool a patch) are not counted.
 *
 * The encoder phase's live tensors, read op by op from vLLM's modules as eager PyTorch runs them (the
 * vision encoder is not compiled: CompilationConfig.compile_mm_encoder is False by default; a
 * function's argument stays alive until the call returns, a local until its name is rebound or the
 * function returns):
 *   - custom ops: vllm/config/vllm.py VllmConfig.__post_init__ appends "none" to custom_ops when the
 *     backend is inductor and the compilation mode is not NONE (the default), "all" otherwise
 *     (--enforce-eager): RMSNorm and SiluAndMul run forward_native under the default, their fused CUDA
 *     kernels under --enforce-eager (vllm/model_executor/layers/layernorm.py @ 00cba797 RMSNorm.forward_native:
 *     x.to(float32), + residual.to(float32), residual = x.to(orig_dtype), x.pow(2).mean, x * rsqrt, .to
 *     (orig_dtype), * weight; forward_cuda: rms_norm, fused_add_rms_norm in place);
 *   - qwen2_5_vl.py @ 002d181a55a03803d7d69547846630069d2378b8: Qwen2_5_VisionTransformer.forward (patch_embed
 *     a Linear over the pixel values; hidden_states[window_index] reordered (a copy); rotary_pos_emb
 *     [patches, head_dim / 2] float32 and window_index / reverse_indices int64 per merged token moved to the
 *     GPU; the blocks; the merger; hidden_states[reverse_indices] (a copy)); Qwen2_5_VisionBlock.forward
 *     (x_attn = attn(norm1(x)); x_fused_norm, residual = norm2(x, residual=x_attn); x = residual +
 *     mlp(x_fused_norm); the block's input held by the caller); Qwen2_5_VisionAttention.forward (qkv fused;
 *     qk_concat = cat([q, k]) kept as a local; apply_rotary_pos_emb_vision; flash or SDPA; proj);
 *     Qwen2_5_VisionMLP.forward (gate_up kept as a local through down_proj); Qwen2_5_VisionPatchMerger
 *     (ln_q RMSNorm, Linear, GELU, Linear in an nn.Sequential);
 *   - vllm/model_executor/layers/rotary_embedding/common.py @ 002d181a apply_rotary_pos_emb_vision:
 *     t_ = t.float(), cos = freqs.cos(), sin = freqs.sin(), rotary_emb_function(t_, cos, sin).type_as(t), the
 *     CUDA function vllm_flash_attn's apply_rotary_emb (a new output, not in place): at its return qk_concat,
 *     its float32 copy, cos, sin, the float32 output and its cast are alive with x, norm1's output and qkv;
 *   - vllm/attention/ops/vit_attn_wrappers.py @ 03f9c143 flash_attn_maxseqlen_wrapper: flash_attn_varlen_func
 *     over the (b s) rows (its output, and softmax_lse float32 per head and row inside the kernel), the
 *     rearrange back a view; torch_sdpa_wrapper (TORCH_SDPA): SDPA per cu_seqlens window, the outputs
 *     list, torch.cat, a contiguous copy; the backend FLASH_ATTN on NVIDIA sm80+ (Qwen2_5_VisionTransformer
 *     .__init__: get_vit_attn_backend, or the upstream flash-attn when check_upstream_fa_availability), taken
 *     here as TORCH_SDPA below sm80;
 *   - qwen3_vl.py @ 002d7b939754b844a3832dd7fbf9e5fd0c0e9f1b Qwen3_VisionTransformer.forward (patch_embed;
 *     fast_pos_embed_interpolate: the four corners' embeddings [4, patches, hidden] and their weighted copy,
 *     the index and weight grids, their sum, the merge-order copy and torch.cat of it, all locals until it
 *     returns; hidden_states + pos_embeds, pos_embeds kept; the blocks; each deepstack merger's output kept
 *     until the final torch.cat); Qwen3_VisionBlock.forward (x = x + attn(norm1(x)); x = x + mlp(norm2(x)),
 *     nn.LayerNorm norms, the block's input held by the caller); Qwen3_VisionMLP (linear_fc2(act_fn(
 *     linear_fc1(x)))); Qwen3_VisionPatchMerger (LayerNorm, linear_fc1, GELU, linear_fc2). Qwen3.5 / 3.6
 *     (qwen3_5.py) build the same Qwen3_VisionTransformer with no deepstack index;
 *   - siglip.py @ 0c028ba489f560102a87a3e98b92caac5a6da8f1 (Gemma 3's tower): SiglipVisionEmbeddings (Conv2dLayer,
 *     flatten/transpose, += position embedding), SiglipEncoderLayer.forward (residual = x; layer_norm1;
 *     self_attn: qkv_proj, chunk, MMEncoderAttention, out_proj; += residual in place; layer_norm2; SiglipMLP:
 *     fc1, activation_fn, fc2; += residual), post_layernorm; gemma3_mm.py Gemma3MultiModalProjector
 *     (transpose/reshape copy, AvgPool2d, GemmaRMSNorm, matmul with mm_input_projection_weight);
 *   - mllama4.py (above): Llama4VisionModel.forward (Llama4UnfoldConvolution: nn.Unfold, a copy of the pixel
 *     values, then the linear; torch.cat with class_embedding; + positional_embedding_vlm; layernorm_pre, whose
 *     output stays alive as the encoder's argument through every layer; the layers; layernorm_post; [:, :-1, :]
 *     a view; Llama4VisionPixelShuffleMLP: pixel_shuffle's two permute(...).contiguous() copies, the shuffled
 *     tensor held through Llama4VisionMLP fc1, GELU, fc2, GELU), Llama4VisionEncoderLayer.forward (residual = x;
 *     input_layernorm; self_attn; residual + ...; post_attention_layernorm; mlp; residual + ...),
 *     Llama4VisionAttention.forward (qkv_proj, split views, rotary_emb, MMEncoderAttention (flash: its output and
 *     softmax_lse; v a view of qkv), reshape(...).contiguous() a view, o_proj), Llama4MultiModalProjector.linear_1;
 *     vllm/model_executor/layers/rotary_embedding/llama4_vision_rope.py @ 10760a01 Llama4VisionRotaryEmbedding
 *     .forward_native (forward_cuda calls it): query.float(), key.float() (copies unless float32), the complex64
 *     products with the cos_sin_cache buffer, .type_as (new unless float32).
 * Measured (Gemma 4): the replica's gemma4() (gemma4_mm.py @ 01bae219 and transformers' modules statement by
 * statement, SDPA as its output and logsumexp) on gemma4_vl_small.json peaks at the one-hot's cast, at gemma4_tower's
 * bytes plus the position ids and padding mask (tests/test_serve_mm.c gemma4).
 * Measured: bench/accuracy/llm/vllm_vision_replica.py (the Qwen2.5-VL, Qwen3-VL and Qwen3.5 towers, and Gemma 3's
 * SigLIP and projector, in torch 1.13 on the CPU, the harness's allocator counter) equals qwen_tower's bytes plus
 * the per-image index tensors (cu_seqlens; fast_pos_embed_interpolate's per-side vectors), and siglip_tower's
 * exactly, in bf16 and fp32 (tests/test_serve_mm.c measured); the replica's llama4() (mllama4.py) equals
 * llama4_tower's bytes plus the harness allocator's 512-byte rounding of each live tensor (tests/test_serve_mm.c
 * llama4).
 * --tp (tensor_parallel_size k) for Gemma 3, PaliGemma and Llama 4: each rank runs the tower over the whole dummy batch with its
 * shards of the weights as vLLM splits them under the default mm_encoder_tp_mode "weights" (src/hf/hf_vision.c
 * vision_tp and the siglip.py @ 0c028ba4 classes it cites; src/hf/hf_llama4.c and mllama4.py @ 00dd5493): the
 * column-parallel outputs and the attention over NH / k heads are [.., / k] on a rank; a RowParallelLinear's output
 * is whole and its all-reduce out-of-place (vllm/distributed/parallel_state.py GroupCoordinator.all_reduce: "we
 * always make the all-reduce operation out-of-place"; vllm/distributed/device_communicators/pynccl.py @ 9a4b60a4
 * PyNcclCommunicator.all_reduce: out_tensor = torch.empty_like(in_tensor); the custom all-reduce's out =
 * torch.empty_like(inp)): both alive as it returns; a ColumnParallelLinear(gather_output=True) (Llama 4's
 * patch_embedding.linear and multi_modal_projector.linear_1) all-gathers its [.., / k] output:
 * base_device_communicator.py @ a12c7345 DeviceCommunicatorBase.all_gather allocates [k x rows, .., / k]
 * (torch.empty), all_gather_into_tensor, reshape, movedim(0, dim) and a reshape that copies (the moved dim is not
 * contiguous): the input, the buffer and the copy alive at the copy. The pixel values and the outputs are whole on
 * every rank. Gemma 4's tower is transformers' and whole on every rank (below). Not modelled: --tp for the Qwen towers
 * (Qwen's qkv all-gathered: all_gather_interleave),
 * an AMD card (the ROCm rotary and attention kernels), float16's
 * cast_overflow_tensors after Qwen2.5-VL's blocks, kernels' own workspaces (cuBLAS, the Conv2d's, LayerNorm's
 * per-row mean and rstd), the per-image cu_seqlens / cu_window_seqlens int32 tensors (a few KiB): mm_encoder_peak is -1 there and the profiling run's peak is the language model
 * phase's. Llama 4 with a pixel_shuffle_ratio whose inverse is not an integer dividing the patches per side, or
 * hidden_size x (1 / ratio)^2 != intermediate_size, or vision_output_dim != projector_output_dim (vLLM's forward
 * fails there), a Gemma 4 config without vision_config.pooling_kernel_size, and the other multimodal families:
 * their dummy batch is not derived (mm_encoder -1).
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf.h"
#include "layer.h"
#include "plan.h"
#include "util.h"

/* The tower as the config gives it (the classes' defaults as src/hf/hf_vision.c reads them; the loader has
 * checked every key). Sizes per patch unless said: u patches per output token. */
typedef struct {
    int64_t C, I, NH, pd, u, out, depth;
    int64_t deep, deep_live; /* deepstack features, and those alive during the last block */
    int64_t k;               /* vLLM's tensor-parallel ranks (--tp) sharing the tower (Gemma 3's, Llama 4's), 0 or 1: none */
    int64_t e;               /* the activations' bytes */
    bool flash, native;      /* FLASH_ATTN (else TORCH_SDPA); RMSNorm / SiluAndMul forward_native */
    bool pali;               /* PaliGemma's projector (siglip_tower) rather than Gemma 3's */
} tower;

static int64_t mx(int64_t a, int64_t b) { return a > b ? a : b; }

static int64_t num(const cJSON *o, const char *k, int64_t def)
{
    const cJSON *v = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : def;
}

/* Qwen2_5_VisionAttention.forward's worst op, bytes per patch, with the block's input x and norm1's output
 * (held by the caller until attn returns) alive. */
static int64_t qwen_attention(const tower *t)
{
    const int64_t C = t->C, e = t->e, D = C / t->NH;
    const int64_t base = 2 * C * e + 3 * C * e + 2 * C * e; /* x, norm1(x), qkv, qk_concat */
    /* apply_rotary_pos_emb_vision at .type_as(t): t_ = t.float() (t itself in float32), cos and sin
     * [patches, D / 2] float32, the float32 output, its cast (itself in float32) */
    const int64_t rot = base + (e == 4 ? 0 : 2 * C * 4) + 2 * (D / 2) * 4 + 2 * C * 4 + (e == 4 ? 0 : 2 * C * e);
    const int64_t after = base + 2 * C * e; /* qk_rotated (q, k its halves; v a view of qkv) */
    /* flash: the output and softmax_lse inside the kernel, then proj; SDPA: the outputs list, the cat,
     * then proj (the rearrange of a [1, s, h, d] tensor is a view, contiguous) */
    const int64_t att = t->flash ? mx(after + C * e + 4 * t->NH, after + 2 * C * e) : after + 3 * C * e;
    return mx(rot, att);
}

/* Qwen2_5_VisionBlock.forward's worst op, bytes per patch (the block's input held by the caller) */
static int64_t qwen25_block(const tower *t)
{
    const int64_t C = t->C, I = t->I, e = t->e, f = e == 4 ? 0 : 4 * C; /* x.to(float32): a copy unless float32 */
    /* norm1: RMSNorm forward_native (x, its float32 copy, pow then x * rsqrt) or the fused kernel's output */
    int64_t p = t->native ? C * e + f + 4 * C : 2 * C * e;
    p = mx(p, qwen_attention(t));
    /* norm2(x, residual=x_attn): forward_native: x.float() + residual.float() (the copies and their sum),
     * then the sum, residual cast back, pow or the product; forward_cuda: fused_add_rms_norm in place */
    if (t->native) {
        p = mx(p, 2 * C * e + f + f + 4 * C);
        p = mx(p, 2 * C * e + 4 * C + (e == 4 ? 0 : C * e) + 4 * C);
    }
    const int64_t live = (t->native ? 4 : 2) * C * e; /* x, x_attn (native: + residual, x_fused_norm) */
    const int64_t gu = live + 2 * I * e;                /* gate_up, a local through down_proj */
    p = mx(p, gu + (t->native ? 2 : 1) * I * e);        /* SiluAndMul: silu(x[..., :d]) and the product; or out */
    p = mx(p, gu + I * e + C * e);                      /* down_proj */
    return mx(p, live + 2 * C * e);                     /* residual + mlp(...) */
}

/* Qwen3_VisionBlock.forward's worst op, bytes per patch: LayerNorm norms, a two-layer MLP */
static int64_t qwen3_block(const tower *t)
{
    const int64_t C = t->C, I = t->I, e = t->e;
    int64_t p = mx(2 * C * e, qwen_attention(t));
    p = mx(p, 3 * C * e);                 /* x + attn: x, attn's output, the sum */
    p = mx(p, 3 * C * e + 2 * I * e);     /* x (caller's), x, norm2(x), linear_fc1, act_fn */
    p = mx(p, 3 * C * e + I * e + C * e); /* ..., act_fn's output, linear_fc2 */
    return mx(p, 4 * C * e);              /* x + mlp(...) */
}

/* A Qwen tower over `tokens` merged tokens: the encoder phase's peak above the weights (bytes), -1 past
 * 2^63 */
static int64_t qwen_tower(const tower *t, bool qwen3, int64_t tokens)
{
    const int64_t C = t->C, e = t->e, u = t->u, D = C / t->NH, pix = t->pd * e, rope = (D / 2) * 4;
    int64_t tok = 0; /* the worst phase's bytes per merged token */
    if (!qwen3) {
        const int64_t idx = 16; /* window_index and reverse_indices, int64 per merged token */
        tok = mx(tok, u * (pix + 2 * C * e + rope) + idx);            /* patch_embed, hidden_states[window_index] */
        tok = mx(tok, u * (pix + rope + qwen25_block(t)) + idx);      /* the blocks */
        const int64_t ln = t->native ? C * e + (e == 4 ? 0 : 4 * C) + 4 * C : 2 * C * e;
        tok = mx(tok, u * (pix + rope + mx(ln, 4 * C * e)) + idx);    /* merger: ln_q, mlp.0, GELU (hidden_states held) */
        tok = mx(tok, u * (pix + rope + 3 * C * e) + t->out * e + idx);       /* mlp.2 */
        tok = mx(tok, u * (pix + rope) + 2 * t->out * e + idx);       /* hidden_states[reverse_indices] */
    } else {
        /* fast_pos_embed_interpolate at torch.cat(outputs): hidden_states, embeds [4, n, C], weighted_embeds,
         * combined, the merge-order copy and the cat; h_floor/h_ceil_grid_idx (int64), w00..w11 (float32),
         * idx00..idx11 and indices (int64), weights in the dtype */
        tok = mx(tok, u * (pix + 12 * C * e + 8 + 8 + 16 + 32 + 32 + 4 * e));
        const int64_t base = pix + C * e + rope; /* the pixel values, pos_embeds, rotary_pos_emb */
        tok = mx(tok, u * (pix + 3 * C * e));                         /* hidden_states + pos_embeds */
        tok = mx(tok, u * (base + qwen3_block(t)) + t->deep_live * t->out * e); /* the last block */
        tok = mx(tok, u * (base + 4 * C * e) + t->deep * t->out * e); /* a merger: norm, linear_fc1, GELU */
        tok = mx(tok, u * base + (1 + t->deep) * t->out * e + (1 + t->deep) * t->out * e); /* the cat */
    }
    int64_t b;
    return __builtin_mul_overflow(tok, tokens, &b) ? -1 : b;
}

/* The SigLIP encoder layers' worst op, bytes per patch above what their caller holds (the pixel values):
 * SiglipEncoderLayer (siglip.py @ 0c028ba4; vLLM's Idefics2EncoderLayer runs the same statements). A rank's share under
 * vLLM's split (k ranks, the header's "--tp"): qkv [3 C / k], the attention's output [C / k] and its lse over NH / k
 * heads, fc1 and its activation [I / k]; out_proj and fc2 give the whole [C] (RowParallelLinear) and its all-reduce a
 * new [C] beside it (ar). From the second layer on the embeddings' output is held too: SiglipVisionTransformer
 * .forward's hidden_states and SiglipEncoder.forward's hidden_states_pool = [inputs_embeds] (Idefics2's forward and
 * its encoder's inputs_embeds argument) hold it while the layers run (the first layer's input is that tensor). */
static int64_t siglip_layers(const tower *t)
{
    const int64_t C = t->C, I = t->I, e = t->e, k = t->k > 1 ? t->k : 1, ar = k > 1 ? C * e : 0;
    const int64_t held = t->depth > 1 ? C * e : 0;
    int64_t p = held + 2 * C * e + 4 * (C / k) * e + 4 * (t->NH / k); /* attention: x, layer_norm1, qkv, its output, lse */
    p = mx(p, held + 2 * C * e + 4 * (C / k) * e + C * e + ar);        /* out_proj */
    return mx(p, held + 3 * C * e + mx(2 * (I / k) * e, (I / k) * e + C * e + ar)); /* x (caller's), h, layer_norm2, fc1 + act or act + fc2 */
}

/* SiglipVisionModel and Gemma3MultiModalProjector over `items` images of `S` patches each (u patches per
 * output token, Ht the text hidden size): the encoder phase's peak above the weights, -1 past 2^63 */
static int64_t siglip_tower(const tower *t, int64_t items, int64_t S, int64_t Ht)
{
    const int64_t C = t->C, e = t->e, u = t->u, pix = t->pd * e;
    int64_t per_tok = u * (pix + siglip_layers(t));
    if (t->pali) {
        /* PaliGemma (paligemma.py, the header's; u = 1): _process_image_input's image_features (the tower's output) and
         * multi_modal_projector's nn.Linear output [.., Ht]; then, image_features freed as _process_image_input
         * returns, embed_multimodal's vision_embeddings * hidden_size**-0.5, a new [.., Ht] */
        per_tok = mx(per_tok, pix + C * e + Ht * e);
        per_tok = mx(per_tok, pix + 2 * Ht * e);
    } else {
        /* the projector per output token: the features and their reshaped copy (u patches), the pooled row,
         * GemmaRMSNorm's float32 temporaries, its output and the matmul's */
        per_tok = mx(per_tok, u * (pix + 2 * C * e) + C * e + 8 * C);
        per_tok = mx(per_tok, u * (pix + 2 * C * e) + 2 * C * e + Ht * e);
    }
    /* the embeddings: patch_embedding, a Conv2dLayer (vllm/model_executor/layers/conv.py @ 045d7575): under
     * forward_native (custom ops off) _forward_mulmat, x.unfold.unfold.permute(...).reshape(-1, input_size), a
     * copy of the pixel values, then F.linear; forward_cuda F.conv2d (its workspace not modelled); then
     * flatten / transpose views and += the position embedding's [1, S, C] lookup */
    per_tok = mx(per_tok, u * ((t->native ? 2 : 1) * pix + C * e));
    int64_t b, rows, emb;
    if (__builtin_mul_overflow(items, S / u, &rows) || __builtin_mul_overflow(per_tok, rows, &b) ||
        __builtin_mul_overflow(rows, u * (pix + C * e), &emb) || __builtin_add_overflow(emb, S * C * e, &emb))
        return -1;
    return mx(b, emb);
}

/* SmolVLM / Idefics3's encoder phase over F frames of L x L pixels (cin channels; S = (L / P)^2 patches, P the patch
 * size), -1 past 2^63: vLLM's Idefics3ForConditionalGeneration._process_image_input (idefics3.py as 1CatAI/1Cat-vLLM @
 * 92a785cb holds it) and Idefics2VisionTransformer (idefics2_vision_model.py as AutoCONFIG/vllm @
 * 1b1063fa2e50b4d00808a980fd7be897e8e3eb6d holds it, with Conv2dLayer and MMEncoderAttention; upstream
 * vllm-project/vllm @ 68137261 has the same statements with nn.Conv2d), per frame, X its pixel values (X = cin L^2 e),
 * Mk its pixel_attention_mask (L^2 bool), both held by profile_run throughout:
 *   - Idefics3Model.image_pixels_to_features: (pixel_values == 0.0) a bool per pixel value (its .sum(dim=(-1, -2, -3))
 *     an int64 per frame, not counted), pixel_values[real_images_inds].contiguous() a copy (X), the mask's copy (Mk),
 *     patches_subgrid (unfold views).sum(dim=(-1, -2)) int64 per patch and its > 0, the patch_attention_mask (a bool
 *     per patch): these and the copies held until it returns;
 *   - Idefics2VisionEmbeddings.forward: patch_embedding (Conv2dLayer: _forward_mulmat's unfold copy under
 *     forward_native, then F.linear; F.conv2d under forward_cuda), position_ids built on the CPU and moved to the GPU
 *     (an int64 per patch), the position_embedding lookup [F, S, C] and += in place;
 *   - the encoder (siglip_layers: the embeddings' output held by the transformer's hidden_states and the encoder's
 *     inputs_embeds), post_layernorm with the embeddings' and the encoder's outputs;
 *   - Idefics3Connector (the tower's output held by _process_image_input's image_features): pixel_shuffle's two
 *     reshape copies (permute before each), modality_projection.proj [S / s^2, Ht]; the outputs split per image and
 *     flattened (views). */
static int64_t idefics3_tower(const tower *t, int64_t F, int64_t S, int64_t L, int64_t cin, int64_t s, int64_t Ht)
{
    const int64_t C = t->C, e = t->e, X = cin * L * L * e, Mk = L * L, SC = S * C * e;
    const int64_t H = 2 * X + 2 * Mk + S; /* the originals, the copies, the patch_attention_mask */
    int64_t frame = X + Mk + cin * L * L;                            /* pixel_values == 0.0 */
    frame = mx(frame, 2 * X + 2 * Mk + 9 * S);                       /* the patch sums and their > 0 */
    frame = mx(frame, H + (t->native ? S * t->pd * e : 0) + SC);     /* the patch embedding */
    frame = mx(frame, H + 2 * SC + 8 * S);                           /* += position_embedding(position_ids) */
    frame = mx(frame, H + S * siglip_layers(t));                     /* the layers */
    frame = mx(frame, H + 3 * SC);                                   /* post_layernorm */
    frame = mx(frame, X + Mk + 3 * SC);                              /* pixel_shuffle's second copy */
    frame = mx(frame, X + Mk + 2 * SC + S / (s * s) * Ht * e);       /* modality_projection */
    int64_t b;
    return __builtin_mul_overflow(frame, F, &b) ? -1 : b;
}

/* Llama4VisionModel and Llama4MultiModalProjector over `tiles` tiles (mllama4.py, the header's source), the
 * encoder phase's peak above the weights, -1 past 2^63. Per tile: S patches, s = S + 1 rows (the class token),
 * Tt tokens after pixel_shuffle, pin / pout the adapter MLP's widths, Ht the text hidden size; the pixel values
 * (t->pd bytes-per-element units per patch) held by _process_image_input throughout. */
static int64_t llama4_tower(const tower *t, int64_t tiles, int64_t S, int64_t Tt, int64_t pin, int64_t pout, int64_t Ht)
{
    const int64_t C = t->C, I = t->I, e = t->e, s = S + 1, X = S * t->pd * e, sC = s * C * e, k = t->k > 1 ? t->k : 1;
    /* a rank's share under vLLM's split (k ranks): q, k, v [C / k] each and the heads NH / k, the MLPs' fc1 [I / k]
     * and the adapter's [pin / k]; a RowParallelLinear's whole output and its all-reduce's new one beside it (ar);
     * a ColumnParallelLinear(gather_output=True) its [.. / k] output, the all-gather's [k, .., / k] buffer and the
     * reshape's copy after movedim (the header) */
    const int64_t sCk = s * (C / k) * e, ar = k > 1 ? sC : 0;
    /* Llama4VisionEncoderLayer.forward, its input x held by the caller: input_layernorm; self_attn: qkv_proj;
     * Llama4VisionRotaryEmbedding.forward_native (query.float() and key.float(): copies unless float32; the
     * complex64 products; type_as: new unless float32) with x, the norm and qkv alive; MMEncoderAttention (flash:
     * its output and softmax_lse float32 per head and row; q, k the rotary outputs, v a view of qkv); o_proj with
     * them all; residual + attn; post_attention_layernorm; Llama4VisionMLP fc1, GELU, fc2; residual + mlp */
    const int64_t f32 = e == 4 ? 0 : 2 * s * (C / k) * 4, cast = e == 4 ? 0 : 2 * sCk;
    int64_t layer = mx(2 * sC, 2 * sC + 3 * sCk + f32 + 2 * s * (C / k) * 4 + cast);
    layer = mx(layer, 2 * sC + 6 * sCk + (t->NH / k) * s * 4);
    layer = mx(layer, 2 * sC + 6 * sCk + sC + ar);
    layer = mx(layer, 3 * sC + 2 * s * (I / k) * e);
    layer = mx(layer, 3 * sC + s * (I / k) * e + sC + ar);
    /* Llama4VisionModel.forward: the encoder's input (layernorm_pre's output) is held by forward's name while
     * the layers from the second on run */
    int64_t p = X + (t->depth > 1 ? sC : 0) + layer;
    p = mx(p, 2 * X + (k > 1 ? S * (C / k) * e + 2 * S * C * e : S * C * e)); /* Llama4UnfoldConvolution: the unfold copy, the linear */
    p = mx(p, X + S * C * e + sC);             /* torch.cat with the class embedding */
    p = mx(p, X + 2 * sC);                     /* + positional_embedding_vlm, layernorm_pre, layernorm_post */
    p = mx(p, X + sC + 2 * S * C * e);         /* pixel_shuffle: two permute(...).contiguous() copies */
    p = mx(p, X + sC + S * C * e + 2 * Tt * (pin / k) * e);  /* the adapter's fc1 and GELU */
    p = mx(p, X + sC + S * C * e + Tt * (pin / k) * e + Tt * pout * e + (k > 1 ? Tt * pout * e : 0)); /* fc2 */
    p = mx(p, X + sC + S * C * e + 2 * Tt * pout * e);       /* the output GELU */
    p = mx(p, X + Tt * pout * e + (k > 1 ? Tt * (Ht / k) * e + 2 * Tt * Ht * e : Tt * Ht * e)); /* multi_modal_projector.linear_1 */
    int64_t b;
    return __builtin_mul_overflow(p, tiles, &b) ? -1 : b;
}

/* Gemma 4's encoder phase above the weights (gemma4_mm.py @ 01bae219 Gemma4ForConditionalGeneration._process_video_input
 * and _encoder_chunk; transformers @ 0246b4f3 modeling_gemma4.py Gemma4VisionPatchEmbedder), -1 past 2^63: F frames of
 * N patches (pd pixel values each), C the tower's width, P position_embedding_size, b frames a chunk. The pixel values
 * of every frame are held throughout; each chunk's encoder output is kept in last_hidden_states_list until the
 * torch.cat after the loop. In a chunk of c frames the patch embedder's worst op is the one-hot's cast:
 * Gemma4VisionPatchEmbedder.forward's pixel_values = 2 * (pixel_values - 0.5) (a new tensor; the argument is the
 * caller's slice), input_proj's output [c, N, C], then _position_embeddings: clamped_positions [c, N, 2] int64,
 * F.one_hot(..., num_classes=P) [c, N, 2, P] int64 and its permute(...).to(position_embedding_table) copy in the
 * table's dtype (the int64 one freed when the name is rebound); then the matmul's [c, 2, N, C]. */
static int64_t gemma4_tower(int64_t F, int64_t b, int64_t N, int64_t pd, int64_t C, int64_t P, int64_t e)
{
    const int64_t X = N * pd * e, H = N * C * e; /* a frame's pixel values, its hidden states */
    int64_t frame = mx(2 * X, X + H + 16 * N + 16 * N * P + 2 * N * P * e); /* 2 * (x - 0.5); the cast */
    frame = mx(frame, X + H + 16 * N + 2 * N * P * e + 2 * H);                 /* one_hot @ table */
    const int64_t q = F / b, rem = F % b;
    int64_t held, a, c, peak;
    if (__builtin_mul_overflow(F, X, &held) || __builtin_mul_overflow(frame, b, &a) ||
        __builtin_mul_overflow((q - 1) * b, H, &c) || __builtin_add_overflow(a, c, &peak))
        return -1;
    if (rem > 0) { /* the last, shorter chunk with every full chunk's output kept */
        if (__builtin_mul_overflow(frame, rem, &a) || __builtin_mul_overflow(q * b, H, &c) || __builtin_add_overflow(a, c, &a))
            return -1;
        peak = mx(peak, a);
    }
    /* torch.cat(last_hidden_states_list): the list and the cat, [F, N, C] each */
    if (__builtin_mul_overflow(2 * F, H, &a)) return -1;
    peak = mx(peak, a);
    return __builtin_add_overflow(held, peak, &peak) ? -1 : peak;
}

/* GPUModelRunner's dummy batch size (the header's MultiModalBudget): Tb the tokens the budget counts per item, limit the
 * modality's allowed limit per prompt (get_supported_mm_limits capped by limit_mm_per_prompt's default of 999); *budget
 * the encoder budget, max(max_num_batched_tokens, Tb) under the defaults. Returns the items: max(1, min(budget // Tb,
 * max_num_seqs x per prompt)), per prompt max(1, min(limit, max_model_len // Tb)). */
static int64_t dummy_items(const vc_serve_result *r, int64_t Tb, int64_t limit, int64_t max_model_len, int64_t *budget)
{
    *budget = r->max_num_batched_tokens > Tb ? r->max_num_batched_tokens : Tb;
    int64_t per_prompt = max_model_len / Tb < limit ? max_model_len / Tb : limit;
    if (per_prompt < 1) per_prompt = 1;
    int64_t items = *budget / Tb;
    if (r->max_num_seqs <= items / per_prompt) items = r->max_num_seqs * per_prompt;
    return items < 1 ? 1 : items;
}

vc_status vc__serve_mm(const vc_model *m, const vc_options *o, const vc_gpu_spec *gpu, vc_dtype act, vc_serve_result *r,
                       vc_error *err)
{
    if (!m->gen_json || !m->text) return VC_OK;
    cJSON *root = cJSON_ParseWithLength(m->text, m->text_len);
    if (!root) return VC_OK;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "vision_config");
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const char *type = cJSON_IsString(mt) ? mt->valuestring : "";
    /* qwen3_vl_moe: vLLM's Qwen3VLMoeForConditionalGeneration (vllm/model_executor/models/qwen3_vl_moe.py
     * @ 055e47c2) is Qwen3VLForConditionalGeneration with Qwen3MoeLLMForCausalLM as its language model: the
     * same Qwen3_VisionTransformer and deepstack, registered with Qwen3VLMultiModalProcessor,
     * Qwen3VLDummyInputsBuilder and Qwen3VLMoeProcessingInfo (Qwen3VLProcessingInfo reading Qwen3VLMoeConfig) */
    /* qwen2_vl: vLLM's Qwen2VLProcessingInfo (qwen2_vl.py @ 002d181a, vc__hf_vision_max_image) gives the dummy
     * batch as for Qwen2.5-VL (Qwen2_5_VLProcessingInfo is its subclass); the encoder phase of its
     * Qwen2VisionTransformer (LayerNorm, QuickGELU) is not derived (mm_encoder 2: its peak not counted) */
    const bool q2 = !strcmp(type, "qwen2_vl");
    const bool q25 = q2 || !strcmp(type, "qwen2_5_vl"), q3vl = !strcmp(type, "qwen3_vl") || !strcmp(type, "qwen3_vl_moe"),
               q35 = !strcmp(type, "qwen3_5") || !strcmp(type, "qwen3_5_moe"), g3 = !strcmp(type, "gemma3") && cJSON_IsObject(v),
               pali = !strcmp(type, "paligemma");
    /* Llama 4: Llama4Config.__post_init__ builds Llama4VisionConfig() when vision_config is missing or null */
    const bool l4 = !strcmp(type, "llama4");
    int64_t l4_tiles = 0, l4_tt = 0, l4_pin = 0, l4_pout = 0;
    if (l4) {
        const cJSON *vc = cJSON_IsObject(v) ? v : NULL;
        const cJSON *rk = vc ? cJSON_GetObjectItemCaseSensitive(vc, "pixel_shuffle_ratio") : NULL;
        const double ratio = cJSON_IsNumber(rk) ? rk->valuedouble : rk ? 0 : 0.5; /* Llama4VisionConfig's default */
        /* Llama4VisionConfig's defaults as src/hf/hf_llama4.c reads them */
        const int64_t img = num(vc, "image_size", 448), P = num(vc, "patch_size", 14), C = num(vc, "hidden_size", 768),
                      I = num(vc, "intermediate_size", 5632), NH = num(vc, "num_attention_heads", 16),
                      vout = num(vc, "vision_output_dim", 7680);
        l4_pin = num(vc, "projector_input_dim", 4096), l4_pout = num(vc, "projector_output_dim", 4096);
        /* pixel_shuffle's views and Llama4VisionPixelShuffleMLP's fc1 (input intermediate_size) need 1 / ratio an
         * integer k dividing the tile's patches per side, and hidden_size x k^2 = intermediate_size; the
         * projector's linear_1 reads vision_output_dim = projector_output_dim. Another config fails in vLLM's
         * forward: not derived. */
        const int64_t k = ratio > 0 && ratio <= 1 ? (int64_t)(1.0 / ratio + 0.5) : 0;
        const int64_t side = P > 0 ? img / P : 0;
        if (k < 1 || (double)k * ratio != 1.0 || side < 1 || img % P || side % k || C < 1 || NH < 1 || C % NH ||
            C * k * k != I || vout != l4_pout || l4_pin < 1 || l4_pout < 1 || side > 4096 || C > (1 << 24) ||
            I > (1 << 26) || l4_pin > (1 << 24) || l4_pout > (1 << 24) || num(vc__vllm_text_config(root), "hidden_size", 0) > (1 << 24)) {
            r->mm_encoder = -1;
            cJSON_Delete(root);
            return VC_OK;
        }
        /* Mllama4ProcessingInfo.get_patch_per_chunk: (image_size // patch_size)^2 // round(1 / ratio^2); the dummy
         * image get_image_size_with_most_features: max_patches x image_size high, image_size wide (16:1), whose
         * best fit is max_patches tiles in one column: patches_per_image 1 + 16 (a global tile) */
        l4_tt = side * side / (k * k);
        l4_tiles = 16 + 1; /* transformers Llama4ImageProcessorFast's max_patches = 16 (the published processor's) */
        r->mm_item_width = img;
        r->mm_item_height = 16 * img;
    }
    /* Gemma 4 (gemma4_mm.py, the header's commits): the dummy batch, then the tower (gemma4_tower) */
    if (!strcmp(type, "gemma4") && cJSON_IsObject(v)) {
        const cJSON *kk = cJSON_GetObjectItemCaseSensitive(v, "pooling_kernel_size");
        const int64_t p = num(v, "patch_size", 16), k = cJSON_IsNumber(kk) ? (int64_t)kk->valuedouble : 0,
                      cin = 3, Ht = num(vc__vllm_text_config(root), "hidden_size", 0);
        /* Gemma4VisionConfig's defaults as src/hf/hf_gemma4.c reads them */
        const int64_t C = num(v, "hidden_size", 768), pe = num(v, "position_embedding_size", 10240);
        cJSON_Delete(root);
        if (p < 1 || p > 4096 || k < 1 || k > 4096 || Ht < 1 || Ht > (1 << 24) || C < 1 || C > (1 << 24) || pe < 1 ||
            pe > (1 << 24)) { /* pooling_kernel_size unread: not derived */
            r->mm_encoder = -1;
            return VC_OK;
        }
        /* Gemma4ProcessingInfo._compute_num_soft_tokens(224, 224, max_soft_tokens=_VIDEO_MAX_SOFT_TOKENS 70) */
        const int64_t unit = p * k, maxp = 70 * k * k;
        const double orig = (224.0 / (double)p) * (224.0 / (double)p), scale = sqrt((double)maxp / orig);
        int64_t th = (int64_t)floor(224.0 * scale / (double)unit) * unit;
        if (th < unit) th = unit;
        int64_t soft = (th / p) * (th / p) / (k * k);
        if (soft > 70) soft = 70;
        const int64_t T = 32 * (70 + 2 + 6); /* get_mm_max_tokens_per_item's "video": 32 frames x (70 + boi, eoi, 6) */
        int64_t max_model_len;
        if (__builtin_add_overflow(o->prompt, o->new_tokens, &max_model_len))
            return vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "prompt + new tokens pass 2^63");
        int64_t budget;
        const int64_t items = dummy_items(r, T, 999, max_model_len, &budget);
        const int64_t e = vc_dtype_size(act);
        int64_t out, in;
        if (__builtin_mul_overflow(items, 32 * soft * Ht * e, &out) ||
            __builtin_mul_overflow(items, 32 * maxp * cin * p * p * e, &in))
            return vc_set_error(err, VC_ERR_OVERFLOW, O("max_num_batched_tokens"), "the encoder profiling's outputs pass 2^63 bytes");
        r->mm_encoder = 1;
        r->mm_items = items;
        r->mm_item_tokens = T;
        r->mm_item_width = r->mm_item_height = 224;
        r->mm_budget = budget;
        r->mm_outputs = out;
        r->mm_inputs = in;
        r->mm_encoder_peak = -1;
        const bool cuda = !(gpu->preset && strcmp(gpu->preset->vendor, "NVIDIA") != 0);
        /* not modelled (above); nor a frame past 2^20 patches or 1024-pixel patches (no published config). Under --tp
         * every rank holds and runs the whole tower (gemma4_mm.py @ 01bae219 Gemma4ForConditionalGeneration.__init__:
         * vision_tower = AutoModel.from_config(config.vision_config), transformers' modules, no tensor-parallel
         * layer; src/hf/hf_gemma4.c loads it whole on each rank): the same run, _encoder_chunk's free memory after a
         * rank's weights */
        if (!cuda || maxp > (1 << 20) || p > 1024) return VC_OK;
        /* _encoder_chunk(pixel_values.shape[1], free, total, position_embedding_size): max(1, min(free // 2,
         * total // 10) // (N x 4 x P x 8)) frames a chunk, at most all of them; free and total from
         * current_platform.mem_get_info() when the encoder runs: total less the weights, the dummy pixel values
         * and the CUDA context as serve.c's snapshot counts it */
        vc_options c = *o;
        c.mode = VC_MODE_INFER;
        c.context = -1;
        c.device = gpu->preset;
        vc_context_parts parts;
        int64_t ctx_total;
        vc_status st = vc_context_estimate(&c, VC_USES_FLASH, &parts, &ctx_total, err);
        if (st) return st;
        const int64_t N = maxp, F = items * 32;
        int64_t freeb = gpu->total - r->weights - in - (parts.runtime + parts.local_memory + parts.eager);
        if (freeb < 0) freeb = 0;
        const int64_t cap = freeb / 2 < gpu->total / 10 ? freeb / 2 : gpu->total / 10;
        int64_t chunk = cap / (N * 4 * pe * 8);
        if (chunk < 1) chunk = 1;
        if (chunk > F) chunk = F;
        r->mm_encoder_peak = gemma4_tower(F, chunk, N, cin * p * p, C, pe, e);
        if (r->mm_encoder_peak < 0)
            return vc_set_error(err, VC_ERR_OVERFLOW, O("max_num_batched_tokens"), "the encoder profiling's activations pass 2^63 bytes");
        return VC_OK;
    }
    /* SmolVLM / Idefics3 (vLLM's SmolVLMForConditionalGeneration, smolvlm.py: Idefics3ForConditionalGeneration with
     * SmolVLMProcessingInfo, an Idefics3ProcessingInfo whose processor and image tokens are SmolVLM's; the same dummy
     * inputs and multimodal processor). Read in vllm/model_executor/models/idefics3.py as 1CatAI/1Cat-vLLM @
     * 92a785cb21e2b2acbd4be1dfd87e799c9c632a37 holds it (a fork's copy of upstream's current V1 text: TensorSchema,
     * BaseDummyOptions; upstream vllm-project/vllm's own stored text, c0988dfd1f3e9e1b4c84990a538b8f311ea19ab5, is the
     * older V0 registry API with the same counts: _get_max_num_image_patch, get_max_idefics3_image_tokens; smolvlm.py
     * was not read at a commit):
     *   - Idefics3ProcessingInfo.get_supported_mm_limits {"image": None}: the limit is limit_mm_per_prompt's 999;
     *   - Idefics3DummyInputsBuilder.get_dummy_mm_data: images of the image processor's max_image_size["longest_edge"]
     *     squared; _get_image_feature_grid_size resizes one to size["longest_edge"] (_get_resize_output_image_size) and,
     *     past max_image_size, grid ceil(h / max) x ceil(w / max); get_num_patches grid_w x grid_h + 1 (the global
     *     image); get_num_image_tokens num_patches x processor.image_seq_len. The processor's size and max_image_size
     *     are taken as src/hf/hf_idefics3.c takes them (the published processors: max_image_size vision_config
     *     .image_size L, size 4 L): a 4 x 4 grid, 17 frames of L x L; image_seq_len = int((image_size // patch_size)^2
     *     / scale_factor^2) (Idefics3Model.__init__, the processor's the same): SmolVLM-256M 17 x 64 = 1088 tokens;
     *   - _get_prompt_updates: PromptUpdateDetails.select_text(image_repl, embed_text=image_token): the embeddings are
     *     the image tokens only (the <fake_token_around_image>, <row_i_col_j> and <global-img> tokens are text);
     *   - no get_mm_max_tokens_per_item: the budget counts the 999 dummy images' embeddings (as for Llama 4, the
     *     header): one dummy item;
     *   - _get_mm_fields_config: pixel_values and pixel_attention_mask flat_from_sizes over num_patches: [17, 3, L, L]
     *     in the model's dtype and [17, L, L] bool (not a floating output: not cast) an item on the GPU, num_patches
     *     (one int64 an item, not counted);
     *   - the outputs: _process_image_input's connector output [17 x image_seq_len, text hidden_size] an item.
     *   - the outputs: split per image and flattened (views of the connector's output).
     * The tower's run: idefics3_tower (NVIDIA cards; not under --tp, refused by the loader). A side of image_size //
     * patch_size patches that scale_factor does not divide fails in pixel_shuffle's views: not derived (mm_encoder -1). */
    if (!strcmp(type, "smolvlm") || !strcmp(type, "idefics3")) {
        const cJSON *vc = cJSON_IsObject(v) ? v : NULL;
        /* SmolVLMVisionConfig's / Idefics3VisionConfig's defaults and scale_factor as src/hf/hf_idefics3.c reads them */
        const int64_t L = num(vc, "image_size", 224), P = num(vc, "patch_size", 32), cin = num(vc, "num_channels", 3),
                      s = num(root, "scale_factor", 2), Ht = num(vc__vllm_text_config(root), "hidden_size", 0);
        tower t = {0};
        t.C = num(vc, "hidden_size", 1152), t.I = num(vc, "intermediate_size", 3072), t.NH = num(vc, "num_attention_heads", 16);
        t.depth = num(vc, "num_hidden_layers", 12), t.pd = cin * P * P, t.e = vc_dtype_size(act), t.native = !o->enforce_eager;
        cJSON_Delete(root);
        const int64_t side = P > 0 ? L / P : 0;
        if (side < 1 || s < 1 || side % s || Ht < 1 || cin < 1 || L > (1 << 16) || Ht > (1 << 24) || cin > 64) {
            r->mm_encoder = -1;
            return VC_OK;
        }
        const int64_t frames = 4 * 4 + 1, T = frames * (side * side / (s * s));
        int64_t max_model_len, budget;
        if (__builtin_add_overflow(o->prompt, o->new_tokens, &max_model_len))
            return vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "prompt + new tokens pass 2^63");
        const int64_t items = dummy_items(r, 999 * T, 999, max_model_len, &budget);
        const int64_t e = vc_dtype_size(act);
        int64_t out, in;
        if (__builtin_mul_overflow(items, T, &out) || __builtin_mul_overflow(out, Ht * e, &out) ||
            __builtin_mul_overflow(items, frames * L * L * (cin * e + 1), &in))
            return vc_set_error(err, VC_ERR_OVERFLOW, O("max_num_batched_tokens"), "the encoder profiling's outputs pass 2^63 bytes");
        r->mm_encoder = 1;
        r->mm_items = items;
        r->mm_item_tokens = T;
        r->mm_item_width = r->mm_item_height = L;
        r->mm_budget = budget;
        r->mm_outputs = out;
        r->mm_inputs = in;
        r->mm_encoder_peak = -1;
        /* the tower's run (idefics3_tower): the published towers' sizes; not an AMD card (the header) */
        const bool cuda = !(gpu->preset && strcmp(gpu->preset->vendor, "NVIDIA") != 0);
        if (!cuda || side * side > (1 << 24) || t.C > (1 << 16) || t.I > (1 << 18) || t.NH > t.C || Ht > (1 << 20))
            return VC_OK;
        int64_t F;
        if (__builtin_mul_overflow(items, frames, &F) || (r->mm_encoder_peak = idefics3_tower(&t, F, side * side, L, cin, s, Ht)) < 0)
            return vc_set_error(err, VC_ERR_OVERFLOW, O("max_num_batched_tokens"), "the encoder profiling's activations pass 2^63 bytes");
        return VC_OK;
    }
    /* Mistral 3 (vllm-project/vllm @ 02677fd9d49b6b4b3082967642a0d1ff45c36c0a vllm/model_executor/models/mistral3.py):
     * Mistral3ProcessingInfo.get_image_size_with_most_features is longest_edge squared (the processor's
     * image_processor.size["longest_edge"]: the published preprocessor_config.json's 1540, vision_config.image_size
     * here, vramcalc reading config.json only); Mistral3HFEncoderInfo.get_patch_grid_size: ncols = nrows =
     * (1540 - 1) // (patch_size x spatial_merge_size) + 1 = 55; get_num_image_tokens (PixtralHFEncoderInfo) ncols x
     * nrows = 3025 image tokens ([IMG_BREAK] / [IMG_END] take prompt positions, not embeddings: _get_prompt_updates'
     * select_token_id). Mistral3ProcessingInfo defines no get_mm_max_tokens_per_item, so the budget counts the 999
     * dummy images' embeddings, as for Llama 4 (the header): one dummy item. The PixtralImageProcessor resizes
     * it to the merged-patch grid (get_resize_output_image_size with patch_size x spatial_merge_size, the
     * PixtralProcessor's): pixel_values [num_channels, nrows x 28, ncols x 28] in the model's dtype
     * (_postprocess_hf_mm_data's unpadded crop); _process_image_input: vision_tower, multi_modal_projector:
     * [3025, text hidden_size] out. The tower's run (PixtralHFVisionModel, vllm pixtral.py) is not modelled:
     * mm_encoder 2. */
    if (!strcmp(type, "mistral3")) {
        const cJSON *vc = cJSON_IsObject(v) ? v : NULL;
        /* PixtralVisionConfig's defaults, or Mistral3Config's when vision_config is absent (src/hf/hf_pixtral.c) */
        const int64_t P = num(vc, "patch_size", vc ? 16 : 14), img = num(vc, "image_size", vc ? 1024 : 1540),
                      cin = num(vc, "num_channels", 3), M = num(root, "spatial_merge_size", 2),
                      Ht = num(vc__vllm_text_config(root), "hidden_size", 0);
        cJSON_Delete(root);
        if (P < 1 || M < 1 || img < 1 || cin < 1 || Ht < 1 || P > (1 << 20) || M > (1 << 20)) { /* the loader's bounds */
            r->mm_encoder = -1;
            return VC_OK;
        }
        const int64_t side = (img - 1) / (P * M) + 1;
        if (side > (1 << 20)) { /* no published config: not derived */
            r->mm_encoder = -1;
            return VC_OK;
        }
        const int64_t T = side * side;
        int64_t max_model_len;
        if (__builtin_add_overflow(o->prompt, o->new_tokens, &max_model_len))
            return vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "prompt + new tokens pass 2^63");
        int64_t budget;
        const int64_t items = dummy_items(r, 999 * T, 999, max_model_len, &budget);
        const int64_t e = vc_dtype_size(act);
        int64_t out, in, px;
        if (__builtin_mul_overflow(items, T, &out) || __builtin_mul_overflow(out, Ht * e, &out) ||
            __builtin_mul_overflow(side, P * M, &px) || __builtin_mul_overflow(px, px, &in) ||
            __builtin_mul_overflow(in, cin * e, &in) || __builtin_mul_overflow(in, items, &in))
            return vc_set_error(err, VC_ERR_OVERFLOW, O("max_num_batched_tokens"), "the encoder profiling's outputs pass 2^63 bytes");
        r->mm_encoder = 2;
        r->mm_items = items;
        r->mm_item_tokens = T;
        r->mm_item_width = r->mm_item_height = img;
        r->mm_budget = budget;
        r->mm_outputs = out;
        r->mm_inputs = in;
        r->mm_encoder_peak = -1;
        return VC_OK;
    }
    if (!q25 && !q3vl && !q35 && !g3 && !l4 && !pali) { /* another model with a vision tower: not derived */
        r->mm_encoder = cJSON_IsObject(v) ? -1 : 0;
        cJSON_Delete(root);
        return VC_OK;
    }
    tower t = {0};
    t.e = vc_dtype_size(act);
    /* vLLM's custom ops off unless --enforce-eager (VllmConfig.__post_init__); FLASH_ATTN from sm80 */
    t.native = !o->enforce_eager;
    t.flash = !(gpu->preset && gpu->preset->sm > 0 && gpu->preset->sm < 80);
    const bool cuda = !(gpu->preset && strcmp(gpu->preset->vendor, "NVIDIA") != 0);
    const cJSON *hk = cJSON_GetObjectItemCaseSensitive(vc__vllm_text_config(root), "hidden_size");
    const int64_t hidden = cJSON_IsNumber(hk) ? (int64_t)hk->valuedouble : 0;
    int64_t T, patch, side = 0;
    if (l4) {
        const cJSON *vc = cJSON_IsObject(v) ? v : NULL;
        patch = num(vc, "patch_size", 14);
        side = num(vc, "image_size", 448) / patch;
        t.C = num(vc, "hidden_size", 768), t.I = num(vc, "intermediate_size", 5632);
        t.NH = num(vc, "num_attention_heads", 16), t.depth = num(vc, "num_hidden_layers", 34);
        t.pd = num(vc, "num_channels", 3) * patch * patch;
        t.u = side * side / l4_tt; /* patches per output token: round(1 / ratio^2) */
        t.out = hidden;
        T = l4_tiles * l4_tt; /* the embeddings per item: get_num_embeds of select_text(repl, img_patch_token) */
    } else if (g3) {
        /* SiglipVisionConfig's defaults (src/hf/hf_vision.c read_siglip), Gemma3Config.mm_tokens_per_image */
        patch = num(v, "patch_size", 16);
        const int64_t img = num(v, "image_size", 224);
        t.C = num(v, "hidden_size", 768), t.I = num(v, "intermediate_size", 3072), t.NH = num(v, "num_attention_heads", 12);
        t.depth = num(v, "num_hidden_layers", 12);
        T = num(root, "mm_tokens_per_image", 256);
        side = patch > 0 ? img / patch : 0;
        t.pd = num(v, "num_channels", 3) * patch * patch;
        t.u = T > 0 ? side * side / T : 0;
        t.out = hidden;
        r->mm_item_width = r->mm_item_height = img; /* the processor's resize of the dummy image */
    } else if (pali) {
        /* PaliGemma: read_siglip's keys (src/hf/hf_vision.c; PaliGemmaConfig with vision_config None builds
         * SiglipVisionConfig(hidden_size 1152, intermediate_size 4096, patch_size 14, num_hidden_layers 27,
         * num_attention_heads 16), a dict gets SiglipVisionConfig's defaults); T the header's 256 at 224 / 14 */
        const bool pd = !cJSON_IsObject(v);
        patch = num(v, "patch_size", pd ? 14 : 16);
        const int64_t img = num(v, "image_size", 224);
        t.C = num(v, "hidden_size", pd ? 1152 : 768), t.I = num(v, "intermediate_size", pd ? 4096 : 3072);
        t.NH = num(v, "num_attention_heads", pd ? 16 : 12), t.depth = num(v, "num_hidden_layers", pd ? 27 : 12);
        side = patch > 0 ? img / patch : 0;
        T = side * side;
        t.pd = num(v, "num_channels", 3) * patch * patch;
        t.u = 1;
        t.out = hidden;
        t.pali = true;
        r->mm_item_width = r->mm_item_height = img;
    } else {
        /* the keys as src/hf/hf_vision.c read and checked them when the model loaded, with the classes' defaults */
        patch = num(v, "patch_size", q25 ? 14 : 16);
        const int64_t merge = num(v, "spatial_merge_size", 2);
        const cJSON *ds = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "deepstack_visual_indexes") : NULL;
        t.depth = num(v, "depth", q25 ? 32 : 27);
        t.deep = !q3vl ? 0 : cJSON_IsArray(ds) ? cJSON_GetArraySize(ds) : 3; /* Qwen3VLVisionConfig: [8, 16, 24] */
        /* the deepstack features alive during the last block: those of earlier blocks */
        if (q3vl && !cJSON_IsArray(ds)) t.deep_live = 3 - (t.depth - 1 <= 24) - (t.depth - 1 <= 16) - (t.depth - 1 <= 8);
        else if (q3vl)
            for (const cJSON *x = ds->child; x; x = x->next)
                t.deep_live += cJSON_IsNumber(x) && x->valuedouble < (double)(t.depth - 1);
        t.C = num(v, "hidden_size", q25 ? 3584 : 1152), t.I = num(v, "intermediate_size", q25 ? 3420 : 4304);
        if (q2) { /* Qwen2VLVisionConfig: embed_dim the width, hidden_size the merger's output */
            const cJSON *mr = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "mlp_ratio") : NULL;
            t.C = num(v, "embed_dim", 1280);
            t.I = (int64_t)((double)t.C * (cJSON_IsNumber(mr) ? mr->valuedouble : 4));
        }
        t.NH = num(v, "num_heads", 16);
        t.pd = num(v, "in_channels", 3) * num(v, "temporal_patch_size", 2) * patch * patch;
        t.u = merge * merge;
        t.out = hidden; /* out_hidden_size: the loader checked it is the language model's hidden_size */
        if (patch < 1 || merge < 1 || hidden < 1) {
            cJSON_Delete(root);
            return VC_OK; /* refused by the loader: not reached */
        }
        T = vc__hf_vision_max_image(q3vl || q35, patch, merge, &r->mm_item_width, &r->mm_item_height);
    }
    cJSON_Delete(root);
    if (patch < 1 || hidden < 1 || t.u < 1 || t.NH < 1 || t.C < 1) return VC_OK; /* refused by the loader: not reached */
    if (T < 1) return vc_set_error(err, VC_ERR_MODEL, "vision_config", "the largest image has no token");
    int64_t max_model_len; /* the requests' length */
    if (__builtin_add_overflow(o->prompt, o->new_tokens, &max_model_len))
        return vc_set_error(err, VC_ERR_USAGE, O("new_tokens"), "prompt + new tokens pass 2^63");
    /* the tokens per item the budget counts (Tb): T, or for Llama 4 (no get_mm_max_tokens_per_item) the sum over
     * the dummy inputs of get_mm_max_toks_per_item's mm_counts, the limit of 999 images (the header) */
    /* PaliGemma (the header): one image a prompt, get_mm_max_toks_per_item's mm_counts 1: T */
    const int64_t Tb = l4 ? 999 * T : T;
    int64_t budget;
    const int64_t items = dummy_items(r, Tb, pali ? 1 : 999, max_model_len, &budget);
    int64_t out, in;
    if (__builtin_mul_overflow(items, T, &out) || __builtin_mul_overflow(out, hidden, &out) ||
        __builtin_mul_overflow(out, 1 + t.deep, &out) || __builtin_mul_overflow(out, t.e, &out) ||
        __builtin_mul_overflow(items, T * t.u, &in) || __builtin_mul_overflow(in, t.pd * t.e, &in))
        return vc_set_error(err, VC_ERR_OVERFLOW, O("max_num_batched_tokens"), "the encoder profiling's outputs pass 2^63 bytes");
    r->mm_encoder = 1;
    r->mm_items = items;
    r->mm_item_tokens = T;
    r->mm_budget = budget;
    r->mm_outputs = out;
    r->mm_inputs = in;
    r->mm_encoder_peak = -1;
    if (q2) r->mm_encoder = 2;
    if ((o->tp > 1 && !g3 && !l4 && !pali) || !cuda || q2) return VC_OK; /* not modelled (above) */
    /* Gemma 3's, PaliGemma's and Llama 4's towers split as vLLM splits them (src/hf/hf_vision.c, src/hf/hf_llama4.c);
     * PaliGemma's projector an nn.Linear, whole on every rank (paligemma.py) */
    t.k = o->tp;
    int64_t tiles = 0;
    if (l4 && __builtin_mul_overflow(items, l4_tiles, &tiles)) tiles = INT64_MAX;
    const int64_t peak = l4   ? llama4_tower(&t, tiles, side * side, l4_tt, l4_pin, l4_pout, hidden)
                         : g3 || pali ? siglip_tower(&t, items, side * side, hidden)
                              : qwen_tower(&t, q3vl || q35, items * T);
    if (peak < 0)
        return vc_set_error(err, VC_ERR_OVERFLOW, O("max_num_batched_tokens"), "the encoder profiling's activations pass 2^63 bytes");
    r->mm_encoder_peak = peak;
    return VC_OK;
}
