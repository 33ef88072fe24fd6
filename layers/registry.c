/*
 * registry.c — every layer kind, by family. Adding a kind: one line here
 * (see layers/layer.h, "Adding a layer kind").
 */
#include <string.h>
#include <strings.h>

#include "layer.h"

/* defined in layers/<family>.c */
extern const vc_kind vc_kind_Conv1d, vc_kind_Conv2d, vc_kind_Conv3d, vc_kind_ConvTranspose1d, vc_kind_ConvTranspose2d, vc_kind_ConvTranspose3d; /* conv.c */
extern const vc_kind vc_kind_Linear, vc_kind_Identity, vc_kind_Flatten; /* linear.c */
extern const vc_kind vc_kind_RNN, vc_kind_LSTM, vc_kind_GRU; /* rnn.c */
extern const vc_kind vc_kind_MultiheadAttention, vc_kind_ScaledDotProductAttention, vc_kind_TransformerEncoderLayer, vc_kind_TransformerDecoderLayer; /* attention.c */
extern const vc_kind vc_kind_BatchNorm1d, vc_kind_BatchNorm2d, vc_kind_BatchNorm3d, vc_kind_LayerNorm, vc_kind_GroupNorm, vc_kind_InstanceNorm1d, vc_kind_InstanceNorm2d, vc_kind_RMSNorm; /* norm.c */
extern const vc_kind vc_kind_Embedding; /* embedding.c */
extern const vc_kind vc_kind_MaxPool1d, vc_kind_MaxPool2d, vc_kind_MaxPool3d, vc_kind_AvgPool1d, vc_kind_AvgPool2d, vc_kind_AvgPool3d, vc_kind_AdaptiveAvgPool1d, vc_kind_AdaptiveAvgPool2d, vc_kind_AdaptiveAvgPool3d, vc_kind_AdaptiveMaxPool1d, vc_kind_AdaptiveMaxPool2d; /* pooling.c */
extern const vc_kind vc_kind_ReLU, vc_kind_ReLU6, vc_kind_LeakyReLU, vc_kind_ELU, vc_kind_GELU, vc_kind_SiLU, vc_kind_Mish, vc_kind_Hardswish, vc_kind_Hardsigmoid, vc_kind_Sigmoid, vc_kind_Tanh, vc_kind_Square, vc_kind_XIELU, vc_kind_Softmax, vc_kind_LogSoftmax; /* activation.c */
extern const vc_kind vc_kind_Dropout, vc_kind_Dropout2d, vc_kind_StochasticDepth; /* dropout.c */
extern const vc_kind vc_kind_Upsample, vc_kind_PixelShuffle; /* resample.c */
extern const vc_kind vc_kind_Add, vc_kind_Mul, vc_kind_Cat; /* merge.c */
extern const vc_kind vc_kind_RotaryEmbedding, vc_kind_RotaryAttention, vc_kind_HFRMSNorm, vc_kind_GatedActivation, vc_kind_Scale, vc_kind_PositionEmbedding, vc_kind_SparseMoE, vc_kind_NewGELU, vc_kind_LayerScalar; /* llm.c */
extern const vc_kind vc_kind_Reshape, vc_kind_Permute, vc_kind_Transpose, vc_kind_Select, vc_kind_Slice, vc_kind_Mean, vc_kind_Matmul, vc_kind_Parameter, vc_kind_TopK, vc_kind_Gather, vc_kind_Cast; /* tensor.c */
extern const vc_kind vc_kind_ShiftedWindowAttention, vc_kind_ShiftedWindowAttentionV2, vc_kind_RelativePositionBias; /* window.c */
extern const vc_kind vc_kind_MultiscaleAttention, vc_kind_MViTPool, vc_kind_MViTPositionalEncoding; /* mvit.c */
extern const vc_kind vc_kind_MLAttention; /* mla.c */
extern const vc_kind vc_kind_GatedDeltaNet; /* deltanet.c */
extern const vc_kind vc_kind_Mamba2Mixer; /* mamba2.c */
extern const vc_kind vc_kind_ShortConv; /* shortconv.c */
extern const vc_kind vc_kind_GraniteMoE; /* granitemoe.c */
extern const vc_kind vc_kind_PixelValues, vc_kind_VisionWeights, vc_kind_VisionPosEmbed, vc_kind_VisionRotary,
    vc_kind_VisionAttention, vc_kind_VisionOutputs, vc_kind_DeepstackAdd, vc_kind_SiglipLogits; /* vision.c */
extern const vc_kind vc_kind_T5LayerNorm, vc_kind_T5StackMask, vc_kind_T5PositionBias, vc_kind_T5Return, vc_kind_T5Attention,
    vc_kind_T5DecoderIds; /* t5.c */
extern const vc_kind vc_kind_WhisperAttention, vc_kind_WhisperEncoderPositions; /* whisper.c */
extern const vc_kind vc_kind_BartLogitsBias, vc_kind_M2M100Positions; /* bart.c */
extern const vc_kind vc_kind_PixtralRotary, vc_kind_PixtralMask, vc_kind_PixtralAttention, vc_kind_PixtralMerge,
    vc_kind_PixtralOutputs; /* pixtral.c */
extern const vc_kind vc_kind_MllamaVision, vc_kind_MllamaCrossMask, vc_kind_MllamaCrossAttention, vc_kind_MllamaGate; /* mllama.c */
extern const vc_kind vc_kind_VisionPosInterp; /* vision.c: glm4v */

static const vc_kind *const kinds[] = {
    &vc_kind_Conv1d, &vc_kind_Conv2d, &vc_kind_Conv3d, &vc_kind_ConvTranspose1d, &vc_kind_ConvTranspose2d, &vc_kind_ConvTranspose3d,
    &vc_kind_Linear, &vc_kind_Identity, &vc_kind_Flatten,
    &vc_kind_RNN, &vc_kind_LSTM, &vc_kind_GRU,
    &vc_kind_MultiheadAttention, &vc_kind_ScaledDotProductAttention, &vc_kind_TransformerEncoderLayer, &vc_kind_TransformerDecoderLayer,
    &vc_kind_BatchNorm1d, &vc_kind_BatchNorm2d, &vc_kind_BatchNorm3d, &vc_kind_LayerNorm, &vc_kind_GroupNorm, &vc_kind_InstanceNorm1d, &vc_kind_InstanceNorm2d, &vc_kind_RMSNorm,
    &vc_kind_Embedding,
    &vc_kind_MaxPool1d, &vc_kind_MaxPool2d, &vc_kind_MaxPool3d, &vc_kind_AvgPool1d, &vc_kind_AvgPool2d, &vc_kind_AvgPool3d, &vc_kind_AdaptiveAvgPool1d, &vc_kind_AdaptiveAvgPool2d, &vc_kind_AdaptiveAvgPool3d, &vc_kind_AdaptiveMaxPool1d, &vc_kind_AdaptiveMaxPool2d,
    &vc_kind_ReLU, &vc_kind_ReLU6, &vc_kind_LeakyReLU, &vc_kind_ELU, &vc_kind_GELU, &vc_kind_SiLU, &vc_kind_Mish, &vc_kind_Hardswish, &vc_kind_Hardsigmoid, &vc_kind_Sigmoid, &vc_kind_Tanh, &vc_kind_Square, &vc_kind_XIELU, &vc_kind_Softmax, &vc_kind_LogSoftmax,
    &vc_kind_Dropout, &vc_kind_Dropout2d, &vc_kind_StochasticDepth,
    &vc_kind_Upsample, &vc_kind_PixelShuffle,
    &vc_kind_Add, &vc_kind_Mul, &vc_kind_Cat,
    &vc_kind_RotaryEmbedding, &vc_kind_RotaryAttention, &vc_kind_HFRMSNorm, &vc_kind_GatedActivation, &vc_kind_Scale, &vc_kind_PositionEmbedding, &vc_kind_SparseMoE, &vc_kind_NewGELU, &vc_kind_LayerScalar,
    &vc_kind_Reshape, &vc_kind_Permute, &vc_kind_Transpose, &vc_kind_Select, &vc_kind_Slice, &vc_kind_Mean, &vc_kind_Matmul, &vc_kind_Parameter, &vc_kind_TopK, &vc_kind_Gather, &vc_kind_Cast,
    &vc_kind_ShiftedWindowAttention, &vc_kind_ShiftedWindowAttentionV2, &vc_kind_RelativePositionBias,
    &vc_kind_MultiscaleAttention, &vc_kind_MViTPool, &vc_kind_MViTPositionalEncoding,
    &vc_kind_MLAttention,
    &vc_kind_GatedDeltaNet,
    &vc_kind_Mamba2Mixer,
    &vc_kind_ShortConv,
    &vc_kind_GraniteMoE,
    &vc_kind_PixelValues, &vc_kind_VisionWeights, &vc_kind_VisionPosEmbed, &vc_kind_VisionRotary,
    &vc_kind_VisionAttention, &vc_kind_VisionOutputs, &vc_kind_DeepstackAdd, &vc_kind_SiglipLogits,
    &vc_kind_T5LayerNorm, &vc_kind_T5StackMask, &vc_kind_T5PositionBias, &vc_kind_T5Return, &vc_kind_T5Attention,
    &vc_kind_T5DecoderIds,
    &vc_kind_WhisperAttention, &vc_kind_WhisperEncoderPositions,
    &vc_kind_BartLogitsBias, &vc_kind_M2M100Positions,
    &vc_kind_PixtralRotary, &vc_kind_PixtralMask, &vc_kind_PixtralAttention, &vc_kind_PixtralMerge, &vc_kind_PixtralOutputs,
    &vc_kind_MllamaVision, &vc_kind_MllamaCrossMask, &vc_kind_MllamaCrossAttention, &vc_kind_MllamaGate,
    &vc_kind_VisionPosInterp,
};

#define NKINDS (sizeof kinds / sizeof *kinds)

size_t vc_kind_count(void) { return NKINDS; }
const char *vc_kind_name(size_t i) { return i < NKINDS ? kinds[i]->name : NULL; }
const char *vc_kind_summary(size_t i) { return i < NKINDS ? kinds[i]->summary : NULL; }

const vc_kind *vc_kind_find(const char *name)
{
    for (size_t i = 0; i < NKINDS; i++)
        if (kinds[i]->name[0] == name[0] && !strcmp(kinds[i]->name, name)) return kinds[i];
    return NULL;
}

int vc_edit_distance(const char *a, const char *b);

const char *vc_kind_suggest(const char *name)
{
    const char *best = "Sequential";
    int bd = vc_edit_distance(name, best);
    for (size_t i = 0; i < NKINDS; i++) {
        int d = vc_edit_distance(name, kinds[i]->name);
        if (d < bd) {
            bd = d;
            best = kinds[i]->name;
        }
    }
    /* case-insensitive exact match wins ("conv2d" -> "Conv2d") */
    for (size_t i = 0; i < NKINDS; i++)
        if (!strcasecmp(name, kinds[i]->name)) return kinds[i]->name;
    size_t len = strlen(name);
    return bd <= (len < 5 ? 1 : len < 9 ? 2 : 3) ? best : NULL;
}
