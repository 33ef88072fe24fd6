/*
 * limits_cases.h — each layer kind's first repeatable fixture of fuzz/corpus/
 * (its output shape equals its input's, which `repeat` needs; a square Linear
 * for Linear) repeated 1,000,000 times (VC_MAX_LAYERS): the models of CTest
 * limits_kinds (test_limits.c) and of CTest stress (test_stress.c).
 */
#ifndef VC_TEST_LIMITS_CASES_H
#define VC_TEST_LIMITS_CASES_H

typedef struct {
    const char *kind;
    const char *json;
} kind_case;

static const kind_case cases[] = {
    /* fixture_merge_add_broadcast_inplace.json */
    {"Add",
     "{\"inputs\":{\"x\":[16,8,8],\"bias\":[16,1,1]},\"layers\":[{\"type\":\"Add\",\"inputs\":[\"x\","
     "\"bias\"],\"inplace\":true,\"repeat\":1000000}]}"},
    /* fixture_pooling_avgpool2d_count_include_pad_false.json */
    {"AvgPool2d",
     "{\"input\":[32,17,17],\"layers\":[{\"type\":\"AvgPool2d\",\"kernel_size\":3,\"stride\":1,\"paddi"
     "ng\":1,\"count_include_pad\":false,\"repeat\":1000000}]}"},
    /* fixture_norm_batchnorm1d_features.json */
    {"BatchNorm1d",
     "{\"input\":[64],\"layers\":[{\"type\":\"BatchNorm1d\",\"num_features\":64,\"repeat\":1000000}]}"},
    /* fixture_norm_batchnorm2d_basic.json */
    {"BatchNorm2d",
     "{\"input\":[64,16,16],\"layers\":[{\"type\":\"BatchNorm2d\",\"num_features\":64,\"repeat\":10000"
     "00}]}"},
    /* fixture_norm_batchnorm3d_basic.json */
    {"BatchNorm3d",
     "{\"input\":[16,4,8,8],\"layers\":[{\"type\":\"BatchNorm3d\",\"num_features\":16,\"repeat\":10000"
     "00}]}"},
    /* fixture_conv_conv1d_depthwise_reflect.json */
    {"Conv1d",
     "{\"input\":[24,40],\"layers\":[{\"type\":\"Conv1d\",\"in_channels\":24,\"out_channels\":24,\"ker"
     "nel_size\":5,\"padding\":2,\"groups\":24,\"padding_mode\":\"reflect\",\"repeat\":1000000}]}"},
    /* fixture_conv_conv2d_depthwise.json */
    {"Conv2d",
     "{\"input\":[32,28,28],\"layers\":[{\"type\":\"Conv2d\",\"in_channels\":32,\"out_channels\":32,\""
     "kernel_size\":3,\"padding\":1,\"groups\":32,\"repeat\":1000000}]}"},
    /* fixture_dropout_dropout_default.json */
    {"Dropout",
     "{\"input\":[10,64],\"layers\":[{\"type\":\"Dropout\",\"repeat\":1000000}]}"},
    /* fixture_dropout_dropout2d_default.json */
    {"Dropout2d",
     "{\"input\":[16,8,8],\"layers\":[{\"type\":\"Dropout2d\",\"repeat\":1000000}]}"},
    /* fixture_activation_elu_alpha_inplace.json */
    {"ELU",
     "{\"input\":[10,32],\"layers\":[{\"type\":\"ELU\",\"alpha\":0.5,\"inplace\":true,\"repeat\":10000"
     "00}]}"},
    /* fixture_activation_gelu_default.json */
    {"GELU",
     "{\"input\":[10,32],\"layers\":[{\"type\":\"GELU\",\"repeat\":1000000}]}"},
    /* fixture_rnn_gru_3layer_nobias.json */
    {"GRU",
     "{\"input\":[15,24],\"layers\":[{\"type\":\"GRU\",\"input_size\":24,\"hidden_size\":24,\"num_laye"
     "rs\":3,\"bias\":false,\"repeat\":1000000}]}"},
    /* fixture_norm_groupnorm_basic.json */
    {"GroupNorm",
     "{\"input\":[64,16,16],\"layers\":[{\"type\":\"GroupNorm\",\"num_groups\":32,\"num_channels\":64,"
     "\"repeat\":1000000}]}"},
    /* fixture_activation_hardsigmoid_default.json */
    {"Hardsigmoid",
     "{\"input\":[16,1,1],\"layers\":[{\"type\":\"Hardsigmoid\",\"repeat\":1000000}]}"},
    /* fixture_activation_hardswish_default.json */
    {"Hardswish",
     "{\"input\":[16,8,8],\"layers\":[{\"type\":\"Hardswish\",\"repeat\":1000000}]}"},
    /* fixture_linear_identity_1d.json */
    {"Identity",
     "{\"input\":[128],\"layers\":[{\"type\":\"Identity\",\"repeat\":1000000}]}"},
    /* fixture_norm_instancenorm1d_affine.json */
    {"InstanceNorm1d",
     "{\"input\":[16,50],\"layers\":[{\"type\":\"InstanceNorm1d\",\"num_features\":16,\"affine\":true,"
     "\"repeat\":1000000}]}"},
    /* fixture_norm_instancenorm2d_affine.json */
    {"InstanceNorm2d",
     "{\"input\":[32,16,16],\"layers\":[{\"type\":\"InstanceNorm2d\",\"num_features\":32,\"affine\":tr"
     "ue,\"repeat\":1000000}]}"},
    /* fixture_norm_layernorm_channels_last_image.json */
    {"LayerNorm",
     "{\"input\":[7,7,96],\"layers\":[{\"type\":\"LayerNorm\",\"normalized_shape\":[96],\"repeat\":100"
     "0000}]}"},
    /* fixture_activation_leakyrelu_default.json */
    {"LeakyReLU",
     "{\"input\":[16,8,8],\"layers\":[{\"type\":\"LeakyReLU\",\"repeat\":1000000}]}"},
    /* (Linear 8 x 8) */
    {"Linear",
     "{\"input\":[8],\"layers\":[{\"type\":\"Linear\",\"in_features\":8,\"out_features\":8,\"repeat\":"
     "1000000}]}"},
    /* fixture_activation_logsoftmax_dim1.json */
    {"LogSoftmax",
     "{\"input\":[10],\"layers\":[{\"type\":\"LogSoftmax\",\"dim\":1,\"repeat\":1000000}]}"},
    /* fixture_activation_mish_default.json */
    {"Mish",
     "{\"input\":[16,8,8],\"layers\":[{\"type\":\"Mish\",\"repeat\":1000000}]}"},
    /* fixture_merge_mul_same_shape.json */
    {"Mul",
     "{\"inputs\":{\"a\":[10,32],\"b\":[10,32]},\"layers\":[{\"type\":\"Mul\",\"inputs\":[\"a\",\"b\"]"
     ",\"repeat\":1000000}]}"},
    /* fixture_attention_mha_add_bias_kv.json */
    {"MultiheadAttention",
     "{\"input\":[10,32],\"layers\":[{\"type\":\"MultiheadAttention\",\"embed_dim\":32,\"num_heads\":4"
     ",\"add_bias_kv\":true,\"repeat\":1000000}]}"},
    /* fixture_norm_rmsnorm_basic.json */
    {"RMSNorm",
     "{\"input\":[16,64],\"layers\":[{\"type\":\"RMSNorm\",\"normalized_shape\":64,\"repeat\":1000000}"
     "]}"},
    /* fixture_rnn_rnn_nobias_dropout.json */
    {"RNN",
     "{\"input\":[12,16],\"layers\":[{\"type\":\"RNN\",\"input_size\":16,\"hidden_size\":16,\"num_laye"
     "rs\":3,\"bias\":false,\"dropout\":0.2,\"repeat\":1000000}]}"},
    /* fixture_activation_relu_image.json */
    {"ReLU",
     "{\"input\":[16,8,8],\"layers\":[{\"type\":\"ReLU\",\"repeat\":1000000}]}"},
    /* fixture_activation_relu6_image.json */
    {"ReLU6",
     "{\"input\":[16,8,8],\"layers\":[{\"type\":\"ReLU6\",\"repeat\":1000000}]}"},
    /* fixture_attention_sdpa_heads.json */
    {"ScaledDotProductAttention",
     "{\"inputs\":{\"q\":[4,16,32],\"k\":[4,16,32],\"v\":[4,16,32]},\"layers\":[{\"type\":\"ScaledDotP"
     "roductAttention\",\"inputs\":[\"q\",\"k\",\"v\"],\"repeat\":1000000}]}"},
    /* fixture_window_swin_window_covers_input.json */
    {"ShiftedWindowAttention",
     "{\"input\":[7,7,16],\"layers\":[{\"type\":\"ShiftedWindowAttention\",\"dim\":16,\"window_size\":"
     "7,\"shift_size\":3,\"num_heads\":1,\"repeat\":1000000}]}"},
    /* fixture_window_swin_v2_window_padded.json */
    {"ShiftedWindowAttentionV2",
     "{\"input\":[6,10,16],\"layers\":[{\"type\":\"ShiftedWindowAttentionV2\",\"dim\":16,\"window_size"
     "\":[4,4],\"shift_size\":0,\"num_heads\":4,\"proj_bias\":false,\"repeat\":1000000}]}"},
    /* fixture_activation_silu_default.json */
    {"SiLU",
     "{\"input\":[16,8,8],\"layers\":[{\"type\":\"SiLU\",\"repeat\":1000000}]}"},
    /* fixture_activation_sigmoid_image.json */
    {"Sigmoid",
     "{\"input\":[16,8,8],\"layers\":[{\"type\":\"Sigmoid\",\"repeat\":1000000}]}"},
    /* fixture_activation_softmax_attention_scores.json */
    {"Softmax",
     "{\"input\":[4,16,16],\"layers\":[{\"type\":\"Softmax\",\"dim\":3,\"repeat\":1000000}]}"},
    /* fixture_dropout_stochastic_depth_batch.json */
    {"StochasticDepth",
     "{\"input\":[64,8,8],\"layers\":[{\"type\":\"StochasticDepth\",\"p\":0.2,\"mode\":\"batch\",\"rep"
     "eat\":1000000}]}"},
    /* fixture_activation_tanh_image.json */
    {"Tanh",
     "{\"input\":[16,8,8],\"layers\":[{\"type\":\"Tanh\",\"repeat\":1000000}]}"},
    /* fixture_attention_decoder_layer_default.json */
    {"TransformerDecoderLayer",
     "{\"inputs\":{\"tgt\":[12,64],\"memory\":[20,64]},\"layers\":[{\"type\":\"TransformerDecoderLayer"
     "\",\"inputs\":[\"tgt\",\"memory\"],\"d_model\":64,\"nhead\":4,\"repeat\":1000000}]}"},
    /* fixture_attention_encoder_layer_default.json */
    {"TransformerEncoderLayer",
     "{\"input\":[16,64],\"layers\":[{\"type\":\"TransformerEncoderLayer\",\"d_model\":64,\"nhead\":4,"
     "\"repeat\":1000000}]}"},
};

#endif
