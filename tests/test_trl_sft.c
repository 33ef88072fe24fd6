/*
 * test_trl_sft.c — --loss chunked-nll, TRL SFTTrainer's default loss_type "chunked_nll"
 * (src/engine/loss.c emit_chunked_nll, from huggingface/trl @ f2cd57710ae345ea6428ae95363267fcf38a3dc8
 * trl/trainer/sft_trainer.py l.86-378), and its checkpoint regions (src/engine/autograd.c).
 *
 * 1. The name (VC_LOSS_MAP) and the refused combinations: exit 2, one line naming the option.
 * 2. The chunk count ceil(B (L - 1) / 256): the backward peak of one chunk is the same for any
 *    number of whole chunks, what grows with the tokens outside the chunks grows linearly.
 * 3. The harness's measurements of the replica (bench/accuracy/llm/trl_sft_replica.py;
 *    measured.json llm454-llm468, the last 6 packed), held-out included.
 * 4. --loss nll, loss_type "nll" (TRL's default up to 1.6; loss.c emit_trl_nll, from sft_trainer.py
 *    compute_loss l.1700-1830): its refusals, the metrics' copy of the logits from batch 2, and the
 *    harness's measurements (measure_llm.py --loss nll).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "cli_run.h"
#include "vramcalc/vramcalc.h"

#define HF VC_TEST_DATA "/hf/"
#define LLMCFG VC_TEST_DATA "/../../bench/accuracy/llm/configs/"

static void test_name(void **state)
{
    (void)state;
    assert_int_equal(vc_loss_impl_from_name("chunked-nll"), VC_LOSS_IMPL_CHUNKED_NLL);
    assert_int_equal(vc_loss_impl_from_name("chunked_nll"), -1); /* the model file's spelling, not --loss's */
}

/* What the row refuses, each with the reason the source gives (loss.c emit_chunked_nll). */
static void test_refusals(void **state)
{
    (void)state;
    /* accelerate's bf16 autocast around the chunk's matmul is not modelled */
    assert_usage(HF "llama-3.1-8b.json --seq 64 --loss chunked-nll -p amp-bf16", "--loss: chunked-nll under autocast is not modelled");
    /* _patch_chunked_ce_lm_head: under FSDP2 the head weight's full_tensor() */
    assert_usage(HF "llama-3.1-8b.json --seq 64 --loss chunked-nll --parallel fsdp2 --gpus 2", "--loss: chunked-nll is modelled on one GPU");
    /* the patched forward returns logits=None: nothing to hold */
    assert_usage(HF "llama-3.1-8b.json --seq 64 --loss chunked-nll --hold-output", "--hold-output: chunked-nll returns no logits");
    /* SFTTrainer.__init__ l.1309-1318: a PEFT adapter on the head is a ValueError */
    assert_usage(HF "llama-3.1-8b.json --seq 64 --loss chunked-nll --lora 8 --lora-targets q_proj,lm_head",
                 "--loss: chunked-nll: the LM head lm_head has LoRA adapters, which SFTTrainer refuses");
    /* Gemma-2's final_logit_softcapping (the chunk's tanh) is not modelled */
    assert_usage(HF "gemma-2-9b.json --seq 64 --loss chunked-nll", "--loss: chunked-nll with the head's soft-capping");
    assert_usage(HF "llama-3.1-8b.json --seq 64 --loss chunked-nll --tp 2 --gpus 2", "--loss: chunked-nll with --tp is not modelled");
    assert_usage(HF "llama-3.1-8b.json --seq 1 --loss chunked-nll", "--loss: chunked-nll needs at least 2 tokens");
    assert_usage(HF "llama-3.1-8b.json --seq 64 --loss chunked-nll --compile", "--loss: chunked-nll with --compile is not modelled");
}

/* The chunks follow B x (L - 1): 256 tokens each, ceil(N / 256) of them. With layer checkpointing
 * the LoRA step's peak is in the loss's backward, where one chunk's recompute and gradients are
 * alive: the same for every N of whole chunks, so B = 2, 4 and 6 at L = 257 (N = 512, 1024 and 1536:
 * 2, 4 and 6 full chunks) differ by what grows with N outside the chunks (the sorted hidden states
 * [N, H], their gradients, the labels, valid and order [N]), linearly: the two steps are equal but
 * for the caching allocator's 512-byte rounding of the small [N] tensors (at most 2 blocks). */
static void test_chunks_linear(void **state)
{
    (void)state;
    long long p[3];
    for (int i = 0; i < 3; i++) {
        char a[512];
        snprintf(a, sizeof a, LLMCFG "llama_vocab8k.json --seq 257 -b %d -p bf16 --grad-ckpt --lora 8 --lora-targets "
                 "q_proj,v_proj --loss chunked-nll", 2 * (i + 1));
        p[i] = cli_json_field(a, "\"peak_allocated\": ");
    }
    assert_true(p[1] > p[0]);
    long long d = (p[2] - p[1]) - (p[1] - p[0]);
    assert_true(d >= -1024 && d <= 1024);
    /* one step is at least the sorted hidden states' 512 x 64 bf16 and their gradient's in fp32 (the
     * chunk's h.float() gradient: ToCopyBackward to bf16, summed into the [N, H] buffer) */
    assert_true(p[1] - p[0] >= 512 * 64 * 2 * 2);
}

/* measured.json (torch 1.13 CPU, trl_sft_replica.py through measure_llm.py --loss chunked-nll):
 * its command line and peak_allocated; HO: held out. */
static void test_measured(void **state)
{
    (void)state;
    static const cli_measured cases[] = {
        {"llama_vocab8k.json --seq 200 -b 4 -o adamw -p bf16", 54645248},        /* llm454 */
        {"llama_vocab8k.json --seq 200 -b 4 -o adamw -p fp32", 63970816},        /* llm455 */
        {"qwen2_vocab6k.json --seq 170 -b 3 -o adamw -p bf16 --grad-ckpt", 35020288}, /* llm456 HO */
        {"qwen2_vocab6k.json --seq 96 -b 2 -o adamw -p fp32 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets q_proj,v_proj", 26565120},                              /* llm457 */
        {"llama_vocab8k.json --seq 100 -b 6 -o sgd -p fp32 --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets q_proj,v_proj", 44874752},                              /* llm459 HO */
        {"llama_wide.json --seq 300 -b 1 -o adamw -p fp32 --grad-ckpt", 125888512}, /* llm462 HO */
        /* --packing: padding_free's -100 at each sequence's start, 512 valid of the row's 513 rows: 2
         * chunks where 513 would make 3 */
        {"llama_vocab8k.json --seq 257 -b 2 -o sgd -p bf16 --packing", 51335680}, /* llm465 HO */
        {"llama_small.json --seq 90 -b 6 -o adamw -p fp32 --grad-ckpt --packing --lora 8 --lora-alpha 16 "
         "--lora-dropout 0 --lora-targets q_proj,v_proj", 15990272},             /* llm467 */
    };
    assert_measured(cases, sizeof cases / sizeof *cases, " --loss chunked-nll", 1.0);
}

static void test_nll_refusals(void **state)
{
    (void)state;
    assert_int_equal(vc_loss_impl_from_name("nll"), VC_LOSS_IMPL_NLL);
    /* use_liger_kernel: TRL's nll is then Liger's fused loss (no logits, no entropy) */
    assert_usage(HF "llama-3.1-8b.json --seq 64 --loss nll --liger", "--liger: applies the fused linear cross-entropy");
    assert_usage(HF "llama-3.1-8b.json --seq 64 --loss nll --packing", "--loss: nll with --packing (the padding-free row's metrics) is not modelled");
    assert_usage(HF "llama-3.1-8b.json --seq 64 --loss nll --hold-output", "--loss: nll is SFTTrainer's step, whose compute_loss drops");
    assert_usage(HF "llama-3.1-8b.json --seq 64 --loss nll --compile", "--loss: nll with --compile is not modelled");
    assert_usage(HF "llama-3.1-8b.json --seq 64 --loss nll --tp 2 --gpus 2", "--loss: nll with --tp is not modelled");
    assert_usage(HF "llama-3.1-8b.json --seq 1 --loss nll", "--loss: nll needs at least 2 tokens");
    assert_usage(HF "bert-base-uncased.json --loss nll", "--loss: nll is a causal-LM loss");
}

/* entropy_from_logits' allocations in the simulated timeline (--trace), fp32 llama_vocab8k (vocab 8192,
 * seq 64: 63 shifted rows a sample): fewer than 128 rows are one chunk of every row, so each chunk
 * tensor is B x 63 x 8192 x 4 bytes, three of them (log_softmax, exp, their product); from batch 2
 * the reshape of the non-contiguous slice adds a copy of the same size first, at batch 1 the slice is
 * contiguous and the reshape a view. Sizes from trl/trainer/utils.py entropy_from_logits (l.526-560). */
static int entropy_allocs(int batch, long long size)
{
    char a[512];
    snprintf(a, sizeof a, LLMCFG "llama_vocab8k.json --seq 64 -o sgd -p fp32 -b %d --loss nll --trace", batch);
    const char *out = cli_output(a);
    char needle[64];
    snprintf(needle, sizeof needle, "alloc temp %*lld", 17, size);
    int n = 0;
    for (const char *p = out; (p = strstr(p, needle)); p++) {
        const char *eol = strchr(p, '\n');
        const char *e = strstr(p, "entropy_from_logits");
        if (e && (!eol || e < eol)) n++;
    }
    return n;
}

static void test_nll_copy(void **state)
{
    (void)state;
    assert_int_equal(entropy_allocs(1, 63LL * 8192 * 4), 3);
    assert_int_equal(entropy_allocs(2, 2 * 63LL * 8192 * 4), 4);
}

/* measured.json (torch 1.13 CPU, measure_llm.py --loss nll): its command line and peak_allocated. */
static void test_nll_measured(void **state)
{
    (void)state;
    static const cli_measured cases[] = {
        {"llama_vocab8k.json --seq 64 -b 2 -o adamw -p fp32", 40355328},                /* fp32, forward peak */
        {"llama_vocab8k.json --seq 64 -b 1 -o adamw -p bf16", 13745152},                /* HO, no copy */
        {"qwen2_vocab6k.json --seq 96 -b 3 -o adamw -p bf16 --grad-ckpt", 27028992},
        {"llama_small.json --seq 128 -b 4 -o sgd -p bf16 --grad-ckpt --lora 8 --lora-alpha 16 --lora-dropout 0 "
         "--lora-targets q_proj,v_proj", 4489216},                                        /* HO */
        {"llama_vocab8k.json --seq 100 -b 3 -o sgd -p fp32 --grad-ckpt", 46952448},
    };
    assert_measured(cases, sizeof cases / sizeof *cases, " --loss nll", 1.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_chunks_linear),
        cmocka_unit_test(test_measured),
        cmocka_unit_test(test_nll_refusals),
        cmocka_unit_test(test_nll_copy),
        cmocka_unit_test(test_nll_measured),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
