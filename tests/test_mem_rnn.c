/*
 * test_mem_rnn.c — exact byte figures for the RNN family (layers/rnn.c).
 *
 * RNN memory measured on CPU is not the truth (torch 1.13's CPU RNNs are not
 * cuDNN's), so these tests pin down the cuDNN model that layers/rnn.c
 * implements (docs/autograd.md, the cuDNN RNN section), derived by hand.
 * Each test builds a small model and runs vc_estimate with SGD (no optimizer
 * state or step temporaries), workspace 0, fp32 unless said. Every tensor is
 * rounded up to 512 bytes. The loss (`output.float().mean()`, a 0-d fp32
 * tensor, 512) is a Python variable alive until loss.backward() returns, and
 * so is the root gradient (ones_like(loss), 512) backward starts from: both
 * are live at every backward peak below ("loss + root 1024"). mean's
 * backward makes grad_output (dY, the output's size). Each derivation was
 * checked line by line against `vramcalc --trace -o sgd --workspace 0`.
 *
 * Notation (per layer): T steps, E input features, H hidden, H_out, D
 * directions, G gates (LSTM 4, GRU 3, RNN 1), L layers, N batch.
 *   h0/hy [L*D, N, H_out], c0/cy [L*D, N, H] (LSTM), y [T, N, D*H_out],
 *   reserve ESTIMATE L*D*T*N*(G*H + H) elements.
 * Forward of _cudnn_rnn: y, hy, cy, reserve, then the transient T-major copy
 *   of a batch-major input; hy, cy die right after the call.
 * Backward, input part (runs first): dx when the input needs a grad (else dx
 *   is part of the temporary), one temporary of
 *     grad_hy + grad_cy + dhx + dcx + x copy + dy copy (+ dx if unneeded);
 *   weight part: the parameter grads, one temporary of
 *     grad_hy + grad_cy + dhx + dcx + x copy (+ dx if unneeded),
 *   then the saves (h0, c0, y, reserve; the input is the batch) and dY go.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "mem_test.h"

static vc_result run(const char *json, int64_t batch, vc_mode mode, vc_precision prec)
{
    return mem_run(json, batch, mode, prec, VC_ATTN_AUTO);
}

/* Loading fails and the message contains `want`. */
static void load_fails(const char *json, const char *want)
{
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_string(json, strlen(json), "test.json", &m, &err) == VC_OK) {
        vc_model_free(m);
        fail_msg("loaded, expected an error with \"%s\"", want);
    }
    char msg[1200];
    vc_error_format(&err, msg, sizeof msg);
    if (!strstr(msg, want)) fail_msg("error \"%s\" lacks \"%s\"", msg, want);
}

#define TRAIN VC_MODE_TRAIN
#define INFER VC_MODE_INFER
#define FP32 VC_PREC_FP32

static const char *lstm_json = "{\"input\": [4, 8], \"layers\": [{\"type\": \"LSTM\", \"input_size\": 8, \"hidden_size\": 16}]}";

/* LSTM(8 -> 16) on [T=4, E=8], batch 2, fp32.
 *   weights: weight_ih 64*8*4 = 2048, weight_hh 64*16*4 = 4096, bias_ih, bias_hh 64*4 = 256 -> 512 each: 7168
 *   input 2*4*8*4 = 256 -> 512; h0, c0, hy, cy 1*2*16*4 = 128 -> 512; y 4*2*16*4 = 512
 *   reserve 1*1*4*2*(64 + 16)*4 = 2560; x copy 512.
 * train, end of forward: input + h0 + c0 + y + reserve = 512*4 + 2560 = 4608.
 * train peak, weight part of backward: weights 7168 + input 512 + saves (h0, c0, y, reserve 4096)
 *   + loss + root 1024 + dY 512 + grads 7168 + temporary (grad_hy 32 + grad_cy 32 + dhx 32 + dcx 32
 *   + x copy 64 + dx 64 = 256 elements = 1024 bytes; the input needs no grad, so dx is a temporary)
 *   = 21504.
 *   (the input part: 7168 + 512 + 4096 + 1024 + 512 + (256 + dy copy 64)*4 = 1280 -> 1536 = 14848.)
 * infer peak, inside _cudnn_rnn: weights 7168 + input + h0 + c0 + y + hy + cy + x copy (512 each) = 10752;
 *   activations (largest live set of activations; the x copy is a temporary) = 6*512 = 3072. */
static void test_lstm_basic(void **state)
{
    (void)state;
    vc_result r = run(lstm_json, 2, TRAIN, FP32);
    assert_int_equal(r.memory.weights, 7168);
    assert_int_equal(r.memory.activations, 4608);
    assert_int_equal(r.memory.peak_allocated, 21504);
    assert_int_equal(r.peak.phase, VC_PHASE_BACKWARD);
    assert_int_equal(r.peak.gradients, 7168);
    vc_result_free(&r);
    r = run(lstm_json, 2, INFER, FP32);
    assert_int_equal(r.memory.peak_allocated, 10752);
    assert_int_equal(r.memory.activations, 3072);
    vc_result_free(&r);
}

/* GRU(8 -> 8, num_layers 2, bidirectional, dropout 0.5) on [T=5, E=8], batch 4, fp32. D = 2, G = 3.
 *   weights: layer 0 per direction weight_ih 24*8*4 = 768 -> 1024, weight_hh 1024, biases 96 -> 512 each;
 *            layer 1 weight_ih 24*16*4 = 1536, weight_hh 1024, biases 512 each:
 *            2*(1024+1024+512+512) + 2*(1536+1024+512+512) = 13312
 *   input 4*5*8*4 = 640 -> 1024; h0, hy 2*2*4*8*4 = 512; y 5*4*16*4 = 1280 -> 1536;
 *   reserve 2*2*5*4*(24 + 8)*4 = 10240; cuDNN dropout state ESTIMATE 2 MiB = 2097152.
 * train, end of forward: input 1024 + h0 512 + y 1536 + reserve 10240 + dropout state 2097152 = 2110464.
 * train peak, weight part of backward: 13312 + 1024 + (512 + 1536 + 10240 + 2097152) + loss + root
 *   1024 + dY 1536 + grads 13312 + temporary (grad_hy 32 + dhx 32 + x copy 40 + dx 40 = 144 elements
 *   per sample * 4 * 4 = 2304 -> 2560) = 2142208.
 * infer: no reserve, no dropout state: weights 13312 + input 1024 + h0 512 + y 1536 + hy 512
 *   + x copy 1024 = 17920. */
static void test_gru_bidirectional_dropout(void **state)
{
    (void)state;
    const char *j = "{\"input\": [5, 8], \"layers\": [{\"type\": \"GRU\", \"input_size\": 8, \"hidden_size\": 8,"
                    " \"num_layers\": 2, \"bidirectional\": true, \"dropout\": 0.5}]}";
    vc_result r = run(j, 4, TRAIN, FP32);
    assert_int_equal(r.memory.weights, 13312);
    assert_int_equal(r.memory.activations, 2110464);
    assert_int_equal(r.memory.peak_allocated, 2142208);
    vc_result_free(&r);
    r = run(j, 4, INFER, FP32);
    assert_int_equal(r.memory.peak_allocated, 17920);
    vc_result_free(&r);
}

/* RNN(16 -> 16) then RNN(16 -> 16, relu) on [T=4, E=16], batch 2, fp32.
 *   weights per layer: 1024 + 1024 + 512 + 512 = 3072 (two layers: 6144)
 *   input 2*4*16*4 = 512; per layer h0, hy 1*2*16*4 = 128 -> 512, y 512, reserve 4*2*(16+16)*4 = 1024.
 * The first layer's output is T-major (batch-major shape over T-major memory), so the second layer
 *   makes no x copy, and its input needs a grad (dx, 512, is allocated as the grad of the first output).
 * end of forward: input 512 + 2 * (h0 512 + y 512 + reserve 1024) = 4608.
 * backward, second layer: input part dx 512 + temporary (grad_hy 16 + dhx 16 + dy copy 64 = 96
 *   elements * 8 = 768 -> 1024), weight part grads 3072 + temporary (32 elements = 256 -> 512).
 * peak, first layer's weight part: weights 6144 + input 512 + its saves 2048 + second layer's grads 3072
 *   + loss + root 1024 + dY (= second layer's dx) 512 + grads 3072 + temporary (grad_hy 16 + dhx 16
 *   + x copy 64 + dx 64 = 160 elements * 8 = 1280 -> 1536) = 17920. */
static void test_stacked_rnn_no_copy(void **state)
{
    (void)state;
    const char *j = "{\"input\": [4, 16], \"layers\": ["
                    "{\"type\": \"RNN\", \"input_size\": 16, \"hidden_size\": 16},"
                    "{\"type\": \"RNN\", \"input_size\": 16, \"hidden_size\": 16, \"nonlinearity\": \"relu\"}]}";
    vc_result r = run(j, 2, TRAIN, FP32);
    assert_int_equal(r.memory.activations, 4608);
    assert_int_equal(r.memory.peak_allocated, 17920);
    assert_int_equal(r.peak.gradients, 6144);
    vc_result_free(&r);
}

/* The LSTM of test_lstm_basic under amp-bf16 (the cuDNN RNN autocast wrapper casts to fp16 regardless).
 *   fp32 weights 7168; flat fp16 copy of the weights: (512 + 1024 + 64 + 64)*2 = 3328 -> 3584;
 *   fp16 copies of input, h0, c0: 128 B -> 512 each; y, hy, cy fp16 512 each; reserve 640*2 = 1280 -> 1536.
 * end of forward: input 512 + saves (x16, h0_16, c0_16, y 512 each; reserve 1536; flat copy 3584) = 7680.
 * peak, the flat copy's backward: weights 7168 + input 512 + loss + root 1024 + dw (fp16 flat grad)
 *   3584 + fp32 weight grads 7168 + one more flat fp16 tensor (CopySlices, ESTIMATE) 3584 = 23040. */
static void test_lstm_amp(void **state)
{
    (void)state;
    vc_result r = run(lstm_json, 2, TRAIN, VC_PREC_AMP_BF16);
    assert_int_equal(r.memory.activations, 7680);
    assert_int_equal(r.memory.peak_allocated, 23040);
    vc_result_free(&r);
}

/* A frozen LSTM on the model input: no grad_fn, nothing kept (the reserve is allocated and dropped).
 * activations = the input, 512.
 * peak inside _cudnn_rnn: weights 7168 + input + h0 + c0 + y + hy + cy (512 each) + reserve 2560
 *   + x copy 512 = 13312. */
static void test_lstm_frozen(void **state)
{
    (void)state;
    const char *j = "{\"input\": [4, 8], \"layers\": [{\"type\": \"LSTM\", \"input_size\": 8, \"hidden_size\": 16,"
                    " \"frozen\": true}]}";
    vc_result r = run(j, 2, TRAIN, FP32);
    assert_int_equal(r.memory.activations, 512);
    assert_int_equal(r.memory.peak_allocated, 13312);
    vc_result_free(&r);
}

/* LSTM(8 -> 16, proj_size 4, bidirectional) on [T=4, E=8], batch 64, infer. D = 2, H_out = 4.
 *   weights per direction: weight_ih 64*8*4 = 2048, weight_hh 64*4*4 = 1024, biases 512 each,
 *     weight_hr 4*16*4 = 256 -> 512: 4608; both directions 9216
 *   input 64*4*8*4 = 8192; h0, hy [2, 64, 4]: 2048; c0, cy [2, 64, 16]: 8192; y [4, 64, 8]: 8192;
 *   x copy 8192.
 * peak = 9216 + 8192 + 2048 + 8192 + 8192 + 2048 + 8192 + 8192 = 54272;
 * activations = input + h0 + c0 + y + hy + cy = 36864. */
static void test_lstm_proj_infer(void **state)
{
    (void)state;
    const char *j = "{\"input\": [4, 8], \"layers\": [{\"type\": \"LSTM\", \"input_size\": 8, \"hidden_size\": 16,"
                    " \"proj_size\": 4, \"bidirectional\": true}]}";
    vc_result r = run(j, 64, INFER, FP32);
    assert_int_equal(r.memory.weights, 9216);
    assert_int_equal(r.memory.peak_allocated, 54272);
    assert_int_equal(r.memory.activations, 36864);
    vc_result_free(&r);
}

/* Linear(8 -> 8) then a checkpointed LSTM(8 -> 16) on [T=4, E=8], batch 2, fp32.
 *   weights: Linear 256 -> 512 + 512, LSTM 7168: 8192; input 512; Linear output 512.
 * end of forward: the input (saved by addmm; the batch) + the Linear output (the checkpointed block's
 *   input, kept by checkpoint) = 1024; the LSTM keeps nothing.
 * backward: the first unpack recomputes the LSTM (h0, c0, y 512 each, reserve 2560 kept again), then
 *   the input part allocates dx 512 (the Linear output needs a grad).
 * peak, the weight part: weights 8192 + input 512 + Linear output 512 + recomputed saves 4096
 *   + loss + root 1024 + dY 512 + dx 512 + LSTM grads 7168 + temporary (grad_hy, grad_cy, dhx, dcx
 *   32 elements each + x copy 64 = 192 elements * 4 = 768 -> 1024; dx is a real grad here) = 23552. */
static void test_lstm_checkpoint(void **state)
{
    (void)state;
    const char *j = "{\"input\": [4, 8], \"layers\": [{\"type\": \"Linear\", \"in_features\": 8, \"out_features\": 8},"
                    "{\"type\": \"LSTM\", \"input_size\": 8, \"hidden_size\": 16, \"checkpoint\": true}]}";
    vc_result r = run(j, 2, TRAIN, FP32);
    assert_int_equal(r.memory.activations, 1024);
    assert_int_equal(r.memory.peak_allocated, 23552);
    vc_result_free(&r);
}

/* What PyTorch rejects, and the batch_first rule of docs/contract.md (sequence modules). */
static void test_rnn_errors(void **state)
{
    (void)state;
    load_fails("{\"input\": [4, 8], \"layers\": [{\"type\": \"LSTM\", \"input_size\": 8, \"hidden_size\": 16,"
               " \"batch_first\": false}]}",
               "batch_first");
    load_fails("{\"input\": [4, 8], \"layers\": [{\"type\": \"LSTM\", \"input_size\": 8, \"hidden_size\": 16,"
               " \"proj_size\": 16}]}",
               "proj_size has to be smaller than hidden_size");
    load_fails("{\"input\": [4, 8], \"layers\": [{\"type\": \"GRU\", \"input_size\": 8, \"hidden_size\": 16,"
               " \"proj_size\": 4}]}",
               "only supported for LSTM");
    load_fails("{\"input\": [4, 8], \"layers\": [{\"type\": \"RNN\", \"input_size\": 8, \"hidden_size\": 16,"
               " \"nonlinearity\": \"sigmoid\"}]}",
               "nonlinearity");
    load_fails("{\"input\": [4, 8], \"layers\": [{\"type\": \"RNN\", \"input_size\": 8, \"hidden_size\": 16,"
               " \"dropout\": 1.5}]}",
               "dropout");
    load_fails("{\"input\": [4, 8], \"layers\": [{\"type\": \"GRU\", \"input_size\": 6, \"hidden_size\": 16}]}",
               "input_size is 6 but the input has 8 features");
    load_fails("{\"input\": [2, 4, 8], \"layers\": [{\"type\": \"LSTM\", \"input_size\": 8, \"hidden_size\": 16}]}",
               "[L, input_size]");
    load_fails("{\"input\": [4, 8], \"layers\": [{\"type\": \"LSTM\", \"input_size\": 8, \"hidden_size\": 0}]}",
               "hidden_size");
    load_fails("{\"input\": [4, 8], \"layers\": [{\"type\": \"LSTM\", \"input_size\": 8, \"hidden_size\": 16,"
               " \"nonlinearity\": \"tanh\"}]}",
               "nonlinearity");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lstm_basic),
        cmocka_unit_test(test_gru_bidirectional_dropout),
        cmocka_unit_test(test_stacked_rnn_no_copy),
        cmocka_unit_test(test_lstm_amp),
        cmocka_unit_test(test_lstm_frozen),
        cmocka_unit_test(test_lstm_proj_infer),
        cmocka_unit_test(test_lstm_checkpoint),
        cmocka_unit_test(test_rnn_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
