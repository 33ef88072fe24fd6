/*
 * test_seeds.c — every example and formula of the five seed documents
 * (shared/seeds/ in the design notes) reproduced by vramcalc.
 *
 * Seed 000 "VRAM Requirements by Layer Type": each Example Config row's
 * exact PyTorch parameter count (sum(p.numel()), computed with torch 1.13)
 * and its fp32 parameter bytes. Where the seed's simplified formula
 * differs from PyTorch (LSTM/GRU keep two bias vectors per gate set,
 * b_ih and b_hh), PyTorch's count is asserted.
 * Seed 003: the worked example (288,000,000 bytes).
 * Seed 001: 16 bytes per parameter for fp32 Adam and mixed-bf16; 7B -> 112 GB.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vramcalc/vramcalc.h"

typedef struct {
    const char *json;
    int64_t params;        /* PyTorch sum(p.numel()) */
    int64_t weights_bytes; /* memory.weights: each parameter/buffer tensor rounded to 512 B */
} seed_row;

static void check_row(const seed_row *row)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(row->json, strlen(row->json), "seed", &m, &err)) fail_msg("%s: %s", err.path, err.msg);
    assert_int_equal(vc_model_parameters(m), row->params);
    vc_options o;
    vc_options_init(&o);
    o.batch = 32;
    o.mode = VC_MODE_INFER;
    vc_result r;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.weights, row->weights_bytes);
    vc_result_free(&r);
    vc_model_free(m);
}

/* Conv2d(64, 128, 3, padding=1), input 32x32: 64*128*9 + 128 = 73,856
 * params; 295,424 fp32 bytes (the seed's "295 KB"), both tensors already
 * multiples of 512 B. */
static void test_seed000_conv2d(void **state)
{
    (void)state;
    check_row(&(seed_row){"{\"input\":[64,32,32],\"layers\":[{\"type\":\"Conv2d\",\"in_channels\":64,"
                          "\"out_channels\":128,\"kernel_size\":3,\"padding\":1}]}",
                          73856, 295424});
}

/* Conv1d(256, 512, 5), length 100: 256*512*5 + 512 = 655,872 params,
 * 2,623,488 bytes (the seed's "2.5 MB"). */
static void test_seed000_conv1d(void **state)
{
    (void)state;
    check_row(&(seed_row){"{\"input\":[256,100],\"layers\":[{\"type\":\"Conv1d\",\"in_channels\":256,"
                          "\"out_channels\":512,\"kernel_size\":5}]}",
                          655872, 2623488});
}

/* ConvTranspose2d(128, 64, 4, stride=2), 16x16: weight [128, 64, 4, 4] +
 * bias [64] = 131,136 params = 524,544 fp32 bytes ("524 KB"): what seed
 * 003's counts-only calculator (vc_estimate_counts, which rounds nothing)
 * gives for 131,136 parameters; stored as tensors, the 256-byte bias takes a
 * 512-byte block: 524,800. */
static void test_seed000_convtranspose2d(void **state)
{
    (void)state;
    vc_options o;
    vc_options_init(&o);
    o.optim = VC_OPTIM_NONE;
    vc_result r;
    vc_error err;
    assert_int_equal(vc_estimate_counts(131136, 0, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.weights, 524544);
    vc_result_free(&r);
    check_row(&(seed_row){"{\"input\":[128,16,16],\"layers\":[{\"type\":\"ConvTranspose2d\",\"in_channels\":128,"
                          "\"out_channels\":64,\"kernel_size\":4,\"stride\":2}]}",
                          131136, 524800});
}

/* Linear(4096, 4096): 16,781,312 params, 67,125,248 bytes ("64 MB"). */
static void test_seed000_linear(void **state)
{
    (void)state;
    check_row(&(seed_row){"{\"input\":[4096],\"layers\":[{\"type\":\"Linear\",\"in_features\":4096,\"out_features\":4096}]}",
                          16781312, 67125248});
}

/* LSTM(512, 256, num_layers=2, bidirectional=True). PyTorch: per layer and
 * direction 4*256*in + 4*256*256 + 2*4*256; layer 0 in=512, layer 1
 * in=2*256=512: 4 * 788,480 = 3,153,920 params = 12,615,680 bytes. The
 * seed's formula 4*((in+hid)*hid + hid) has one bias per gate set and
 * gives 3,149,824 (and prints 9.4 MB); PyTorch's count wins. 16 tensors,
 * all multiples of 512 B except none (4 KiB biases). */
static void test_seed000_lstm(void **state)
{
    (void)state;
    check_row(&(seed_row){"{\"input\":[100,512],\"layers\":[{\"type\":\"LSTM\",\"input_size\":512,\"hidden_size\":256,"
                          "\"num_layers\":2,\"bidirectional\":true}]}",
                          3153920, 12615680});
}

/* GRU(512, 256, num_layers=2): layer 0 3*256*512 + 3*256*256 + 2*3*256 =
 * 591,360; layer 1 3*256*256*2 + 1,536 = 394,752; 986,112 params =
 * 3,944,448 bytes (seed formula without the second bias: 984,576). */
static void test_seed000_gru(void **state)
{
    (void)state;
    check_row(&(seed_row){"{\"input\":[100,512],\"layers\":[{\"type\":\"GRU\",\"input_size\":512,\"hidden_size\":256,"
                          "\"num_layers\":2}]}",
                          986112, 3944448});
}

/* TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048):
 * in_proj 3*512*512+3*512, out_proj 512*512+512, linear1 512*2048+2048,
 * linear2 2048*512+512, norm1/norm2 2*512 each = 3,152,384 params =
 * 12,609,536 bytes ("12.6 MB"). */
static void test_seed000_transformer(void **state)
{
    (void)state;
    check_row(&(seed_row){"{\"input\":[512,512],\"layers\":[{\"type\":\"TransformerEncoderLayer\",\"d_model\":512,"
                          "\"nhead\":8,\"dim_feedforward\":2048}]}",
                          3152384, 12609536});
}

/* MultiheadAttention(512, 8): 4*512^2 + 4*512 = 1,050,624 params =
 * 4,202,496 bytes ("4.0 MB"). */
static void test_seed000_mha(void **state)
{
    (void)state;
    check_row(&(seed_row){"{\"input\":[512,512],\"layers\":[{\"type\":\"MultiheadAttention\",\"embed_dim\":512,"
                          "\"num_heads\":8}]}",
                          1050624, 4202496});
}

/* BatchNorm2d(256): 512 params (2,048 bytes, "3 KB" with running stats):
 * weight, bias, running_mean, running_var: 1 KiB each -> 4,096 bytes, plus
 * num_batches_tracked (int64, one 512 B block) = 4,608. */
static void test_seed000_batchnorm(void **state)
{
    (void)state;
    check_row(&(seed_row){"{\"input\":[256,32,32],\"layers\":[{\"type\":\"BatchNorm2d\",\"num_features\":256}]}",
                          512, 4608});
}

/* LayerNorm(512): 1,024 params = 4,096 bytes ("4 KB"). */
static void test_seed000_layernorm(void **state)
{
    (void)state;
    check_row(&(seed_row){"{\"input\":[512,512],\"layers\":[{\"type\":\"LayerNorm\",\"normalized_shape\":512}]}",
                          1024, 4096});
}

/* Embedding(50000, 768): 38,400,000 params = 153,600,000 bytes ("146.5 MB"
 * = 146.48 MiB). */
static void test_seed000_embedding(void **state)
{
    (void)state;
    check_row(&(seed_row){"{\"input\":{\"shape\":[128],\"dtype\":\"int64\"},\"layers\":[{\"type\":\"Embedding\","
                          "\"num_embeddings\":50000,\"embedding_dim\":768}]}",
                          38400000, 153600000});
}

/* MaxPool2d(2, stride=2) on 128x32x32: no parameters. */
static void test_seed000_maxpool(void **state)
{
    (void)state;
    check_row(&(seed_row){"{\"input\":[128,32,32],\"layers\":[{\"type\":\"MaxPool2d\",\"kernel_size\":2,\"stride\":2}]}",
                          0, 0});
}

/* Seed 003's worked example: 20,000,000 parameters, batch 32, 1,000,000
 * activation elements per sample, fp32, no optimizer state:
 * 80,000,000 + 80,000,000 + 128,000,000 = 288,000,000 bytes. */
static void test_seed003_worked_example(void **state)
{
    (void)state;
    vc_options o;
    vc_options_init(&o);
    o.batch = 32;
    o.optim = VC_OPTIM_NONE;
    vc_result r;
    vc_error err;
    assert_int_equal(vc_estimate_counts(20000000, 1000000, &o, &r, &err), VC_OK);
    assert_int_equal(r.memory.weights, 80000000);
    assert_int_equal(r.memory.gradients, 80000000);
    assert_int_equal(r.memory.activations, 128000000);
    assert_int_equal(r.memory.peak_allocated, 288000000);
    vc_result_free(&r);
}

static int64_t model_state(int64_t params, vc_precision p)
{
    vc_options o;
    vc_options_init(&o);
    o.precision = p;
    vc_result r;
    vc_error err;
    assert_int_equal(vc_estimate_counts(params, 0, &o, &r, &err), VC_OK);
    int64_t s = r.memory.weights + r.memory.gradients + r.memory.optimizer_states;
    vc_result_free(&r);
    return s;
}

/* Seed 001: fp32 Adam = 4P weights + 4P grads + 8P states = 16P; with
 * mixed-bf16, 2P bf16 weights + 4P fp32 master + 2P grads + 8P states =
 * 16P; "a 7B parameter model at FP32 needs at least 112 GB". */
static void test_seed001_sixteen_bytes(void **state)
{
    (void)state;
    assert_int_equal(model_state(1000000, VC_PREC_FP32), 16000000);
    assert_int_equal(model_state(1000000, VC_PREC_MIXED_BF16), 16000000);
    assert_int_equal(model_state(7000000000, VC_PREC_FP32), 112000000000);
}

/* The same 16 bytes per parameter from a simulated model: Linear(1024,
 * 1024) has a 4 MiB weight and a 4 KiB bias, both multiples of 512 B, so
 * weights + gradients + Adam states = 16 * 1,049,600 exactly (fp32), and
 * with mixed-bf16 2 + 4 (master) + 2 + 8 bytes per parameter. */
static void test_seed001_model(void **state)
{
    (void)state;
    const char *json = "{\"input\":[1024],\"layers\":[{\"type\":\"Linear\",\"in_features\":1024,\"out_features\":1024}]}";
    vc_model *m;
    vc_error err;
    assert_int_equal(vc_model_load_string(json, strlen(json), "t", &m, &err), VC_OK);
    static const vc_precision precs[] = {VC_PREC_FP32, VC_PREC_MIXED_BF16};
    for (int i = 0; i < 2; i++) {
        vc_options o;
        vc_options_init(&o);
        o.precision = precs[i];
        vc_result r;
        assert_int_equal(vc_estimate(m, &o, &r, &err), VC_OK);
        assert_int_equal(r.memory.weights + r.memory.gradients + r.memory.optimizer_states, 16 * 1049600);
        vc_result_free(&r);
    }
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed000_conv2d),      cmocka_unit_test(test_seed000_conv1d),
        cmocka_unit_test(test_seed000_convtranspose2d), cmocka_unit_test(test_seed000_linear),
        cmocka_unit_test(test_seed000_lstm),        cmocka_unit_test(test_seed000_gru),
        cmocka_unit_test(test_seed000_transformer), cmocka_unit_test(test_seed000_mha),
        cmocka_unit_test(test_seed000_batchnorm),   cmocka_unit_test(test_seed000_layernorm),
        cmocka_unit_test(test_seed000_embedding),   cmocka_unit_test(test_seed000_maxpool),
        cmocka_unit_test(test_seed003_worked_example), cmocka_unit_test(test_seed001_sixteen_bytes),
        cmocka_unit_test(test_seed001_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
