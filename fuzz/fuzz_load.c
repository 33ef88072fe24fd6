/*
 * fuzz_load.c — libFuzzer harness: model text -> vc_model_load_string ->
 * vc_estimate / vc_trace under several option sets: train and infer, and
 * (issue 29) generate with every cache, the parallel layouts (and a
 * pipeline), quantized weights, LoRA and vLLM serving (vc_serve).
 *
 * Build: cmake -DCMAKE_C_COMPILER=clang -DVRAMCALC_FUZZ=ON (see fuzz/run.sh).
 * Besides ASan/UBSan findings, the harness aborts when a successful call
 * breaks an invariant the report relies on (a negative or wrapped byte
 * figure, peak parts that do not sum to peak_allocated, an error without a
 * message), and when an error is not a single printable line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vramcalc/vramcalc.h"

/* The input being run, for reports in keep-going mode. */
static const uint8_t *cur_data;
static size_t cur_size;

/* A broken invariant aborts (a libFuzzer crash with the input saved), or
 * with VC_FUZZ_KEEP_GOING set (fuzz/run.sh, KEEP_GOING=1) is reported once
 * per line, the input written to $VC_FUZZ_ARTIFACTS/invariant-LINE.json. */
static void invariant_failed(int line, const char *cond)
{
    static unsigned char seen[4096];
    const char *keep = getenv("VC_FUZZ_KEEP_GOING");
    if (keep && *keep && line >= 0 && line < (int)sizeof seen) {
        if (seen[line]) return;
        seen[line] = 1;
    }
    fprintf(stderr, "fuzz_load: invariant failed at %s:%d: %s\n", __FILE__, line, cond);
    if (!keep || !*keep) abort();
    const char *dir = getenv("VC_FUZZ_ARTIFACTS");
    char path[1024];
    snprintf(path, sizeof path, "%s/invariant-%d.json", dir && *dir ? dir : ".", line);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(cur_data, 1, cur_size, f);
        fclose(f);
        fprintf(stderr, "fuzz_load: input written to %s\n", path);
    }
}

#define CHECK(cond)                                                  \
    do {                                                             \
        if (!(cond)) invariant_failed(__LINE__, #cond);              \
    } while (0)

static void check_error(vc_status st, const vc_error *err)
{
    CHECK(st != VC_OK);
    CHECK(err->code == st);
    char line[1400];
    vc_error_format(err, line, sizeof line);
    CHECK(line[0] != '\0');
    for (const char *p = line; *p; p++) CHECK(*p != '\n' && *p != '\r');
    CHECK(err->line >= 0 && err->col >= 0);
    CHECK(err->msg[0] != '\0');
}

static void check_result(const vc_model *m, const vc_result *r)
{
    const vc_memory *mm = &r->memory;
    CHECK(r->parameters >= 0 && r->trainable_parameters >= 0);
    CHECK(r->trainable_parameters <= r->parameters);
    CHECK(r->parameters == vc_model_parameters(m));
    CHECK(mm->weights >= 0 && mm->gradients >= 0 && mm->optimizer_states >= 0);
    CHECK(mm->activations >= 0 && mm->workspace >= 0);
    CHECK(mm->peak_allocated >= 0 && mm->reserved >= 0 && mm->cuda_context >= 0);
    CHECK(mm->nccl >= 0 && mm->total == mm->reserved + mm->cuda_context + mm->nccl); /* NCCL's buffers on several GPUs (nccl.c) */
    const vc_peak *pk = &r->peak;
    CHECK(pk->weights >= 0 && pk->gradients >= 0 && pk->optimizer_states >= 0);
    CHECK(pk->activations >= 0 && pk->temporaries >= 0 && pk->workspace >= 0);
    /* SPEC §3: the parts sum exactly to peak_allocated (no wrap: all >= 0 and bounded by it). */
    int64_t sum = 0;
    CHECK(!__builtin_add_overflow(sum, pk->weights, &sum));
    CHECK(!__builtin_add_overflow(sum, pk->gradients, &sum));
    CHECK(!__builtin_add_overflow(sum, pk->optimizer_states, &sum));
    CHECK(!__builtin_add_overflow(sum, pk->activations, &sum));
    CHECK(!__builtin_add_overflow(sum, pk->temporaries, &sum));
    CHECK(!__builtin_add_overflow(sum, pk->workspace, &sum));
    CHECK(sum == mm->peak_allocated);
    CHECK(mm->peak_allocated % 512 == 0);
    for (size_t i = 0; i < r->nlayers; i++) {
        CHECK(r->layers[i].parameters >= 0 && r->layers[i].activations >= 0);
        CHECK(r->layers[i].ndim >= 0 && r->layers[i].ndim <= VC_MAX_DIMS);
    }
}

static void sink(void *ctx, const char *text)
{
    (void)text;
    ++*(size_t *)ctx;
}

static void run(const vc_model *m, const vc_options *o, int trace)
{
    vc_error err;
    memset(&err, 0, sizeof err);
    vc_result r;
    vc_status st = vc_estimate(m, o, &r, &err);
    if (st == VC_OK) check_result(m, &r);
    else check_error(st, &err);
    vc_result_free(&r);
    if (trace) {
        size_t n = 0;
        memset(&err, 0, sizeof err);
        st = vc_trace(m, o, sink, &n, &err);
        if (st != VC_OK) check_error(st, &err);
    }
}

/* SPEC §3: the estimator gives what vc_estimate gives; total never
 * decreases with the batch; max batch N fits and N + 1 does not. */
static void check_estimator(const vc_model *m, size_t size)
{
    vc_options o;
    vc_options_init(&o);
    o.mode = size % 2 ? VC_MODE_INFER : VC_MODE_TRAIN;
    o.precision = (vc_precision)(size % 7);
    vc_error err;
    memset(&err, 0, sizeof err);
    vc_estimator *e = NULL;
    vc_status st = vc_estimator_new(m, &o, VC_EST_NO_LAYERS, &e, &err);
    if (st != VC_OK) {
        check_error(st, &err);
        return;
    }
    int64_t prev = -1;
    static const int64_t batches[] = {1, 2, 3, 64, 65, 1000, 1001};
    for (size_t i = 0; i < sizeof batches / sizeof *batches; i++) {
        int64_t t = 0;
        memset(&err, 0, sizeof err);
        st = vc_estimator_total(e, batches[i], &t, &err);
        if (st != VC_OK) {
            check_error(st, &err);
            break;
        }
        CHECK(t >= prev); /* never decreases as the batch grows */
        prev = t;
        if (batches[i] == 3) {
            vc_result a, b;
            vc_options ob = o;
            ob.batch = 3;
            memset(&err, 0, sizeof err);
            if (vc_estimator_run(e, 3, &a, &err) == VC_OK) {
                check_result(m, &a);
                if (vc_estimate(m, &ob, &b, &err) == VC_OK) {
                    CHECK(a.memory.peak_allocated == b.memory.peak_allocated);
                    CHECK(a.memory.total == b.memory.total);
                    vc_result_free(&b);
                }
                vc_result_free(&a);
            }
        }
    }
    int64_t cap = INT64_C(1) << (20 + size % 20), mb = -1;
    int n = 0;
    memset(&err, 0, sizeof err);
    st = vc_estimator_max_batch(e, cap, &mb, &n, &err);
    if (st == VC_OK) {
        CHECK(mb >= 0 && mb <= VC_MAX_BATCH_LIMIT);
        CHECK(n >= 0 && n < 400);
        int64_t t;
        if (mb > 0 && vc_estimator_total(e, mb, &t, &err) == VC_OK) CHECK(t <= cap);
        memset(&err, 0, sizeof err);
        if (mb < VC_MAX_BATCH_LIMIT && vc_estimator_total(e, mb + 1, &t, &err) == VC_OK) CHECK(t > cap);
    } else {
        check_error(st, &err);
    }
    vc_estimator_free(e);
}

/* vc_serve (src/engine/serve.c): the pool is what is left of the request, its
 * blocks hold its tokens, concurrency is whole requests. */
static void check_serve(const vc_model *m, size_t size)
{
    static const char *const cards[] = {"h100-80gb", "rtx4090", "a100-40gb", "1GB"};
    vc_gpu_spec g;
    vc_error err;
    memset(&err, 0, sizeof err);
    if (vc_gpu_parse(cards[size % 4], &g, &err) != VC_OK) return;
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_INFER;
    o.prompt = (int64_t)(size % 3 ? 1 + size % 600 : INT64_C(1) << 40);
    o.new_tokens = 1 + (int64_t)(size % 17);
    vc_serve_options so;
    vc_serve_options_init(&so);
    if (size % 5 == 1) so.max_num_batched_tokens = 1;
    if (size % 7 == 2) so.block_size = 32;
    if (size % 11 == 3) so.gpu_memory_utilization = 1.0;
    if (size % 13 == 4) so.kv_cache_dtype = (vc_kv_dtype)(size % VC_KV__N);
    vc_serve_result r;
    memset(&r, 0, sizeof r);
    memset(&err, 0, sizeof err);
    vc_status st = vc_serve(m, &o, &so, &g, &r, &err);
    if (st != VC_OK) {
        check_error(st, &err);
        return;
    }
    CHECK(r.weights >= 0 && r.profile_peak >= r.weights && r.requested > 0 && r.page_bytes > 0);
    CHECK(r.non_torch >= 0 && r.non_torch == r.non_torch_cublas + r.non_torch_kernels + r.non_torch_nccl + r.non_torch_logits_nccl);
    /* vLLM's non-torch increase and its CUDA graphs' measure, vramcalc's estimate by default (serve.c, serve_graphs.c) */
    CHECK(r.graphs_subtracted >= 0 && r.graphs_subtracted == (r.graphs_profiled ? r.graphs_estimate : 0));
    CHECK(r.kv_cache == r.requested - r.profile_peak - r.non_torch - r.graphs_subtracted && r.kv_cache > 0);
    CHECK(r.blocks >= 0 && r.blocks <= r.kv_cache / r.page_bytes);
    CHECK(r.tokens == r.blocks * so.block_size);
    CHECK(r.request_tokens == o.prompt + o.new_tokens);
    CHECK(r.concurrency >= 1 && r.max_num_seqs >= 1 && r.max_num_batched_tokens >= 1);
}

/* Generation (every cache), the parallel layouts, quantized weights and
 * LoRA adapters: each either estimates within the invariants or refuses
 * with one line. After: no adapters, dense weights. */
static void run_newer(vc_model *m, size_t size)
{
    vc_options o;
    vc_options_init(&o);
    o.mode = VC_MODE_GENERATE;
    o.batch = 1 + (int64_t)(size % 3);
    o.prompt = 1 + (int64_t)(size % 64);
    o.new_tokens = 1 + (int64_t)(size % 5);
    o.cache = (vc_cache)(size % VC_CACHE__N);
    o.kv_bits = size % 2 ? 2 : 4;
    o.precision = size % 2 ? VC_PREC_BF16 : VC_PREC_FP16;
    run(m, &o, 0);

    vc_options_init(&o);
    o.parallel = (vc_parallel)(size % VC_PARALLEL__N);
    o.gpus = INT64_C(1) << (size % 4);
    o.precision = o.parallel == VC_PARALLEL_MEGATRON || o.parallel == VC_PARALLEL_MEGATRON_DIST ? VC_PREC_MIXED_BF16
                                                                                                : VC_PREC_AMP_BF16;
    o.offload = (vc_offload)(size / 7 % VC_OFFLOAD__N);
    o.batch = 2;
    run(m, &o, 0);

    vc_options_init(&o);
    o.parallel = VC_PARALLEL_MEGATRON;
    o.precision = VC_PREC_MIXED_BF16;
    o.pp = 2;
    o.gpus = 2 * (1 + (int64_t)(size % 2));
    o.micro_batches = 1 + (int64_t)(size % 4);
    run(m, &o, 0);

    static const char *const formats[] = {"nf4", "int8", "gptq4", "awq4", "fp8-block", "fp8"};
    vc_quant q;
    vc_error err;
    memset(&err, 0, sizeof err);
    if (vc_quant_from_name(formats[size % 6], &q) >= 0) {
        vc_status st = vc_model_set_weights(m, &q, &err);
        if (st == VC_OK) {
            vc_options_init(&o);
            o.mode = VC_MODE_INFER;
            o.precision = VC_PREC_BF16;
            run(m, &o, 0);
            vc_quant_from_name("dense", &q);
            memset(&err, 0, sizeof err);
            CHECK(vc_model_set_weights(m, &q, &err) == VC_OK);
        } else {
            check_error(st, &err);
        }
    }

    vc_lora l;
    vc_lora_init(&l);
    l.r = 1 + (int64_t)(size % 16);
    snprintf(l.targets, sizeof l.targets, "%s", size % 2 ? "q_proj,v_proj" : "0,1,2,fc1,fc2,proj");
    memset(&err, 0, sizeof err);
    vc_status st = vc_model_set_lora(m, &l, &err);
    if (st == VC_OK) {
        vc_options_init(&o);
        o.precision = VC_PREC_AMP_BF16;
        run(m, &o, 0);
        l.r = 0;
        memset(&err, 0, sizeof err);
        CHECK(vc_model_set_lora(m, &l, &err) == VC_OK);
    } else {
        check_error(st, &err);
    }

    check_serve(m, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cur_data = data;
    cur_size = size;
    /* short inputs double as --gpu / size strings (src/engine/gpu.c) */
    if (size < 48) {
        char spec[48];
        memcpy(spec, data, size);
        spec[size] = '\0';
        vc_gpu_spec g;
        vc_error ge;
        memset(&ge, 0, sizeof ge);
        vc_status gs = vc_gpu_parse(spec, &g, &ge);
        if (gs == VC_OK) CHECK(g.capacity >= 0 && g.capacity <= g.total);
        else check_error(gs, &ge);
        int64_t bytes;
        memset(&ge, 0, sizeof ge);
        gs = vc_parse_size(spec, &bytes, &ge);
        if (gs == VC_OK) CHECK(bytes >= 0);
        else check_error(gs, &ge);
    }
    vc_model *m = NULL;
    vc_error err;
    vc_status st = vc_model_load_string((const char *)data, size, "fuzz.json", &m, &err);
    if (st != VC_OK) {
        check_error(st, &err);
        CHECK(m == NULL);
        /* inputs here are small: "out of memory" would mean the loader's JSON
         * validator accepted text that cJSON then refused */
        CHECK(st != VC_ERR_NOMEM);
        /* every error about a place in the file has a position */
        if (st == VC_ERR_PARSE && size > 0) CHECK(err.line > 0 || !strncmp(err.msg, "the file", 8));
        if (st == VC_ERR_MODEL) CHECK(err.line > 0);
        return 0;
    }
    CHECK(vc_model_parameters(m) >= 0 && vc_model_trainable_parameters(m) >= 0);
    CHECK(vc_model_layer_count(m) <= VC_MAX_LAYERS);
    /* Big models take seconds and gigabytes to simulate (1M Linear layers:
     * ~2 GiB natively, more under ASan); loading them is still fuzzed. */
    if (vc_model_layer_count(m) > 50000) {
        vc_model_free(m);
        return 0;
    }
    int small = vc_model_layer_count(m) <= 2000;

    vc_options o;
    vc_options_init(&o); /* train, adam, fp32, batch 1 */
    run(m, &o, small);

    vc_options_init(&o);
    o.mode = VC_MODE_INFER;
    o.batch = 7;
    o.precision = VC_PREC_FP16;
    run(m, &o, 0);

    if (small) {
        vc_options_init(&o);
        o.batch = 32;
        o.optim = VC_OPTIM_SGD;
        o.precision = VC_PREC_AMP_BF16;
        o.accumulate = 4;
        o.attention = VC_ATTN_MATH;
        o.workspace = 0;
        run(m, &o, 0);

        vc_options_init(&o);
        o.batch = 3;
        o.optim = VC_OPTIM_ADAMW;
        o.optim_impl = VC_IMPL_FORLOOP;
        o.precision = VC_PREC_MIXED_FP16;
        o.hopper = 1;
        run(m, &o, 0);

        /* a batch that overflows 64-bit byte counts (per tensor, or only in the
         * sums of many), or that an int would truncate */
        static const int64_t huge[] = {INT64_C(1) << 62, INT64_C(1) << 40, (INT64_C(1) << 33) + 5, (INT64_C(1) << 31) + 7};
        vc_options_init(&o);
        o.batch = huge[size % 4];
        o.optim = VC_OPTIM_MOMENTUM;
        run(m, &o, 1);

        /* the estimator behind --sweep and --max-batch (src/engine/sweep.c) */
        if (vc_model_layer_count(m) <= 100 && size % 4 == 0) check_estimator(m, size);

        /* the newer surfaces (issue 29): generation, parallel layouts,
         * quantized weights, LoRA, vLLM serving; choices from the input size */
        if (vc_model_layer_count(m) <= 200) run_newer(m, size);

        /* --input override, then estimate again */
        int64_t dims[3] = {4, 8, (int64_t)(size % 13) + 1};
        memset(&err, 0, sizeof err);
        st = vc_model_set_input_shape(m, dims, 1 + (int)(size % 3), &err);
        if (st == VC_OK) {
            vc_options_init(&o);
            o.batch = 2;
            run(m, &o, 0);
        } else {
            check_error(st, &err);
        }
    }
    vc_model_free(m);
    return 0;
}
