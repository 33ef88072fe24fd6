/*
 * hf_tp.c — a Hugging Face model's share on one Megatron tensor-parallel
 * rank (--tp N, --sp; docs/parallel.md 2.6).
 *
 * The split is a table over the architecture's widths, not a change to the
 * layers: a rank's model is the same model with fewer heads, kv heads,
 * intermediate features and vocabulary rows, so its q/k/v and MLP-up
 * Linears are ColumnParallelLinear shards ([in, out/t]), its o_proj and
 * MLP-down are RowParallelLinear shards ([in/t, out], whose outputs are full
 * width after the all-reduce, and whose bias stays whole), and the embedding
 * and LM head are VocabParallelEmbedding / column-parallel shards of the
 * padded vocabulary. What the table does not name is replicated at full size
 * on every rank: norms, residual adds, dropouts, rotary tables, routers,
 * position embeddings, BERT's pooler and classifier.
 *
 * Sources, MEG = NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553:
 *  - transformer/attention.py Attention.__init__:
 *    num_attention_heads_per_partition = divide(num_attention_heads, world_size),
 *    num_query_groups_per_partition = divide(num_query_groups, world_size)
 *    (divide() asserts divisibility);
 *  - tensor_parallel/layers.py ColumnParallelLinear.__init__
 *    output_size_per_partition = divide(output_size, world_size),
 *    RowParallelLinear.__init__ input_size_per_partition = divide(input_size,
 *    world_size), its bias [output_size] on every rank;
 *  - transformer/mlp.py MLP.__init__: linear_fc1 column-parallel over
 *    ffn_hidden_size (x2 gated), linear_fc2 row-parallel; the experts'
 *    ffn split by expert_tensor_parallel_size (training/arguments.py: the
 *    TP size by default) with expert_model_parallel_size 1;
 *  - training/vocab_utils.py _calculate_padded_vocab_size_cached: the
 *    vocabulary padded to a multiple of make_vocab_size_divisible_by (128) x
 *    tp, VocabParallelEmbedding's num_embeddings_per_partition = padded / tp.
 *    At --tp 1 nothing is padded: the Hugging Face model as it is.
 *
 * vLLM's split (--serve, s.vllm) is the same table but for the kv heads, which
 * vLLM replicates when there are fewer of them than ranks, the MXFP4 experts'
 * padding, the vocabulary's padding and the Gated DeltaNet layers' heads (in
 * vc__hf_tp_split), VLLM =
 * vllm-project/vllm:
 *  - vllm/model_executor/layers/linear.py @ 0036d38d QKVParallelLinear.__init__:
 *    num_heads = divide(total_num_heads, tp_size); if tp_size >=
 *    total_num_kv_heads: num_kv_heads = 1, num_kv_head_replicas =
 *    divide(tp_size, total_num_kv_heads) (divide asserts divisibility), else
 *    num_kv_heads = divide(total_num_kv_heads, tp_size): a rank's k_proj and
 *    v_proj shards hold num_kv_heads x head_size outputs, one head copied to
 *    tp / kv ranks (weight_loader: shard_rank = tp_rank // num_kv_head_replicas);
 *  - the attention layer of the model files, e.g. vllm/model_executor/models/
 *    qwen3_moe.py @ 002456df Qwen3MoeAttention.__init__: assert tp_size %
 *    total_num_kv_heads == 0 when the kv heads are fewer, num_kv_heads =
 *    max(1, total_num_kv_heads // tp_size), Attention(num_kv_heads=...), so the
 *    KV cache of a rank holds one head (vllm/config/model.py @ 0052a5b8
 *    ModelConfig.get_num_kv_heads: max(1, total_num_kv_heads //
 *    tensor_parallel_size)); multi_query's one kv head likewise
 *    (get_total_num_kv_heads: 1; vllm/model_executor/models/gpt_bigcode.py
 *    @ 002800f0 GPTBigCodeAttention: the query column-parallel, c_attn_kv whole
 *    on every rank, num_kv_heads 1);
 *  - vLLM's MXFP4 experts (gpt-oss; s.mxfp4_align, src/engine/serve.c vc__vllm_mxfp4_align):
 *    vllm/model_executor/layers/quantization/mxfp4.py @ 007d5005 Mxfp4MoEMethod.create_weights pads
 *    intermediate_size_per_partition (FusedMoE's intermediate_size // tp_size) to the backend's multiple,
 *    round_up(..., 64) under the Triton kernels of Hopper, 256 under FlashInfer's SM100_FI_MXFP4_BF16 (B200),
 *    128 under MARLIN (the other NVIDIA cards) and ROCm's Triton: w13_weight [E, 2 x I_pad, hidden / 2] and
 *    w13_weight_scale [E, 2 x I_pad, hidden / 32] uint8, w13_bias [E, 2 x I_pad], w2_weight
 *    [E, hidden, I_pad / 2], w2_weight_scale [E, hidden, I_pad / 32]: the stacked experts at I_pad
 *    (src/policy/quant.c mxfp4_vllm_tensors packs them so, with the backends' padded hidden size).
 *    2880 / 8 = 360 values, not whole 32-value blocks in the checkpoint's split, become 384 (Triton,
 *    MARLIN) or 512 (FlashInfer);
 *  - the vocabulary: vllm/model_executor/layers/vocab_parallel_embedding.py @ 7f5d141a
 *    VocabParallelEmbedding.__init__ (ParallelLMHead is one): org_vocab_size_padded = pad_vocab_size(
 *    org_vocab_size, padding_size), num_embeddings_padded = pad_vocab_size(org_vocab_size_padded +
 *    num_added_embeddings, padding_size), padding_size DEFAULT_VOCAB_PADDING_SIZE 64 (pad_vocab_size:
 *    ((vocab_size + pad_to - 1) // pad_to) * pad_to); without LoRA the models pass config.vocab_size as
 *    both (no added rows); num_embeddings_per_partition = divide(num_embeddings_padded, tp_size), the weight
 *    [num_embeddings_per_partition, embedding_dim] (create_weights); divide() asserts divisibility
 *    (vllm/distributed/utils.py @ 01996904 ensure_divisibility), so a tp that does not divide the padded
 *    vocabulary is refused. Megatron pads to 128 x tp instead: Qwen3's 151936 rows at tp 8 are 18992
 *    a rank under vLLM, 19072 under Megatron. At tp 1 nothing is split or padded (vLLM's 64-padding
 *    at tp 1 is not modelled: the model as loaded);
 *  - whisper (WHISPER = vllm/model_executor/models/whisper.py @ 00a23257a13090193fb098c7573598c5fdb4b15e):
 *    WhisperAttention.__init__ asserts total_num_heads % tp_size == 0 and makes num_heads = num_kv_heads =
 *    heads // tp; each self-attention's qkv_proj a QKVParallelLinear (total_num_kv_heads = the heads), each
 *    cross-attention's q_proj a ColumnParallelLinear and kv_proj a MergedColumnParallelLinear of [d_model,
 *    d_model] (each shard d_model / tp), out_proj a RowParallelLinear (its bias whole); WhisperMLP's fc1
 *    ColumnParallelLinear over encoder_ffn_dim / decoder_ffn_dim, fc2 RowParallelLinear: the table splits the
 *    encoder's heads and encoder_ffn_dim, the decoder's are split below (a->wh), hf_whisper.c writes a rank's
 *    q / k / v as d_model / tp wide. Not split: conv1, conv2 (nn.Conv1d), both embed_positions (nn.Embedding),
 *    the LayerNorms, and WhisperDecoder.embed_tokens, an nn.Embedding(vocab_size, d_model) (not a
 *    VocabParallelEmbedding), whose whole weight WhisperForConditionalGeneration's proj_out (a ParallelLMHead
 *    made, then tie_weights(model.decoder.embed_tokens)) takes: the vocabulary stays whole on every rank;
 *  - the query heads are split as Megatron splits them: ModelConfig
 *    .verify_with_parallel_config (config/model.py @ 0052a5b8) raises "Total
 *    number of attention heads (...) must be divisible by tensor parallel size".
 */
#include <stddef.h>
#include <string.h>

#include "hf_arch.h"
#include "util.h"

#define MEG_VOCAB_DIVISIBLE_BY 128 /* arguments.py --make-vocab-size-divisible-by default */
#define VLLM_VOCAB_PADDING_SIZE 64 /* vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE */

/* The widths a rank holds 1/t of; 0 (absent in the family) stays 0. The
 * error names the family's key for the width (the row's), else .key. */
static const struct {
    size_t off;
    int role;
    const char *key;
} tp_split[] = {
    {offsetof(arch, NH), K_HEADS, "num_attention_heads"},
    {offsetof(arch, KV), K_KV_HEADS, "num_key_value_heads"},
    {offsetof(arch, I), K_INTER, "intermediate_size"},
    {offsetof(arch, moe_I), K_MOE_INTER, "moe_intermediate_size"},
    {offsetof(arch, shared_I), K_SHARED_INTER, "shared_expert_intermediate_size"},
};

int vc__hf_tp_split(arch *a, vc_hf_split s, vc_error *err)
{
    int64_t t = s.tp;
    a->sp = 1;
    if (t <= 1) return s.sp ? vc_set_error(err, VC_ERR_USAGE, O("sp"), "sequence parallelism needs " OV("tp", "2") " or more") : 0;
    if (t > (INT64_C(1) << 20))
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "expected 1 to 2^20 tensor-parallel ranks, got %lld", (long long)t);
    if (a->f->hybrid && !s.vllm) /* the Gated DeltaNet layers' split: vLLM's only (below) */
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%s: tensor parallelism over the Gated DeltaNet layers is not modelled",
                            a->f->model_type);
    if (a->f->hybrid) {
        /* vLLM's Gated DeltaNet layers (vllm-project/vllm @ 00545a8a, vllm/model_executor/layers/mamba/gdn/
         * qwen_gdn_linear_attn.py QwenGatedDeltaNetAttention.__init__): conv1d ColumnParallelLinear over
         * conv_dim (2 key_dim + value_dim), in_proj_qkvz / in_proj_ba MergedColumnParallelLinear (2 key_dim +
         * 2 value_dim, 2 num_v_heads; Qwen3.5's in_proj_qkv/z/b/a likewise), dt_bias and A_log
         * divide(num_v_heads, tp_size), the gated norm of head_v_dim whole, out_proj RowParallelLinear over
         * value_dim; its state (get_state_shape: mamba_utils gated_delta_net_state_shape(tp_size, ...)) the
         * conv state of conv_dim / tp channels and num_v_heads / tp recurrent heads: a rank's layer is the
         * layer of num_k_heads / tp and num_v_heads / tp heads. A split that does not divide them takes
         * layers/mamba/gdn/head_partition.py's padded uneven ranks: not modelled */
        if (a->lin_kh % t || a->lin_vh % t)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide linear_num_key_heads (%lld) "
                                "and linear_num_value_heads (%lld): vLLM's uneven Gated DeltaNet head partition is not modelled",
                                (long long)t, (long long)a->lin_kh, (long long)a->lin_vh);
        a->lin_kh /= t;
        a->lin_vh /= t;
    }
    a->qk_gather = 1;
    if (s.vllm && a->f->qk_norm == QK_WHOLE && a->f->moe != MOE_MINIMAX) { /* olmo2, olmo3, olmoe under vLLM (below) */
        if (a->KV < t)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks are more than num_key_value_heads "
                                "(%lld): vLLM's %s all-gathers each rank's replicated kv head (%lld x head_dim) into k_norm, "
                                "an RMSNorm of num_key_value_heads x head_dim (%lld), and fails", (long long)t,
                                (long long)a->KV, a->f->moe ? "OlmoeAttention" : "Olmo2Attention", (long long)(t * a->D),
                                (long long)(a->KV * a->D));
        a->qk_gather = t;
    }
    const bool m2 = a->f->block == BLK_GRANITE4 || a->f->block == BLK_MAMBA2 || a->f->block == BLK_NEMOTRON_H ||
                    a->f->block == BLK_FALCON_H1;
    if (m2 && s.vllm) { /* Megatron's: refused by the families' *_unmodelled (hf_granite4.c m2_tp) */
        /* vLLM's MambaMixer2 on a rank (MIXER2 = vllm-project/vllm @ 2e0714afc079f2c76e0666f5089c42f231cfea62,
         * vllm/model_executor/layers/mamba/mamba2/mamba_mixer2.py MambaMixer2.__init__): assert num_heads % tp_size
         * == 0; assert n_groups % tp_size == 0 or n_groups == 1; with n_groups 1 the groups are replicated to
         * n_groups + MambaStateShapeCalculator.extra_groups_for_head_shards(n_groups, tp_size) = tp_size
         * (ColumnParallelLinear in_proj / conv1d over intermediate + conv_dim + heads, conv_dim = intermediate +
         * 2 x tp_size x state, loaded by mamba_v2_sharded_weight_loader with the one group copied to every rank),
         * else MergedColumnParallelLinear in_proj [intermediate, intermediate, groups x state, groups x state, heads]
         * and conv1d [intermediate, groups x state, groups x state], each split over the ranks: a rank holds
         * num_heads / tp heads and n_groups / tp groups (1 when n_groups is 1). A, D, dt_bias divide(num_heads,
         * tp_size); Mixer2RMSNormGated's weight per_rank_hidden_size = intermediate // tp_size (asserting
         * intermediate % tp_size == 0, implied by the heads); out_proj RowParallelLinear over intermediate, its
         * bias whole. The state a rank keeps (mamba_utils.py @ 2afe1e8573cf51b73569ae1d35f59078a2032a91
         * MambaStateShapeCalculator.mamba2_state_shape(tp_world_size, ...): conv (d_conv - 1, divide(intermediate,
         * tp) + 2 x n_groups(+extra) x state / tp), temporal (divide(num_heads, tp), head_dim, state)) is
         * layers/mamba2.c vc__mamba2_vllm_state of the rank's layer. Falcon-H1's mup_vector ((2 d_ssm + 2 groups x
         * state + heads) // tp_size, vllm/model_executor/models/falcon_h1.py @ 0189427238e6f89c55a0f85da90f330d6e0d6ae7
         * FalconH1SSMDecoderLayer._init_mup_vector) is the rank's in_proj width. The layer is told the ranks
         * (gh.tp): Mixer2RMSNormGated.forward_cuda takes forward_native whenever tp_size > 1. The models' other modules
         * are the table's below: vllm/model_executor/models/mamba2.py @ 055e47c28003156421365af985d676fc921cb075
         * (Mamba2DecoderLayer: the mixer and an RMSNorm; embeddings a VocabParallelEmbedding, lm_head a ParallelLMHead;
         * get_mamba_state_shape_from_config passes tensor_parallel_size), nemotron_h.py @ 8744bb09 (NemotronHAttention's
         * asserts as QKVParallelLinear's, NemotronHMLP's up_proj ColumnParallelLinear and down_proj RowParallelLinear
         * over intermediate_size), granitemoehybrid.py @ 0195c9ec (GraniteMoeHybridAttention likewise,
         * GraniteMoeSharedMLP, GraniteMoeMoE's FusedMoE over intermediate_size), falcon_h1.py @ 01894272
         * (FalconH1MLP's MergedColumnParallelLinear / RowParallelLinear, FalconH1AttentionDecoderLayer's asserts) */
        if (a->gh.mh % t)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide %s (%lld): vLLM's "
                                "MambaMixer2 asserts num_heads %% tp_size == 0", (long long)t, a->gh.hkey, (long long)a->gh.mh);
        if (a->gh.mg % t && a->gh.mg != 1)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide %s (%lld): vLLM's "
                                "MambaMixer2 asserts n_groups %% tp_size == 0 or n_groups == 1", (long long)t, a->gh.gkey,
                                (long long)a->gh.mg);
        a->gh.mh /= t;
        a->gh.mg = a->gh.mg % t ? 1 : a->gh.mg / t;
        a->gh.tp = t;
    }
    if (s.vllm && a->f->moe == MOE_MINIMAX && a->KV < t) /* MiniMaxText01RMSNormTP's k_norm shard (below) */
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks are more than num_key_value_heads (%lld): "
                            "vLLM's MiniMax-M2 k_norm (MiniMaxText01RMSNormTP) shards kv heads x head_dim over the ranks, "
                            "narrower than the kv head each rank replicates", (long long)t, (long long)a->KV);
    /* mamba2's heads and intermediate are FIXED(1) stand-ins (no attention, no MLP: src/hf/hf.c's row), not split */
    for (size_t i = 0; i < sizeof tp_split / sizeof tp_split[0] && a->f->block != BLK_MAMBA2; i++) {
        int64_t *v = (int64_t *)((char *)a + tp_split[i].off);
        const char *key = a->f->keys[tp_split[i].role].key ? a->f->keys[tp_split[i].role].key : tp_split[i].key;
        if (s.vllm && tp_split[i].role == K_KV_HEADS && *v > 0 && *v < t) { /* vLLM replicates them (above) */
            if (t % *v)
                return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks are not a multiple of %s (%lld): "
                                    "vLLM replicates fewer kv heads than ranks only an equal number of times "
                                    "(QKVParallelLinear: divide(tp_size, total_num_kv_heads))", (long long)t, key, (long long)*v);
            *v = 1;
            continue;
        }
        if (*v % t && tp_split[i].role == K_KV_HEADS && a->mqa)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "multi_query keeps one kv head, which %lld tensor-parallel ranks "
                                "do not divide", (long long)t);
        if (*v % t)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide %s (%lld)", (long long)t,
                                key, (long long)*v);
        *v /= t;
    }
    if (a->f->block == BLK_WHISPER) { /* vLLM's only (src/hf/hf.c refuses Megatron's): WHISPER above */
        if (a->wh.dec_NH % t)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide decoder_attention_heads "
                                "(%lld): vLLM's WhisperAttention asserts total_num_heads %% tp_size == 0", (long long)t,
                                (long long)a->wh.dec_NH);
        if (a->wh.dec_I % t)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide decoder_ffn_dim (%lld)",
                                (long long)t, (long long)a->wh.dec_I);
        if (s.sp) return vc_set_error(err, VC_ERR_USAGE, O("sp"), "sequence parallelism is not modelled for whisper");
        a->wh.dec_NH /= t;
        a->wh.dec_I /= t;
        a->wh.tp = t;
        return 0; /* embed_tokens and the tied proj_out whole on every rank */
    }
    /* Gemma 4 under vLLM (vllm/model_executor/models/gemma4.py @ 001cabc1): Gemma4DecoderLayer gives a full layer
     * under attention_k_eq_v num_global_key_value_heads, and Gemma4Attention.__init__ splits them as the others
     * (num_kv_heads = max(1, total_num_kv_heads // tp_size), asserting tp_size % total when fewer, total % tp_size
     * otherwise; QKVParallelLinear likewise). The rest is the table's: QKVParallelLinear / o_proj RowParallelLinear
     * over the heads, Gemma4MLP's MergedColumnParallelLinear / RowParallelLinear over intermediate_size,
     * Gemma4MoE's FusedMoE over moe_intermediate_size (its router a GateLinear, replicated), embed_tokens a
     * VocabParallelEmbedding and the lm_head tied to it (ParallelLMHead.tie_weights); the norms, router scales and
     * layer scalars whole. The towers of Gemma4ForConditionalGeneration (gemma4_mm.py @ 01bae219: AutoModel
     * .from_config then recursive_replace_linear(tower, quant_config, prefix), no tensor-parallel plan given;
     * the vLLM linear it makes is taken to be transformers/utils.py replace_linear_class's default style
     * "replicate", ReplicatedLinear, read @ 02aa9ec8, whose file has no recursive_replace_linear) stay whole on
     * every rank; embed_vision's embedding_projection is a ReplicatedLinear there. The per-layer inputs
     * (Gemma4Model.__init__ with hidden_size_per_layer_input): embed_tokens_per_layer a VocabParallelEmbedding
     * (vocab_size_per_layer_input padded to 64, then divide()), per_layer_model_projection a ColumnParallelLinear
     * (divide(N x P, tp)) whose output is all-gathered (hf_gemma4.c writes the gather), the norm and each layer's
     * per_layer_input_gate / per_layer_projection (ReplicatedLinear) whole. */
    if (s.vllm && a->f->block == BLK_GEMMA4 && a->g4.keqv && a->g4.gKV > 0) {
        if (a->g4.gKV < t && t % a->g4.gKV)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks are not a multiple of "
                                "num_global_key_value_heads (%lld): vLLM replicates fewer kv heads than ranks only an equal "
                                "number of times (Gemma4Attention: assert tp_size %% total_num_kv_heads == 0)", (long long)t,
                                (long long)a->g4.gKV);
        if (a->g4.gKV >= t && a->g4.gKV % t)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide "
                                "num_global_key_value_heads (%lld)", (long long)t, (long long)a->g4.gKV);
        a->g4.gKV = a->g4.gKV < t ? 1 : a->g4.gKV / t;
    }
    if (s.vllm && a->f->block == BLK_GEMMA4 && a->g4.P > 0) {
        const int64_t np = a->N * a->g4.P; /* total_ple_dim, bounded by hf_gemma4.c's reading */
        const int64_t vp = (a->g4.Vp + VLLM_VOCAB_PADDING_SIZE - 1) / VLLM_VOCAB_PADDING_SIZE * VLLM_VOCAB_PADDING_SIZE;
        if (t > HF_G4_MAX_TP)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks: the per-layer inputs' all-gather is "
                                "modelled for at most %d", (long long)t, HF_G4_MAX_TP);
        if (np % t)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide num_hidden_layers x "
                                "hidden_size_per_layer_input (%lld): vLLM's per_layer_model_projection "
                                "(ColumnParallelLinear) asserts divide(output_size, tp_size)", (long long)t, (long long)np);
        if (vp % t)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide vocab_size_per_layer_input "
                                "padded to a multiple of 64 (%lld): vLLM's VocabParallelEmbedding asserts "
                                "divide(num_embeddings_padded, tp_size)", (long long)t, (long long)vp);
        a->g4.Vp = vp / t;
        a->g4.tp = t;
    }
    /* Olmo2Config.base_model_tp_plan replicates q/k/v ("colwise_rep": the norm
     * spans the whole projection); Megatron's layer spec has no such norm. vLLM's MiniMax-M2
     * (vllm/model_executor/models/minimax_m2.py @ 01d99586 MiniMaxM2Attention: q_norm / k_norm
     * MiniMaxText01RMSNormTP, vllm/model_executor/layers/mamba/linear_attn.py: a weight of
     * hidden_size / tp_world on each rank, the squares' mean all-reduced over the ranks) normalizes each
     * rank's heads with its shard: a rank's norm spans its heads (the [tokens, 1] float32 all-reduce not
     * modelled). Its k_norm shards num_key_value_heads x head_dim, so fewer kv heads than ranks (each
     * replicated whole on its ranks) would not match the shard: refused. vLLM's Olmo2Attention
     * (vllm/model_executor/models/olmo2.py @ 028aedf62adee9d2a1e99d4cda7c1ce1c997c8cc, the class olmo3 runs too:
     * registry.py @ 0002bff0 maps "Olmo3ForCausalLM" to ("olmo2", "Olmo2ForCausalLM"), whose __init__ asserts
     * isinstance(config, (Olmo2Config, Olmo3Config))) and OlmoeAttention (olmoe.py @
     * 048a32c74781fb54225d431eca3a58a809eb265d): qkv_proj a QKVParallelLinear, o_proj a RowParallelLinear (the
     * table's split), q_norm RMSNorm(total_num_heads x head_dim) and k_norm RMSNorm(total_num_kv_heads x head_dim)
     * whole on every rank; _apply_qk_norm with tp_size > 1 all-gathers q.contiguous() and k.contiguous() over the
     * group (tensor_model_parallel_all_gather), norms the whole rows, and keeps split_tensor_along_last_dim(..)
     * [tp_rank] (a view): the layer's "qk_norm_gather" (layers/llm.c). With fewer kv heads than ranks the gathered
     * k (tp x head_dim) does not match k_norm: refused above. Megatron's layer spec has no such norm: refused */
    if (a->f->qk_norm == QK_WHOLE && !s.vllm)
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%s's q_norm / k_norm span the whole projection: its tensor-parallel "
                            "split is not modelled", a->f->model_type);
    if (a->proj && a->proj != a->H) /* OPTDecoder.project_in / project_out: no Megatron counterpart */
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "word_embed_proj_dim (%lld) differs from hidden_size (%lld): "
                            "project_in / project_out under tensor parallelism are not modelled", (long long)a->proj,
                            (long long)a->H);
    if (s.vllm && s.mxfp4_align > 0 && a->moe_I > 0) /* Mxfp4MoEMethod.create_weights (above) */
        a->moe_I = (a->moe_I + s.mxfp4_align - 1) / s.mxfp4_align * s.mxfp4_align;
    if (s.vllm) { /* vLLM's VocabParallelEmbedding / ParallelLMHead (above): a multiple of 64, then divide() */
        int64_t padded = (a->V + VLLM_VOCAB_PADDING_SIZE - 1) / VLLM_VOCAB_PADDING_SIZE * VLLM_VOCAB_PADDING_SIZE;
        if (padded % t)
            return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%lld tensor-parallel ranks do not divide the vocabulary padded "
                                "to a multiple of 64 (%lld of vocab_size %lld): vLLM's VocabParallelEmbedding asserts "
                                "divide(num_embeddings_padded, tp_size)", (long long)t, (long long)padded, (long long)a->V);
        a->V = padded / t;
    } else {
        int64_t mult = MEG_VOCAB_DIVISIBLE_BY * t; /* t <= 2^20: no overflow */
        int64_t padded = (a->V + mult - 1) / mult * mult;
        a->V = padded / t;
    }
    if (!s.sp) return 0;
    if (a->f->head != HEAD_LM || a->E > 0)
        return vc_set_error(err, VC_ERR_USAGE, O("sp"), "sequence parallelism is modelled for the dense decoders only, not %s",
                            a->E > 0 ? "mixture-of-experts layers" : "encoders");
    if (a->seq % t)
        return vc_set_error(err, VC_ERR_USAGE, O("sp"), "the sequence (%lld tokens) is not divisible by " OV("tp", "%lld"),
                            (long long)a->seq, (long long)t);
    a->sp = t;
    return 0;
}

/* Megatron's GPT layer spec (MEG models/gpt/gpt_layer_specs.py): linear_qkv and
 * linear_fc1 column-parallel, linear_proj and linear_fc2 row-parallel, the
 * output layer column-parallel (GPTModel.output_layer); here by the names of
 * the Hugging Face modules that stand for them. */
static const char *const gather_names[] = {"q_proj", "k_proj", "v_proj", "qkv_proj", "gate_proj", "up_proj", "gate_up_proj",
                                           "c_attn", "c_fc", "query_key_value", "dense_h_to_4h", "lm_head", "embed_out",
                                           "fc1"};
static const char *const scatter_names[] = {"o_proj", "down_proj", "c_proj", "dense", "dense_4h_to_h", "out_proj", "fc2"};

const char *vc__hf_sp_role(const char *name)
{
    const char *dot = strrchr(name, '.');
    const char *last = dot ? dot + 1 : name;
    for (size_t i = 0; i < sizeof gather_names / sizeof gather_names[0]; i++)
        if (!strcmp(last, gather_names[i])) return "sequence_gather";
    for (size_t i = 0; i < sizeof scatter_names / sizeof scatter_names[0]; i++)
        if (!strcmp(last, scatter_names[i])) return "sequence_scatter";
    return NULL;
}
