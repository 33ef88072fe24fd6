/*
 * test_fsdp2_lora.c — fully_shard over a LoRA model (src/parallel/layout_fsdp2.c,
 * f2_params_ok; docs/parallel.md 2.5): each decoder layer's FSDPParamGroup holds
 * its frozen base weights and its adapters; the all-gather is one flat buffer of
 * every parameter of the group (F2C foreach_all_gather), only the parameters with
 * a gradient are reduce-scattered (F2G FSDPParamGroup.post_backward:
 * fsdp_params_with_grad), and the sharded gradients and AdamW's states are the
 * adapters' shards. Values derived by hand from the config's shapes.
 *
 * Llama 3.1 8B (tests/data/hf/llama-3.1-8b.json): hidden 4096, 8 KV heads of
 * 128 (k_proj, v_proj 1024 x 4096), intermediate 14336, 32 layers, vocab
 * 128256, untied: 8,030,261,248 parameters. One decoder layer: q_proj and
 * o_proj 4096 x 4096 (16,777,216 each), k_proj and v_proj 1024 x 4096
 * (4,194,304 each), gate/up/down 14336 x 4096 (58,720,256 each), two RMSNorm
 * weights of 4096: 218,112,000. LoRA r 16 on q_proj, v_proj: lora_A [16, 4096]
 * and lora_B [out, 16]: q 65,536 + 65,536, v 65,536 + 16,384 = 212,992 per
 * layer, 6,815,744 in all. At 8 ranks every dim 0 (16, 1024, 4096, 14336,
 * 128256) divides by 8: no shard is padded (F2P _init_sharded_param).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli_spelt.h"
#include "vramcalc/vramcalc.h"

#define LLAMA31_8B VC_TEST_DATA "/hf/llama-3.1-8b.json"

static const int64_t n_base = 8030261248LL, n_lora = 6815744LL;
static const int64_t layer_base = 218112000LL, layer_lora = 212992LL;

/* The model at seq 256 with LoRA r 16 on q_proj, v_proj in `dt`. */
static vc_model *load(vc_lora_dtype dt)
{
    vc_hf_options hf;
    vc_hf_options_init(&hf);
    hf.seq = 256;
    vc_model *m = NULL;
    vc_error err;
    if (vc_model_load_file_hf(LLAMA31_8B, &hf, &m, &err)) fail_msg("load: %s", err.msg);
    vc_lora l;
    vc_lora_init(&l);
    l.r = 16;
    l.alpha = 32;
    l.dtype = dt;
    snprintf(l.targets, sizeof l.targets, "q_proj,v_proj");
    if (vc_model_set_lora(m, &l, &err)) fail_msg("lora: %s", err.msg);
    return m;
}

static vc_options opts(vc_precision p)
{
    vc_options o;
    vc_options_init(&o);
    o.precision = p;
    o.optim = VC_OPTIM_ADAM;
    o.parallel = VC_PARALLEL_FSDP2;
    o.gpus = 8;
    return o;
}

/* Allocations of `bytes` in category `cat` per phase (forward, backward, optimizer, idle). */
typedef struct {
    const char *cat;
    int64_t bytes;
    int n[4];
} count_t;

static void on_line(void *ctx, const char *text)
{
    count_t *t = ctx;
    char phase[32], op[16], cat[16];
    long long bytes, total;
    if (sscanf(text, "%31s %15s %15s %lld %lld", phase, op, cat, &bytes, &total) != 5) return;
    int k = !strcmp(phase, "forward") ? 0 : !strcmp(phase, "backward") ? 1 : !strcmp(phase, "optimizer") ? 2 : 3;
    if (!strcmp(op, "alloc") && !strcmp(cat, t->cat) && bytes == t->bytes) t->n[k]++;
}

static count_t count(const char *cat, int64_t bytes)
{
    vc_model *m = load(VC_LORA_DTYPE_MODEL);
    vc_options o = opts(VC_PREC_BF16);
    vc_error err;
    count_t t = {cat, bytes, {0, 0, 0, 0}};
    if (vc_trace(m, &o, on_line, &t, &err)) fail_msg("trace: %s", err.msg);
    vc_model_free(m);
    return t;
}

/* Per GPU, at 8 ranks, bf16 base and bf16 adapters (torchtune's: the LoRA model built under
 * set_default_dtype(bf16)): the weights are 1/8 of every parameter, frozen and adapter (each a
 * sharded DTensor, F2P), 2 bytes each, plus the rotary inv_freq buffer (64 fp32: a 512-byte block);
 * the gradients 1/8 of the adapters only (the frozen parameters get no .grad, so no
 * reduce-scatter output: fsdp_params_with_grad); Adam's exp_avg and exp_avg_sq 1/8 of the adapters
 * each (torch.optim.Adam makes state only for parameters with .grad; foreach: the step on the CPU). */
static void test_persistent_per_gpu(void **state)
{
    (void)state;
    vc_model *m = load(VC_LORA_DTYPE_MODEL);
    vc_options o = opts(VC_PREC_BF16);
    vc_result r;
    vc_error err;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate: %s", err.msg);
    assert_int_equal(r.memory.weights, (n_base + n_lora) * 2 / 8 + 512); /* 2,009,269,760 */
    assert_int_equal(r.memory.gradients, n_lora * 2 / 8);                /* 1,703,936 */
    assert_int_equal(r.memory.optimizer_states, 2 * (n_lora * 2 / 8));          /* 3,407,872 */
    vc_result_free(&r);
    /* fp32 throughout (-p fp32, PEFT's fp32 adapters): the same counts at 4 bytes */
    o.precision = VC_PREC_FP32;
    if (vc_estimate(m, &o, &r, &err)) fail_msg("estimate fp32: %s", err.msg);
    assert_int_equal(r.memory.weights, (n_base + n_lora) * 4 / 8 + 512);
    assert_int_equal(r.memory.gradients, n_lora * 4 / 8);
    assert_int_equal(r.memory.optimizer_states, 2 * (n_lora * 4 / 8));
    vc_result_free(&r);
    vc_model_free(m);
}

/* One layer's all-gather (F2C foreach_all_gather): all_gather_output = torch.empty(sum of the
 * group's shards x world), frozen weights and adapters in one buffer: (218,112,000 + 212,992) x 2
 * bytes = 436,649,984, once per layer in forward and again in backward (reshard_after_forward True
 * for each layer: F2G pre_backward's unshard). Its reduce-scatter input holds the adapters' padded
 * gradients only: 212,992 x 2 = 425,984 bytes per layer, in backward; the output, this rank's 1/8
 * (53,248 bytes), is the layer's sharded adapter gradients. A full layer's reduce-scatter input
 * (436,649,984 bytes of "grad") never appears. */
static void test_layer_all_gather(void **state)
{
    (void)state;
    count_t ag = count("weight", (layer_base + layer_lora) * 2);
    assert_int_equal(ag.n[0], 32);
    assert_int_equal(ag.n[1], 32);
    count_t rs = count("grad", layer_lora * 2);
    assert_int_equal(rs.n[0], 0);
    assert_int_equal(rs.n[1], 32);
    count_t out = count("grad", layer_lora * 2 / 8);
    assert_int_equal(out.n[1], 32);
    count_t full = count("grad", (layer_base + layer_lora) * 2);
    assert_int_equal(full.n[1], 0);
}

/* Adapters of another dtype than the model's (fp32 adapters in a bf16 model) make FSDP2's
 * all-gather a uint8 one (F2C _get_all_gather_input_metadatas): refused, naming the parameter. */
static void test_mixed_dtype_refused(void **state)
{
    (void)state;
    vc_model *m = load(VC_LORA_DTYPE_FP32);
    vc_options o = opts(VC_PREC_BF16);
    vc_result r;
    vc_error err;
    assert_int_equal(vc_estimate(m, &o, &r, &err), VC_ERR_USAGE);
    assert_string_equal(CLI_PATH(&err), "--parallel");
    assert_non_null(strstr(CLI_MSG(&err), "fsdp2 over fp32 LoRA adapter parameters (lora_A.default.weight) in a bf16 model"));
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_persistent_per_gpu),
        cmocka_unit_test(test_layer_all_gather),
        cmocka_unit_test(test_mixed_dtype_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
