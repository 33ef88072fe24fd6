/*
 * test_grpo_layouts.c — `--loss grpo` under `--parallel ddp|zero2|zero3|fsdp|fsdp2` (issue 26, loop shapes; src/engine/grpo.c
 * vc__grpo_layout_why and vc__grpo_phases, src/api/request.c vllm_beside). TRL @ f2cd57710ae345ea6428ae95363267fcf38a3dc8:
 *  - generation without vLLM: trl/models/utils.py _unwrap_model_for_generation. Under ZeRO-3 with
 *    ds3_gather_for_generation (default True) deepspeed.zero.GatheredParameters(model.parameters()) around generate():
 *    DeepSpeed @edaa7221 partition_parameters.py GatheredParameters.__enter__ -> Init._all_gather ->
 *    _allgather_params_coalesced: one torch.empty(ds_numel_partition x world) per parameter not yet AVAILABLE (the
 *    persistent ones, ds_numel <= stage3_param_persistence_threshold 1e5, are), the partitions kept. Under ZeRO-2 the
 *    engine is unwrapped and every rank holds the whole 16-bit model: nothing gathered; under DDP the model is
 *    unwrapped (accelerator.unwrap_model), DDP's buckets kept.
 *  - --use-vllm: trl/generation/vllm_generation.py sync_weights: a full fine-tune under ZeRO-3 gathers one parameter at
 *    a time around its push (gather_params([param]) -> _allgather_params_sequential: one tensor), PEFT gathers all at
 *    once around merge_adapter; FSDP1's _sync_fsdp1_params_to_vllm holds one unit whole at a time
 *    (summon_full_params(recurse=False, writeback=False): its padded unsharded flat parameter); FSDP2's
 *    _sync_fsdp2_params_to_vllm one parameter's full_tensor() at a time (test_vllm_fsdp2).
 * One config: Llama-3.2-3B (tests/data/hf/llama-3.2-3b.json: vocab 128256, hidden 3072, intermediate 8192, 28 layers,
 * 24 heads, 8 KV heads of 128, tied embeddings), bf16, 8 completions of 512 tokens after 256-token prompts, 8 GPUs.
 * Every figure below derived by hand from those sizes; the step's own (the layout's plan) and the single-GPU
 * generation plan's are taken from the CLI, as tests/test_grpo.c and the layouts' tests check them.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli_run.h"

#define CFG VC_TEST_DATA "/hf/llama-3.2-3b.json --loss grpo -p bf16 --prompt 256 --new-tokens 512 -b 8"
#define VLLM " --grad-ckpt --use-vllm --gpu h100-80gb"
#define LORA " --lora 16 --lora-targets q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"

/* The integer after `key`, searched after `after`, in the CLI's JSON for args (which must exit 0). */
static long long jget(const char *args, const char *after, const char *key)
{
    cli_run r;
    char a[1024];
    snprintf(a, sizeof a, "%s -f json", args);
    run(&r, a);
    if (r.status != 0) fail_msg("vramcalc %s: exit %d: %s", a, r.status, r.err);
    const char *p = strstr(r.out, after);
    if (!p || !(p = strstr(p, key))) fail_msg("vramcalc %s: no %s after %s", a, key, after);
    return strtoll(p + strlen(key), NULL, 10);
}

/* Hand sizes (elements). 3,212,749,824 parameters; every one divides by 8, so a ZeRO-3 partition is numel / 8. */
#define NPAR 3212749824LL
#define EMBED (128256LL * 3072)        /* embed_tokens (lm_head tied): 394,002,432 */
#define LAYER (2 * 3072LL * 3072 + 2 * 1024LL * 3072 + 3 * 8192LL * 3072) /* q, o; k, v; gate, up, down */
#define NORMS 57                       /* 2 per layer + the final norm, 3072 each: ZeRO-3's persistent ones */
static long long blocks(long long b) { return (b + 511) / 512 * 512; } /* the caching allocator's 512-byte blocks */

/* The weights the ZeRO-3 step keeps per rank (layout_zero3.c zero3_resident, the flat's fp32 partition): the bf16
 * partitions defragmented into one buffer, NPAR / 8 x 2 B = 803,187,456 -> 803,187,712 B in blocks; the fp32 partition
 * (_create_fp32_partitions) NPAR / 8 x 4 = 1,606,374,912 B; the 57 norms gathered whole after every step (_post_step:
 * 3072 x 2 = 6,144 B each); the rotary inv_freq buffer (64 fp32, one block): 2,409,913,344 B. Its optimizer state, Adam's
 * exp_avg and exp_avg_sq of the fp32 partition: 2 x 1,606,374,912 = 3,212,749,824 B. Its gradients kept between steps
 * (_setup_for_real_optimizer: grad_partitions_flat_buffer, bf16, 803,187,712 B in blocks; the IPG bucket,
 * reduce_bucket_size 5e8 x 2 B): 1,803,187,712 B. */
#define Z3_W (blocks(NPAR / 8 * 2) + NPAR / 8 * 4 + NORMS * 6144LL + 512)
#define Z3_OPT (2 * NPAR / 8 * 4)
#define Z3_GRADS (blocks(NPAR / 8 * 2) + 1000000000LL)
/* GatheredParameters around generate(): every non-persistent parameter whole in bf16 (each size a multiple of 512 B):
 * (394,002,432 + 28 x 100,663,296) x 2 = 6,425,149,440 B */
#define Z3_GATHERED ((EMBED + 28 * LAYER) * 2)
/* --use-vllm's buffered batch (grpo.c buffer_numel): per completion 8 x (2 x 256 + 2 x 512) B of ids and masks, 4 B of
 * advantage, old_per_token_logps 512 x 2 B, sampling_per_token_logps 512 x 4 B, the ratio 4 B: 15,368 B x 8, and
 * num_items_in_batch's block: 123,456 -> 123,904 B */
#define VLLM_BUF blocks((8 * (2 * 256 + 2 * 512) + 4 + 512 * 2 + 512 * 4 + 4) * 8 + 512)

static void test_sizes(void **state)
{
    (void)state;
    assert_int_equal(EMBED + 28 * LAYER + (NORMS * 3072LL), NPAR); /* the hand sizes add up to the config's count */
    const char *z3 = CFG " --parallel zero3 --gpus 8";
    assert_int_equal(jget(z3, "\"memory\"", "\"weights\": "), Z3_W);
    assert_int_equal(Z3_W, 2409913344LL);
    assert_int_equal(jget(z3, "\"memory\"", "\"optimizer_states\": "), Z3_OPT);
    assert_int_equal(jget(z3, "\"memory\"", "\"gradients\": "), Z3_GRADS);
    assert_int_equal(VLLM_BUF, 123904);
}

/* zero3 without vLLM. The generation phase is one GPU's generate() over the whole model (the same plan as the single-GPU
 * run's: the unwrapped model after remove_hooks) with the rank's state beside it, so against the single-GPU run's
 * generation phase (test_grpo.c's, measured by grpo_replica.py at small widths): its weights 6,425,499,648 B + inv_freq
 * 512 and its optimizer state (Adam in bf16, 2 x 6,425,499,648 B) out, the ZeRO-3 rank's weights, optimizer state and
 * kept gradients in, and the gathered copies:
 *   generate_peak = one GPU's - 6,425,500,160 - 12,850,999,296 + 2,409,913,344 + 3,212,749,824 + 1,803,187,712
 *                   + 6,425,149,440. */
static void test_zero3(void **state)
{
    (void)state;
    const char *z3 = CFG " --parallel zero3 --gpus 8";
    const long long one = jget(CFG, "\"grpo\"", "\"generate_peak\": ");
    assert_int_equal(jget(CFG, "\"memory\"", "\"weights\": "), NPAR * 2 + 512);
    assert_int_equal(jget(CFG, "\"memory\"", "\"optimizer_states\": "), 2 * NPAR * 2);
    const long long gen = one - (NPAR * 2 + 512) - 2 * NPAR * 2 + Z3_W + Z3_OPT + Z3_GRADS + Z3_GATHERED;
    assert_int_equal(jget(z3, "\"layout\"", "\"gathered\": "), 6425149440LL);
    assert_int_equal(jget(z3, "\"layout\"", "\"resident_grads\": "), Z3_GRADS);
    assert_int_equal(jget(z3, "\"grpo\"", "\"generate_peak\": "), gen);
    assert_int_equal(gen, 14575930368LL);
    /* the KV cache is the generation's own, the same as one GPU's */
    assert_int_equal(jget(z3, "\"grpo\"", "\"kv_cache\": "), jget(CFG, "\"grpo\"", "\"kv_cache\": "));
    /* the step is the layout's (its plan); the peak the larger of the two phases: the step here */
    const long long train = jget(z3, "\"grpo\"", "\"train_peak\": ");
    assert_true(train > gen);
    assert_int_equal(jget(z3, "\"memory\"", "\"peak_allocated\": "), train);
    /* --beta over LoRA: the reference is the policy with its adapters disabled, under the same hooks (no copy); beside
     * the generation only the buffered ref_per_token_logps grow, [8, 512] bf16 = 8,192 B (grpo.c buffer_numel:
     * 98,848 -> 99,328 B in blocks without, 107,040 -> 107,520 B with) */
    assert_int_equal(jget(CFG LORA " --parallel zero3 --gpus 8 --beta 0.04", "\"grpo\"", "\"generate_peak\": ") -
                         jget(CFG LORA " --parallel zero3 --gpus 8", "\"grpo\"", "\"generate_peak\": "),
                     8192);
    /* the table names the gathered copies */
    assert_non_null(strstr(cli_output(z3), "gathered weights      6.0 GiB          6425149440  (GatheredParameters)"));
}

/* zero2 without vLLM: the whole 16-bit model on every rank (stage_1_and_2.py bit16_groups_flat, padded to 2 x 8:
 * NPAR x 2 B) with the fp32 partition (NPAR / 8 x 4 B) and inv_freq: 8,031,875,072 B; Adam's state of the partition,
 * 3,212,749,824 B; nothing gathered, no gradient kept (the layout makes the IPG buffer and grads_in_partition in the
 * backward): generate_peak = one GPU's - 6,425,500,160 - 12,850,999,296 + 8,031,875,072 + 3,212,749,824. */
static void test_zero2(void **state)
{
    (void)state;
    const char *z2 = CFG " --parallel zero2 --gpus 8";
    const long long w = NPAR * 2 + NPAR / 8 * 4 + 512, one = jget(CFG, "\"grpo\"", "\"generate_peak\": ");
    assert_int_equal(jget(z2, "\"memory\"", "\"weights\": "), w);
    assert_int_equal(jget(z2, "\"memory\"", "\"optimizer_states\": "), Z3_OPT);
    assert_int_equal(jget(z2, "\"layout\"", "\"gathered\": "), 0);
    assert_int_equal(jget(z2, "\"layout\"", "\"resident_grads\": "), 0);
    assert_int_equal(jget(z2, "\"grpo\"", "\"generate_peak\": "), one - (NPAR * 2 + 512) - 2 * NPAR * 2 + w + Z3_OPT);
    assert_int_equal(jget(z2, "\"grpo\"", "\"generate_peak\": "), 11969554944LL);
    /* --beta: prepare_deepspeed initializes the reference copy at stage 0 (whole on every rank, as on one GPU) */
    assert_true(jget(CFG " --parallel zero2 --gpus 8 --beta 0.04", "\"grpo\"", "\"train_peak\": ") >
                jget(z2, "\"grpo\"", "\"train_peak\": "));
}

/* ddp without vLLM: accelerator.unwrap_model takes DistributedDataParallel off, generate() runs on the whole model as
 * on one GPU, and DDP's gradient buckets stay allocated (layout_ddp.c; reducer.cpp initialize_buckets at wrap time:
 * every trainable gradient once, 3,212,749,824 x 2 B = 6,425,499,648 B, as test_grpo.c test_vllm_ddp derives):
 * generate_peak = one GPU's + 6,425,499,648. With --beta a full fine-tune's reference copy, which
 * prepare_model(evaluation_mode=True) leaves unwrapped: whole on every rank, its 6,425,500,160 B (the weights and
 * inv_freq, as one GPU's) beside, and the buffered ref log-probs (8,192 B). */
static void test_ddp(void **state)
{
    (void)state;
    const char *d = CFG " --parallel ddp --gpus 2";
    const long long one = jget(CFG, "\"grpo\"", "\"generate_peak\": ");
    assert_int_equal(jget(d, "\"grpo\"", "\"generate_peak\": "), one + NPAR * 2);
    assert_int_equal(jget(d, "\"layout\"", "\"resident_grads\": "), NPAR * 2);
    assert_int_equal(jget(CFG " --parallel ddp --gpus 2 --beta 0.04", "\"grpo\"", "\"generate_peak\": "),
                     one + NPAR * 2 + (NPAR * 2 + 512) + 8192);
}

/* --use-vllm under zero3, zero2 and fsdp (checkpointed, on an H100 80GB at vllm_gpu_memory_utilization 0.3): the engine
 * is sized as on one GPU (its weights 6,459,054,592 B, KV cache 18,767,073,075 B, graphs 8,422,912 B: test_grpo.c
 * test_vllm), beside the step without sleep mode. Between steps the rank holds its weights, optimizer state, kept
 * gradients and the buffered batch (resident); sync_peak = resident + vLLM's weights, KV cache and graphs + the sync's
 * gathered copy; generate_peak = resident + the same three; the peak is the largest of the step + vLLM beside and
 * the two. */
static void check_vllm(const char *args, long long resident, long long gathered, long long sync_temp)
{
    const long long w = 6459054592LL, kv = 18767073075LL, g = 8422912LL;
    assert_int_equal(jget(CFG VLLM, "\"vllm\": {", "\"weights\": "), w);
    assert_int_equal(jget(args, "\"vllm\": {", "\"weights\": "), w);
    assert_int_equal(jget(args, "\"vllm\": {", "\"kv_cache\": "), kv);
    assert_int_equal(jget(args, "\"vllm\": {", "\"graph_memory\": "), g);
    assert_int_equal(jget(args, "\"vllm\": {", "\"resident\": "), resident);
    assert_int_equal(jget(args, "\"layout\"", "\"gathered\": "), gathered);
    assert_int_equal(jget(args, "\"vllm\": {", "\"sync_temp\": "), sync_temp);
    const long long sync = resident + w + kv + g + sync_temp, gen = resident + w + kv + g;
    assert_int_equal(jget(args, "\"vllm\": {", "\"sync_peak\": "), sync);
    assert_int_equal(jget(args, "\"vllm\": {", "\"generate_peak\": "), gen);
    long long peak = jget(args, "\"grpo\"", "\"train_peak\": ") + w + kv + g;
    if (sync > peak) peak = sync;
    assert_int_equal(jget(args, "\"memory\"", "\"peak_allocated\": "), peak);
}

static void test_vllm_layouts(void **state)
{
    (void)state;
    /* zero3, a full fine-tune: resident = 2,409,913,344 + 3,212,749,824 + 1,803,187,712 + 123,904 = 7,425,974,784 B;
     * sync_weights gathers one parameter at a time: the largest, embed_tokens, 394,002,432 x 2 = 788,004,864 B */
    check_vllm(CFG VLLM " --parallel zero3 --gpus 8", Z3_W + Z3_OPT + Z3_GRADS + VLLM_BUF, EMBED * 2, EMBED * 2);
    assert_int_equal(Z3_W + Z3_OPT + Z3_GRADS + VLLM_BUF, 7425974784LL);
    /* zero2: resident = 8,031,875,072 + 3,212,749,824 + 123,904; gather_params a no-op: nothing */
    check_vllm(CFG VLLM " --parallel zero2 --gpus 8", NPAR * 2 + NPAR / 8 * 4 + 512 + Z3_OPT + VLLM_BUF, 0, 0);
    /* fsdp (FULL_SHARD; layout_fsdp1.c: a unit per decoder layer, 100,663,296 + 2 x 3072 = 100,669,440 elements, and the
     * root's, embed_tokens + the final norm, 394,005,504): each rank's shards, ceil(U / 8) elements in bf16 (a layer
     * 12,583,680: 25,167,360 B; the root 49,250,688: 98,501,376 -> 98,501,632 B in blocks), 803,187,712 B, with inv_freq
     * 803,188,224 B; Adam's two bf16 states of them, 2 x 803,187,712 B; no gradient kept (zero_grad(set_to_none=True)
     * frees the sharded ones): resident = 803,188,224 + 1,606,375,424 + 123,904 = 2,409,687,552 B. sync_weights holds
     * one unit whole at a time, the largest the root: 49,250,688 x 8 x 2 = 788,011,008 B */
    const long long shards = 28 * ((LAYER + 2 * 3072) / 8 * 2) + blocks((EMBED + 3072) / 8 * 2), root = (EMBED + 3072) / 8 * 8 * 2;
    assert_int_equal(shards, 803187712LL);
    assert_int_equal(root, 788011008LL);
    check_vllm(CFG VLLM " --parallel fsdp --gpus 8", shards + 512 + 2 * shards + VLLM_BUF, root, root);
    assert_int_equal(shards + 512 + 2 * shards + VLLM_BUF, 2409687552LL);
    /* zero3 with LoRA (rank 16 on every Linear, fp32 adapters): sync_weights gathers every non-persistent parameter at
     * once around merge_adapter: the bf16 base (6,425,149,440 B) and the lora_B of gate_proj / up_proj and lora_A of
     * down_proj (16 x 8192 = 131,072 > 1e5 elements, fp32: 524,288 B each, 3 x 28), the q, k, v, o ones and the others
     * persistent: 6,469,189,632 B; and merge_adapter's largest layer (test_grpo.c test_vllm_sync: gate_proj's
     * 2 x 8192 x 3072 x 4 B = 201,326,592 B) on the gathered weights */
    const char *lz = CFG VLLM LORA " --parallel zero3 --gpus 8";
    const long long gl = Z3_GATHERED + 3 * 28 * 131072LL * 4;
    assert_int_equal(gl, 6469189632LL);
    assert_int_equal(jget(lz, "\"layout\"", "\"gathered\": "), gl);
    assert_int_equal(jget(lz, "\"vllm\": {", "\"sync_temp\": "), gl + 201326592LL);
    /* one rank: FSDP1 runs NO_SHARD (the flat parameter whole, summon_full_params unshards nothing) and ZeRO-3 gathers
     * nothing (_no_gather_coalesced at a partition world of 1) */
    assert_int_equal(jget(CFG VLLM " --parallel fsdp --gpus 1", "\"layout\"", "\"gathered\": "), 0);
    assert_int_equal(jget(CFG " --parallel zero3 --gpus 1", "\"layout\"", "\"gathered\": "), 0);
    /* --vllm-sleep (zero3): vLLM's generate() after wake_up sets the peak, resident + its weights, KV cache, graphs */
    assert_int_equal(jget(CFG VLLM " --parallel zero3 --gpus 8 --vllm-sleep", "\"memory\"", "\"peak_allocated\": "),
                     7425974784LL + 6459054592LL + 18767073075LL + 8422912LL);
}

/* --use-vllm under fsdp2 (fully_shard per decoder layer and on the root, layout_fsdp2.c): each parameter sharded on its
 * own, ceil(dim0 / 8) rows of it per rank in bf16, one allocation each (512-byte blocks): a layer's q, o 2,359,296 B,
 * k, v 786,432 B, gate, up, down 6,291,456 B, its two norms 384 elements -> 1,024 B each: 25,167,872 B; 28 layers
 * 704,700,416 B; embed_tokens 98,500,608 B and the final norm 1,024 B: 803,202,048 B, with inv_freq 803,202,560 B;
 * Adam's two bf16 states per shard 1,606,404,096 B; no gradient kept (zero_grad(set_to_none=True) frees the sharded
 * ones); resident = 803,202,560 + 1,606,404,096 + 123,904 = 2,409,730,560 B. sync_weights (trl @f2cd5771
 * vllm_generation.py _sync_fsdp2_params_to_vllm) takes module.state_dict()'s sharded DTensors one at a time,
 * param.full_tensor() (pytorch @00131b6b placement_types.py Shard._to_replicate_tensor: all_gather_tensor of
 * ceil(dim0 / world) x world rows, unpad_tensor a view of it): the largest, embed_tokens, 128,256 x 3,072 x 2 =
 * 788,004,864 B at 8 ranks (128,256 divides by 8). */
static void test_vllm_fsdp2(void **state)
{
    (void)state;
    long long shards = 28 * (2 * 2359296LL + 2 * 786432LL + 3 * 6291456LL + 2 * 1024LL) + 98500608LL + 1024;
    assert_int_equal(shards, 803202048LL);
    assert_int_equal(shards + 512 + 2 * shards + VLLM_BUF, 2409730560LL);
    check_vllm(CFG VLLM " --parallel fsdp2 --gpus 8", shards + 512 + 2 * shards + VLLM_BUF, EMBED * 2, EMBED * 2);
    /* 7 ranks: 128,256 rows pad to ceil(128,256 / 7) = 18,323 x 7 = 128,261 (the padded all-gather output, narrowed):
     * 128,261 x 3,072 x 2 = 788,035,584 B (a 512 multiple) */
    const char *g7 = CFG VLLM " --parallel fsdp2 --gpus 7";
    assert_int_equal(jget(g7, "\"layout\"", "\"gathered\": "), 788035584LL);
    assert_int_equal(jget(g7, "\"vllm\": {", "\"sync_temp\": "), 18323LL * 7 * 3072 * 2);
    /* HSDP (2 replicas x 4 shards): full_tensor() gathers the shard dimension only, 128,256 rows over 4: the same
     * whole parameter */
    assert_int_equal(jget(CFG VLLM " --parallel fsdp2 --gpus 8 --fsdp-replicate 2", "\"vllm\": {", "\"sync_temp\": "),
                     EMBED * 2);
    /* MixedPrecisionPolicy(param_dtype=bf16) over an fp32 model: the sharded parameters (the state dict's) stay fp32
     * (orig_dtype), so full_tensor() is 788,004,864 x 2 = 1,576,009,728 B */
    assert_int_equal(jget(CFG VLLM " --parallel fsdp2 --gpus 8 -p fp32 --fsdp-param-dtype bf16", "\"vllm\": {",
                          "\"sync_temp\": "),
                     EMBED * 4);
    /* one rank: the all-gather over a world of 1 still writes a new tensor, the whole parameter */
    assert_int_equal(jget(CFG VLLM " --parallel fsdp2 --gpus 1", "\"layout\"", "\"gathered\": "), EMBED * 2);
}

/* fsdp and fsdp2 without vLLM: generate() under the layout's own hooks, every model call a forward.
 *  - FSDP1 (trl @f2cd5771 grpo_trainer.py _generate_single_turn, the same lines in v1.9.0 @35def3ee l.1850-1862:
 *    unwrap_model_for_generation, torch.no_grad(), self._dist.summon_full_params(self.model_wrapped, recurse=False);
 *    trl/distributed.py DistributedBackend.summon_full_params: FSDP.summon_full_params at fsdp_version 1): the root's
 *    flat parameter (embed_tokens + the final norm, 49,250,688 x 8 elements, 788,011,008 B) unsharded through the whole
 *    generate() (pytorch @0ac83aeb _unshard_param_utils.py _unshard_fsdp_state_params: _unshard, resharded on exit);
 *    each decoder unit's own FSDP forward all-gathers its padded flat parameter (100,669,440 x 2 = 201,338,880 B) and
 *    frees it in its post-forward (pytorch @00ae0bc9 _runtime_utils.py _post_forward_reshard: not root and
 *    FULL_SHARD), one unit at a time (forward_prefetch False): 989,349,888 B gathered inside a unit.
 *  - FSDP2 (summon_full_params a no-op): every model call runs the root's pre-forward and each group's pre_forward /
 *    post_forward, under no_grad as with it (pytorch @010ae4a8 _fsdp_param_group.py pre_forward: unshard,
 *    wait_for_unshard; post_forward: reshard, the root's kept by _lazy_init's post_forward_mesh_info = None; @01c9f4fc
 *    _fsdp_state.py _post_forward frees the last all_gather_state). Inside a unit: the root group's unsharded
 *    parameters (788,004,864 + 6,144 B), the unit's (201,338,880 B: each parameter's all_gather_outputs, shard x 8) and
 *    its all_gather_output kept in comm_ctx.all_gather_state until the next group's wait_for_unshard (201,338,880 B):
 *    1,190,688,768 B.
 * The rest of the generation (its activations, KV cache, sampling tensors, the buffered batch) is the one-GPU plan's:
 * one GPU's generate_peak less its weights (6,425,500,160 B) and optimizer state (12,850,999,296 B), 724,930,048 B;
 * beside it the rank's shards and their Adam states (test_vllm_layouts, test_vllm_fsdp2). */
static void test_fsdp_generate(void **state)
{
    (void)state;
    const long long one = jget(CFG, "\"grpo\"", "\"generate_peak\": "), rest = one - (NPAR * 2 + 512) - 2 * NPAR * 2;
    assert_int_equal(rest, 724930048LL);
    const long long unit = (LAYER + 2 * 3072) * 2, root1 = (EMBED + 3072) / 8 * 8 * 2, root2 = EMBED * 2 + 3072 * 2;
    assert_int_equal(unit, 201338880LL);
    const long long s1 = 28 * ((LAYER + 2 * 3072) / 8 * 2) + blocks((EMBED + 3072) / 8 * 2);
    const long long s2 = 28 * (2 * 2359296LL + 2 * 786432LL + 3 * 6291456LL + 2 * 1024LL) + 98500608LL + 1024;
    const char *f1 = CFG " --parallel fsdp --gpus 8", *f2 = CFG " --parallel fsdp2 --gpus 8";
    assert_int_equal(jget(f1, "\"memory\"", "\"weights\": "), s1 + 512);
    assert_int_equal(jget(f1, "\"memory\"", "\"optimizer_states\": "), 2 * s1);
    assert_int_equal(jget(f1, "\"layout\"", "\"gathered\": "), root1 + unit);
    assert_int_equal(root1 + unit, 989349888LL);
    assert_int_equal(jget(f1, "\"grpo\"", "\"generate_peak\": "), rest + s1 + 512 + 2 * s1 + root1 + unit);
    assert_int_equal(rest + s1 + 512 + 2 * s1 + root1 + unit, 4123843584LL);
    assert_int_equal(jget(f2, "\"memory\"", "\"weights\": "), s2 + 512);
    assert_int_equal(jget(f2, "\"memory\"", "\"optimizer_states\": "), 2 * s2);
    assert_int_equal(jget(f2, "\"layout\"", "\"gathered\": "), root2 + 2 * unit);
    assert_int_equal(root2 + 2 * unit, 1190688768LL);
    assert_int_equal(jget(f2, "\"grpo\"", "\"generate_peak\": "), rest + s2 + 512 + 2 * s2 + root2 + 2 * unit);
    assert_int_equal(rest + s2 + 512 + 2 * s2 + root2 + 2 * unit, 4325225472LL);
    /* the KV cache is the generation's own; the step (the layout's plan) sets the peak */
    assert_int_equal(jget(f1, "\"grpo\"", "\"kv_cache\": "), 703725568LL);
    assert_int_equal(jget(f2, "\"grpo\"", "\"kv_cache\": "), 703725568LL);
    assert_int_equal(jget(f2, "\"memory\"", "\"peak_allocated\": "), jget(f2, "\"grpo\"", "\"train_peak\": "));
    /* fsdp2 --fsdp-reshard-after-forward false: every group stays unsharded after its forward (the decoding step
     * gathers nothing): the whole model, 3,212,749,824 x 2 B; true: the root reshards after each call too, so the
     * decoding step's root pre-forward gathers it again and its all-gather output is kept until unit 1's
     * wait_for_unshard, which comes after unit 1's all-gather output is made: 2 x 788,011,008 + 201,338,880 B */
    assert_int_equal(jget(CFG " --parallel fsdp2 --gpus 8 --fsdp-reshard-after-forward false", "\"layout\"",
                          "\"gathered\": "),
                     NPAR * 2);
    assert_int_equal(jget(CFG " --parallel fsdp2 --gpus 8 --fsdp-reshard-after-forward true", "\"layout\"",
                          "\"gathered\": "),
                     2 * root2 + unit);
    /* one rank: FSDP1's NO_SHARD unshards nothing; FSDP2 at world 1 copies each parameter into its all_gather_outputs
     * (wait_for_unshard's world_size == 1 branch: all_gather_input copied, no all-gather output kept) */
    assert_int_equal(jget(CFG " --parallel fsdp --gpus 1", "\"layout\"", "\"gathered\": "), 0);
    assert_int_equal(jget(CFG " --parallel fsdp2 --gpus 1", "\"layout\"", "\"gathered\": "), root2 + unit);
    /* --grad-ckpt: unwrap_model_for_generation turns checkpointing off around generate() (test_grad_ckpt) */
    assert_int_equal(jget(CFG " --parallel fsdp --gpus 8 --grad-ckpt", "\"grpo\"", "\"generate_peak\": "), 4123843584LL);
    /* the table names them */
    assert_non_null(strstr(cli_output(f1), "gathered weights    943.5 MiB           989349888  (summoned root, a unit)"));
    assert_non_null(strstr(cli_output(f2), "gathered weights      1.1 GiB          1190688768  (all-gathers at peak)"));
}

/* What is refused, one line each, naming --parallel (or --trace): */
static void test_refused(void **state)
{
    (void)state;
    static const struct {
        const char *args, *msg;
    } bad[] = {
        {VLLM LORA " --parallel fsdp --gpus 8", "--parallel: grpo with adapters under fsdp or fsdp2 is not modelled"},
        {VLLM LORA " --parallel fsdp2 --gpus 8", "--parallel: grpo with adapters under fsdp or fsdp2 is not modelled"},
        {LORA " --parallel fsdp --gpus 8", "--parallel: grpo with adapters under fsdp or fsdp2 is modelled with a full "
                                           "fine-tune only"},
        {LORA " --parallel fsdp2 --gpus 8", "--parallel: grpo with adapters under fsdp or fsdp2 is modelled with a full "
                                            "fine-tune only"},
        {" --parallel fsdp --gpus 8 --beta 0.04", "--parallel: grpo with --beta under zero3, fsdp or fsdp2 is not "
                                                 "modelled for a full fine-tune"},
        {" --parallel fsdp --gpus 8 --fsdp-use-orig-params", "--parallel: grpo under fsdp is modelled without "
                                                             "MixedPrecision or use_orig_params"},
        {" --parallel fsdp2 --gpus 8 --offload params", "--parallel: grpo with --offload is not modelled"},
        {VLLM " --parallel fsdp2 --gpus 8 --beta 0.04", "--parallel: grpo with --beta under zero3, fsdp or fsdp2 is not "
                                                       "modelled for a full fine-tune"},
        {VLLM " --parallel fsdp2 --gpus 8 --trace", "--trace with --use-vllm under --parallel fsdp2 is not written"},
        {VLLM " --parallel fsdp --gpus 8 --fsdp-param-dtype bf16", "--parallel: grpo under fsdp is modelled without "
                                                                   "MixedPrecision or use_orig_params"},
        {" --parallel zero3 --gpus 8 --beta 0.04", "--parallel: grpo with --beta under zero3, fsdp or fsdp2 is not "
                                                  "modelled for a full fine-tune"},
        {" --parallel zero3 --gpus 8 --offload optimizer", "--parallel: grpo with --offload is not modelled"},
        {" --parallel zero3 --gpus 8 --qlora", "--parallel: grpo over quantized weights under a sharded layout is not "
                                               "modelled"},
        {" --parallel shard-grad-op --gpus 8", "--parallel: grpo is modelled on one GPU and under ddp, zero2, zero3, "
                                               "fsdp and fsdp2 (TRL's generation and weight sync under the others are "
                                               "not)"},
        {" --parallel zero1 --gpus 8", "--parallel: grpo is modelled on one GPU and under ddp, zero2, zero3"},
        {VLLM " --parallel zero3 --gpus 8 --trace", "--trace with --use-vllm under --parallel zero3 is not written"},
    };
    char a[1024];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(a, sizeof a, "%s%s", CFG, bad[i].args);
        assert_usage(a, bad[i].msg);
    }
}

/* --grad-ckpt without vLLM, on one GPU and under each layout: _unwrap_model_for_generation (trl/models/utils.py
 * @ f2cd5771 l.133-136, 151-152) turns gradient checkpointing off around generate() and on again after it, so the
 * generation keeps its DynamicCache: after the last step 767 tokens fed (256 + 512 - 1), per layer keys and values
 * [8, 8 KV heads, 767, 128] bf16 = 12,566,528 B each (a 512 multiple), 28 layers: 703,725,568 B. The state resident
 * beside the generation does not depend on checkpointing (no activations between steps), so each layout's
 * generate_peak is its own without --grad-ckpt. */
static void test_grad_ckpt(void **state)
{
    (void)state;
    static const char *const layouts[] = {"", " --parallel zero3 --gpus 8", " --parallel zero2 --gpus 8",
                                          " --parallel ddp --gpus 2"};
    char a[512], h[512];
    assert_int_equal(2 * 28 * 8LL * 8 * 767 * 128 * 2, 703725568LL);
    for (size_t i = 0; i < sizeof layouts / sizeof *layouts; i++) {
        snprintf(a, sizeof a, "%s%s --grad-ckpt", CFG, layouts[i]);
        snprintf(h, sizeof h, "%s%s", CFG, layouts[i]);
        assert_int_equal(jget(a, "\"grpo\"", "\"kv_cache\": "), 703725568LL);
        assert_int_equal(jget(a, "\"grpo\"", "\"generate_peak\": "), jget(h, "\"grpo\"", "\"generate_peak\": "));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),   cmocka_unit_test(test_zero3),        cmocka_unit_test(test_zero2),
        cmocka_unit_test(test_ddp),     cmocka_unit_test(test_vllm_layouts), cmocka_unit_test(test_refused),
        cmocka_unit_test(test_grad_ckpt), cmocka_unit_test(test_vllm_fsdp2), cmocka_unit_test(test_fsdp_generate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
