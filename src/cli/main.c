/*
 * main.c — the vramcalc command line (SPEC §2). Parses options, calls the
 * library, prints a report. Exit status: 0 estimated (and fits), 1 does not
 * fit --gpu, 2 bad usage or a bad model file. A sweep exits 0 unless an
 * error: each row carries its own fit.
 */
#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "main.h"

/* --help: this, the options table (cli_options[], options.c), usage_tail. */
static const char usage_head[] =
    "usage: vramcalc MODEL.json [options]        (MODEL may be - for standard input)\n"
    "       vramcalc --params N [--activations N] [options]\n"
    "\n"
    "options:\n";
static const char usage_tail[] =
    "\n"
    "SIZE is bytes, or a number with a unit: 512MiB, 24GiB, 80GB, 1.5TB (KB/MB/GB/TB\n"
    "are powers of 1000, KiB/MiB/GiB/TiB powers of 1024).\n"
    "Exit status: 0 estimated (and fits), 1 does not fit --gpu, 2 bad usage or bad\n"
    "model file; with --sweep, 0 unless an error (each row says whether it fits).\n";

/* The model file's JSON tree is built and freed inside vc_model_load_file,
 * one malloc per value (thousands for a large model); the CLI owns the
 * process, so it lends cJSON a bump allocator for that call and drops it
 * whole afterwards (the library keeps no cJSON value). */
typedef struct json_chunk {
    struct json_chunk *next;
    size_t used, cap;
    max_align_t data[];
} json_chunk;
static json_chunk *json_chunks;

static void *json_alloc(size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    json_chunk *c = json_chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > (size_t)60 << 10 ? n : (size_t)60 << 10; /* under the mmap threshold: freed chunks are reused */
        if (!(c = malloc(sizeof *c + cap))) return NULL;
        c->next = json_chunks;
        c->used = 0;
        c->cap = cap;
        json_chunks = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    return p;
}

static void json_free(void *p) { (void)p; }

static void json_arena_release(void)
{
    while (json_chunks) {
        json_chunk *c = json_chunks;
        json_chunks = c->next;
        free(c);
    }
}


/* The CLI's one flow, top to bottom: the options, the combinations refused,
 * the model (and its LoRA, weights, input), then one of the reports. It is
 * longer than the project's ~100 lines on purpose: the parsed options are
 * its ~30 locals, and split into steps they would be passed around as a
 * struct that every step reads whole. */
int vc_cli_main(int argc, char **argv, FILE *out, FILE *errf)
{
    static struct option longopts[CLI_MAX_OPTIONS + 1];
    static char shortopts[3 * CLI_MAX_OPTIONS + 2];
    cli_getopt_tables(cli_options, cli_noptions, longopts, shortopts);
    cli_out = out;
    cli_err = errf;
    model_file = NULL;
    optind = 0; /* glibc: start afresh (vc_cli_main may run more than once in a process) */
    vc_options o;
    vc_options_init(&o);
    cli c;
    memset(&c, 0, sizeof c);
    c.format = "table";
    const char *input = NULL, *gpu = NULL, *sweep = NULL;
    bool have_acts = false, trace = false, batch_given = false, no_color = false, gpus = false;
    int64_t params = 0, acts = 0;
    vc_hf_options hf; /* --seq, --moe-imbalance, --emit-model, --grad-ckpt */
    vc_hf_options_init(&hf);
    vc_lora lora; /* --lora, --lora-alpha, --lora-dropout, --lora-targets */
    vc_lora_init(&lora);
    bool hf_given = false, loss_given = false, emit = false, gen_given = false, max_context = false, prompt_given = false, impl_given = false, kvq_given = false, kv_dtype_given = false;
    bool serve = false, serve_given = false, mode_given = false;
    vc_serve_options so; /* --serve and its vLLM settings */
    vc_serve_options_init(&so);
    vc_quant quant; /* --weights, --qlora */
    const char *weights = NULL;
    bool qlora = false, prec_given = false;
    int ch, rc;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        switch (ch) {
        case 'b': batch_given = true; if ((rc = parse_count("--batch", optarg, 1, &o.batch))) return rc; break;
        case OPT_INPUT: input = optarg; break;
        case OPT_SEQ: hf_given = true; if ((rc = parse_count("--seq", optarg, 1, &hf.seq))) return rc; break;
        case OPT_MOE: {
            char *end;
            errno = 0;
            hf.moe_imbalance = strtod(optarg, &end);
            hf_given = true;
            if (errno || end == optarg || *end || !(hf.moe_imbalance >= 1.0 && hf.moe_imbalance <= 1e6))
                return die("--moe-imbalance: expected a number from 1 to 1000000 (1: tokens spread evenly over the experts)");
            break;
        }
        case OPT_EMIT: emit = true; break;
        case OPT_GPUS: if ((rc = parse_count("--gpus", optarg, 1, &o.gpus))) return rc; break;
        case OPT_TP: if ((rc = parse_count("--tp", optarg, 1, &o.tp))) return rc; break;
        case OPT_SP: o.sp = 1; break;
        case OPT_PP: if ((rc = parse_count("--pp", optarg, 1, &o.pp))) return rc; break;
        case OPT_EP: if ((rc = parse_count("--ep", optarg, 1, &o.ep))) return rc; break;
        case OPT_MICRO: if ((rc = parse_count("--micro-batches", optarg, 1, &o.micro_batches))) return rc; break;
        case OPT_PP_VIRTUAL: if ((rc = parse_count("--pp-virtual", optarg, 1, &o.pp_virtual))) return rc; break;
        case OPT_PARALLEL: if ((rc = choose("--parallel", optarg, o.parallel = vc_parallel_from_name(optarg), VC_CHOICES(VC_PARALLEL_MAP)))) return rc; break;
        case OPT_OFFLOAD: if ((rc = choose("--offload", optarg, o.offload = vc_offload_from_name(optarg), VC_CHOICES(VC_OFFLOAD_MAP)))) return rc; break;
        case OPT_FSDP_PARAM_DT:
            if ((rc = choose("--fsdp-param-dtype", optarg, o.fsdp_param_dtype = vc_fsdp_dtype_from_name(optarg), VC_CHOICES(VC_FSDP_DTYPE_MAP)))) return rc;
            break;
        case OPT_FSDP_REDUCE_DT:
            if ((rc = choose("--fsdp-reduce-dtype", optarg, o.fsdp_reduce_dtype = vc_fsdp_dtype_from_name(optarg), VC_CHOICES(VC_FSDP_DTYPE_MAP)))) return rc;
            break;
        case OPT_FSDP_RESHARD: if ((rc = parse_reshard(optarg, &o.fsdp_reshard))) return rc; break;
        case OPT_GRAD_VIEW: o.gradient_as_bucket_view = 1; break;
        case OPT_PARAM_VIEW: o.parameters_as_bucket_view = 1; break;
        case OPT_FSDP_REPLICATE: if ((rc = parse_count("--fsdp-replicate", optarg, 1, &o.fsdp_replicate))) return rc; break;
        case OPT_FSDP_ORIG: o.fsdp_use_orig_params = 1; break;
        case OPT_DS_OVERLAP: if ((rc = parse_overlap(optarg, &o.ds_overlap_comm))) return rc; break;
        case OPT_OFFLOAD_DEV:
            o.offload_device = !strcmp(optarg, "cpu") ? VC_OFFLOAD_DEVICE_CPU : !strcmp(optarg, "nvme") ? VC_OFFLOAD_DEVICE_NVME : -1;
            if ((rc = choose("--offload-device", optarg, o.offload_device, "cpu, nvme"))) return rc;
            break;
        case OPT_NVME_GDS: o.nvme_gds = 1; break;
        case OPT_GRAD_CKPT: hf_given = true; hf.checkpoint = 1; break;
        case OPT_LOSS:
            hf_given = loss_given = true;
            if ((rc = choose("--loss", optarg, (int)(hf.loss = (vc_loss_impl)vc_loss_impl_from_name(optarg)), VC_CHOICES(VC_LOSS_MAP)))) return rc;
            break;
        case OPT_PROMPT: gen_given = prompt_given = true; if ((rc = parse_count("--prompt", optarg, 1, &o.prompt))) return rc; break;
        case OPT_NEW_TOKENS: gen_given = true; if ((rc = parse_count("--new-tokens", optarg, 1, &o.new_tokens))) return rc; break;
        case OPT_MAX_CONTEXT: max_context = true; break;
        case OPT_SERVE: serve = true; break;
        case OPT_GPU_UTIL: serve_given = true; if ((rc = parse_real("--gpu-memory-utilization", optarg, 1e-6, 1.0, &so.gpu_memory_utilization))) return rc; break;
        case OPT_MAX_TOKENS: serve_given = true; if ((rc = parse_count("--max-num-batched-tokens", optarg, 1, &so.max_num_batched_tokens))) return rc; break;
        case OPT_MAX_SEQS: serve_given = true; if ((rc = parse_count("--max-num-seqs", optarg, 1, &so.max_num_seqs))) return rc; break;
        case OPT_BLOCK: serve_given = true; if ((rc = parse_count("--block-size", optarg, 1, &so.block_size))) return rc; break;
        case OPT_KV_DTYPE: serve_given = kv_dtype_given = true; if ((rc = choose("--kv-cache-dtype", optarg, so.kv_cache_dtype = vc_kv_dtype_from_name(optarg), VC_CHOICES(VC_KV_DTYPE_MAP)))) return rc; break;
        case OPT_KV_BITS: case OPT_KV_GROUP: case OPT_KV_RESIDUAL: {
            int64_t v;
            const char *name = ch == OPT_KV_BITS ? "--kv-bits" : ch == OPT_KV_GROUP ? "--kv-group-size" : "--kv-residual-length";
            gen_given = kvq_given = true;
            if ((rc = parse_count(name, optarg, ch == OPT_KV_RESIDUAL ? 0 : 1, &v))) return rc;
            if (ch == OPT_KV_BITS) o.kv_bits = v > 1000 ? 1000 : (int)v; /* 2 or 4: the library's check */
            else if (ch == OPT_KV_GROUP) o.kv_group = v;
            else o.kv_residual = v;
            break;
        }
        case OPT_CACHE: gen_given = true; if ((rc = choose("--cache", optarg, o.cache = vc_cache_from_name(optarg), VC_CHOICES(VC_CACHE_MAP)))) return rc; break;
        case OPT_WEIGHTS:
            weights = optarg;
            if (vc_quant_from_name(optarg, &quant))
                return die("--weights: unknown value '%s' (choose nf4, fp4, int8, gptq4, gptq8, gptq3, gptq2, awq4, fp8, fp8-channel, fp8-block or dense)", optarg);
            break;
        case OPT_QLORA: qlora = true; break;
        case OPT_LORA: if ((rc = parse_count("--lora", optarg, 1, &lora.r))) return rc; break;
        case OPT_LORA_ALPHA: if ((rc = parse_real("--lora-alpha", optarg, 1e-9, 1e12, &lora.alpha))) return rc; break;
        case OPT_LORA_DROPOUT: if ((rc = parse_real("--lora-dropout", optarg, 0, 0.999999, &lora.dropout))) return rc; break;
        case OPT_LORA_TARGETS:
            if (strlen(optarg) >= sizeof lora.targets) return die("--lora-targets: longer than %zu characters", sizeof lora.targets - 1);
            memcpy(lora.targets, optarg, strlen(optarg) + 1);
            break;
        case 'o': if ((rc = choose("--optim", optarg, o.optim = vc_optim_from_name(optarg), VC_CHOICES(VC_OPTIM_MAP)))) return rc; break;
        case OPT_IMPL: impl_given = true; if ((rc = choose("--optim-impl", optarg, o.optim_impl = vc_optim_impl_from_name(optarg), VC_CHOICES(VC_OPTIM_IMPL_MAP)))) return rc; break;
        case OPT_ACCUM: if ((rc = parse_count("--accumulate", optarg, 1, &o.accumulate))) return rc; break;
        case 'p': prec_given = true; if ((rc = choose("--precision", optarg, o.precision = vc_precision_from_name(optarg), VC_CHOICES(VC_PRECISION_MAP)))) return rc; break;
        case 'm': mode_given = true; if ((rc = choose("--mode", optarg, o.mode = vc_mode_from_name(optarg), VC_CHOICES(VC_MODE_MAP)))) return rc; break;
        case OPT_ATTN: if ((rc = choose("--attention", optarg, o.attention = vc_attention_from_name(optarg), VC_CHOICES(VC_ATTENTION_MAP)))) return rc; break;
        case OPT_TORCH: if ((rc = choose("--torch", optarg, o.torch_version = vc_torch_from_name(optarg), "a release from 2.0 to 2.15, e.g. 2.5"))) return rc; break;
        case OPT_WS: if ((rc = parse_size("--workspace", optarg, &o.workspace))) return rc; break;
        case OPT_CTX: if ((rc = parse_size("--context", optarg, &o.context))) return rc; break;
        case 'f':
            c.format = optarg;
            if (strcmp(c.format, "table") && strcmp(c.format, "json") && strcmp(c.format, "csv"))
                return die("--format: unknown value '%s' (choose table, json or csv)", optarg);
            break;
        case 'g': gpu = optarg; break;
        case OPT_MAX_BATCH: c.max_batch = true; break;
        case OPT_MAX_SEQ: c.max_seq = true; break;
        case OPT_SWEEP: sweep = optarg; break;
        case OPT_PLOT: c.plot = optarg; break;
        case OPT_COLUMNS: c.columns = optarg; break;
        case OPT_NO_COLOR: no_color = true; break;
        case OPT_LIST_GPUS: gpus = true; break;
        case OPT_PER_LAYER: c.per_layer = true; break;
        case OPT_TRACE: trace = true; break;
        case OPT_PARAMS: c.counts = true; if ((rc = parse_count("--params", optarg, 0, &params))) return rc; break;
        case OPT_ACTS: have_acts = true; if ((rc = parse_count("--activations", optarg, 0, &acts))) return rc; break;
        case OPT_LIST_LAYERS:
            /* a line per kind (scripts read the first word); on a terminal, summaries wrapped to its width */
            for (size_t i = 0; i <= vc_kind_count(); i++) {
                char head[64];
                snprintf(head, sizeof head, "%-28s", i < vc_kind_count() ? vc_kind_name(i) : "Sequential");
                print_wrapped(head, i < vc_kind_count() ? vc_kind_summary(i)
                                                        : "a block of layers (a scope), with repeat/frozen/checkpoint",
                              isatty(fileno(cli_out)) ? detect_term(true).width : INT32_MAX, 29);
            }
            return flush_out(0);
        case 'h': cli_help(cli_out, usage_head, cli_options, cli_noptions, usage_tail); return flush_out(0);
        case OPT_VERSION: fprintf(cli_out, "vramcalc %s\n", VC_VERSION); return flush_out(0);
        case ':': return die("%s needs a value (see vramcalc --help)", argv[optind - 1]);
        default:
            if (optopt) return die("unknown option '-%c' (see vramcalc --help)", optopt);
            return die("unknown option '%s' (see vramcalc --help)", argv[optind - 1]);
        }
    }
    if (c.columns && (strcmp(c.format, "csv") || gpus || serve))
        return die("--columns chooses the estimate's CSV columns: it needs -f csv%s", gpus ? ", not --list-gpus" : serve ? ", not --serve" : "");
    if (gpus) return flush_out(list_gpus(c.format));
    if (!impl_given) o.optim_impl = vc_optim_default_impl_at(o.optim, o.torch_version); /* forloop for adafactor */
    if (o.mode == VC_MODE_GENERATE) {
        if (c.per_layer || o.parallel != VC_PARALLEL_NONE)
            return die("--mode generate estimates one GPU's generate(): it does not go with %s",
                       c.per_layer ? "--per-layer" : "--parallel");
        if (hf.seq > 0) return die("--seq does not go with --mode generate: --prompt is the sequence's length");
        hf.seq = o.prompt; /* a config.json's report names the prompt's length */
    }
    if (qlora) { /* BitsAndBytesConfig(load_in_4bit, nf4, double quant, compute bf16) + LoraConfig */
        if (weights && strcmp(weights, "nf4")) return die("--qlora stores the base as nf4: it does not go with --weights %s", weights);
        if (prec_given && o.precision != VC_PREC_BF16 && o.precision != VC_PREC_FP16)
            return die("--qlora computes in 16-bit (bnb_4bit_compute_dtype): use --precision bf16 or fp16, not %s", vc_precision_name(o.precision));
        if (!prec_given) o.precision = VC_PREC_BF16;
        if (lora.r == 0) lora.r = 8; /* LoraConfig's r */
        vc_quant_from_name("nf4", &quant);
        weights = "nf4";
    }
    if (c.counts && weights) return die("--%s needs a model file: --params makes a counts-only estimate", qlora ? "qlora" : "weights");
    if (have_acts && !c.counts) return die("--activations goes with --params");
    if (c.max_batch && !gpu) return die("--max-batch needs --gpu (a preset such as h100-80gb, or a size such as 24GiB)");
    if (c.plot && !sweep) return die("--plot needs --sweep (the batch sizes to draw)");
    if (c.plot && !strcmp(c.plot, "-")) return die("--plot writes an SVG file: give a file name, not '-'");
    if (c.counts && (trace || input || c.per_layer))
        return die("%s needs a model file: --params makes a counts-only estimate",
                   trace ? "--trace" : input ? "--input" : "--per-layer");
    if (trace && (c.max_batch || strcmp(c.format, "table")))
        return die("--trace prints one batch's timeline: it does not go with %s", c.max_batch ? "--max-batch" : "--format");
    if (gen_given && o.mode != VC_MODE_GENERATE && !serve)
        return die("--prompt, --new-tokens and --cache go with --mode generate (or --serve)");
    if (kvq_given && o.cache != VC_CACHE_QUANTIZED)
        return die("--kv-bits, --kv-group-size and --kv-residual-length go with --cache quantized (QuantizedCache's cache_config)");
    if (serve && o.cache == VC_CACHE_QUANTIZED)
        return die("--cache quantized is transformers' QuantizedCache (--mode generate): vLLM's cache is its paged pool, "
                   "sized in --kv-cache-dtype");
    if (kv_dtype_given && !serve && o.mode == VC_MODE_GENERATE)
        return die("--kv-cache-dtype: transformers' generate() has no cache dtype (DynamicLayer and StaticLayer store keys "
                   "and values in key_states.dtype, the model's); it is vLLM's setting (--serve). For a smaller cache "
                   "in generate(): --cache quantized");
    if (serve_given && !serve)
        return die("--gpu-memory-utilization, --max-num-batched-tokens, --max-num-seqs, --block-size and --kv-cache-dtype go with --serve");
    if (serve && !mode_given) o.mode = VC_MODE_INFER; /* vLLM serves: no training state */
    if (serve && (!gpu || c.counts || c.max_batch || sweep || trace || max_context || (o.mode == VC_MODE_TRAIN && mode_given)))
        return die("--serve sizes vLLM's KV cache on one --gpu for a model file: it does not go with %s",
                   !gpu ? "no --gpu" : c.counts ? "--params" : c.max_batch ? "--max-batch" : sweep ? "--sweep" : trace ? "--trace"
                   : max_context ? "--max-context" : "--mode train");
    if (serve && (o.parallel != VC_PARALLEL_NONE || o.gpus != (o.tp > 1 ? o.tp : 1)))
        return die("--serve models one vLLM engine: tensor_parallel_size N is --tp N --gpus N (--parallel and "
                   "data-parallel GPUs are training layouts)");
    if (c.counts && o.mode == VC_MODE_GENERATE) return die("--mode generate needs a model file, not --params");
    if (max_context && (o.mode != VC_MODE_GENERATE || !gpu))
        return die("--max-context needs --mode generate and --gpu (the longest prompt that fits the GPU)");
    if (max_context && (c.max_batch || sweep || trace))
        return die("--max-context searches the prompt length at one batch: it does not go with %s",
                   c.max_batch ? "--max-batch" : sweep ? "--sweep" : "--trace");
    if (sweep && batch_given) return die("give either --batch or --sweep, not both");
    if (c.max_seq && (rc = max_seq_usage(&c, gpu, sweep, input, hf.seq, trace, emit))) return rc;
    if (sweep && trace) return die("--trace shows one batch: use --batch, not --sweep");
    vc_error err;
    memset(&err, 0, sizeof err);
    if (gpu) {
        if (vc_gpu_parse(gpu, &c.gpu, &err)) return die("--gpu: %s", err.msg);
        c.have_gpu = true;
        if (c.gpu.preset && c.gpu.preset->hopper) o.hopper = 1;
        o.device = c.gpu.preset; /* its multiprocessors size kernels' scratch (src/scratch.c) */
    }
    if (sweep && (rc = parse_sweep(sweep, &c.sweep, &c.nsweep))) return rc;
    c.term = detect_term(no_color);

    vc_result r;
    memset(&r, 0, sizeof r);
    vc_report rep = {"", NULL, &o, &r, c.per_layer, c.counts, c.have_gpu ? &c.gpu : NULL, -1, c.term, -1};
    rep.max_seq = -1;
    static char shown_file[4 * 4096 + 1];
    vc_model *m = NULL;
    vc_estimator *e = NULL;
    rc = 0;
    if (c.columns && (rc = check_columns(&c, &rep))) goto out;
    if (c.counts) {
        if (optind < argc) {
            rc = die("give either a model file or --params, not both");
            goto out;
        }
    } else {
        if (optind >= argc) {
            rc = die("no model file (see vramcalc --help)");
            goto out;
        }
        if (optind + 1 < argc) {
            rc = die("unexpected argument '%s' (one model file at a time)", argv[optind + 1]);
            goto out;
        }
        vc_escape_text(shown_file, sizeof shown_file, argv[optind]); /* the reports show it */
        model_file = argv[optind];
        rep.file = shown_file;
        cJSON_Hooks hooks = {json_alloc, json_free};
        cJSON_InitHooks(&hooks);
        hf.tp = o.tp; /* a config.json is loaded as one tensor-parallel rank's share (src/hf_tp.c) */
        hf.sp = o.sp;
        vc_status lst = vc_model_load_file_hf(argv[optind], &hf, &m, &err);
        cJSON_InitHooks(NULL); /* the loader has freed its JSON tree: drop the arena with it */
        json_arena_release();
        if (lst) {
            rc = die_err(&err);
            goto out;
        }
        if ((hf_given || emit) && !vc_model_generated_json(m)) {
            rc = die("%s applies to a Hugging Face config.json; this is a vramcalc model file%s",
                     emit ? "--emit-model" : hf.seq ? "--seq" : hf.checkpoint ? "--grad-ckpt" : loss_given ? "--loss" : "--moe-imbalance",
                     hf.seq ? " (use --input)" : hf.checkpoint ? " (add \"checkpoint\": true to its layers)"
                     : loss_given ? " (it names its loss in its \"loss\" key: \"liger_fused_linear_ce\")" : "");
            goto out;
        }
        if (emit) {
            rc = fprintf(cli_out, "%s\n", vc_model_generated_json(m)) < 0 || fflush(cli_out) ? EXIT_USAGE : 0;
            goto out;
        }
        if (lora.r > 0) {
            if (!lora.targets[0]) memcpy(lora.targets, vc_model_lora_targets(m), strlen(vc_model_lora_targets(m)) + 1);
            if (!lora.targets[0]) {
                rc = die("--lora needs --lora-targets (the names of the Linear layers to adapt) for a vramcalc model file");
                goto out;
            }
            if (vc_model_set_lora(m, &lora, &err)) {
                rc = die_err(&err);
                goto out;
            }
        }
        if (o.ep > 1 && vc_model_set_ep(m, o.ep, &err)) { /* one expert-parallel rank's experts (docs/parallel.md 6) */
            rc = die_err(&err);
            goto out;
        }
        if (weights && vc_model_set_weights(m, &quant, &err)) {
            rc = die_err(&err);
            goto out;
        }
        if (input) {
            int64_t dims[VC_MAX_DIMS];
            int nd;
            if ((rc = parse_shape(input, dims, &nd))) goto out;
            if (vc_model_set_input_shape(m, dims, nd, &err)) {
                rc = die_err(&err);
                goto out;
            }
        }
        if (c.max_seq && (rc = find_max_seq(&c, m, &o, &rep))) goto out;
        rep.model = vc_model_name(m);
        static char wdesc[96];
        vc_quant mq;
        if (vc_model_weights(m, &mq) != VC_WEIGHTS_DENSE) {
            vc_quant_describe(&mq, wdesc, sizeof wdesc);
            rep.weights = wdesc;
            /* quantized weights compute in 16-bit: fp16 for GPTQ/AWQ (their kernels' dtype), else bf16 */
            if (!prec_given) o.precision = mq.format == VC_WEIGHTS_GPTQ || mq.format == VC_WEIGHTS_AWQ ? VC_PREC_FP16 : VC_PREC_BF16;
        } else if (serve && !prec_given) {
            o.precision = vc_serve_auto_precision(m, &c.gpu); /* vLLM's --dtype auto: the config's torch_dtype */
        }
        if (trace) {
            if (vc_trace(m, &o, print_line, cli_out, &err)) rc = die_err(&err);
            goto out;
        }
    }
    if (sweep || c.max_batch || !c.per_layer) {
        /* one plan for every batch size (the first one tried is o.batch); without
         * --per-layer, even for one batch: no per-layer rows to fill */
        vc_status st = c.counts ? vc_estimator_new_counts(params, acts, &o, &e, &err)
                                : vc_estimator_new(m, &o, c.per_layer && sweep ? 0 : VC_EST_NO_LAYERS, &e, &err);
        if (st) {
            rc = die_err(&err);
            goto out;
        }
    }
    if (sweep) {
        /* a sweep keeps every row until all are known; with --per-layer each holds a row per layer */
        if (c.per_layer && m && vc_model_layer_count(m) > MAX_SWEEP_LAYER_ROWS / c.nsweep) {
            rc = die("--per-layer with --sweep keeps a row per layer and batch size: %zu layers x %zu batch sizes is "
                     "more than the limit of %d rows (docs/limits.md); use fewer batch sizes",
                     vc_model_layer_count(m), c.nsweep, MAX_SWEEP_LAYER_ROWS);
            goto out;
        }
        rc = run_sweep(&c, e, &rep, &o);
        goto out;
    }
    if (c.max_batch) {
        if (vc_estimator_max_batch(e, c.gpu.capacity, &rep.max_batch, NULL, &err)) {
            rc = die_err(&err);
            goto out;
        }
        /* the report is for --batch if given, else for the max batch (or 1) */
        if (!batch_given) o.batch = rep.max_batch > 0 ? rep.max_batch : 1;
    }
    if (serve) {
        vc_serve_result sr;
        if (vc_serve(m, &o, &so, &c.gpu, &sr, &err)) {
            rc = die_err(&err);
            goto out;
        }
        print_serve(&c, &rep, &so, &sr);
        rc = fflush(stdout) ? EXIT_USAGE : 0;
        goto out;
    }
    if (max_context) {
        if (vc_max_prompt(m, &o, c.gpu.capacity, &rep.max_prompt, NULL, &err)) {
            rc = die_err(&err);
            goto out;
        }
        if (!prompt_given) { /* the report is for --prompt if given, else for the longest prompt (or 1) */
            o.prompt = rep.max_prompt > 0 ? rep.max_prompt : 1;
            vc_estimator_free(e); /* its plan is for the other prompt */
            e = NULL;
        }
    }
    vc_status st;
    if (e && !c.per_layer) { /* the search's plan and allocator replays serve the report too */
        st = vc_estimator_run(e, o.batch, &r, &err);
    } else {
        vc_estimator_free(e); /* one plan in memory at a time */
        e = NULL;
        st = c.counts ? vc_estimate_counts(params, acts, &o, &r, &err) : vc_estimate(m, &o, &r, &err);
    }
    if (st) {
        rc = die_err(&err);
        goto out;
    }
    if ((rc = print_one(&c, &rep))) goto out;
    rc = fflush(cli_out) ? EXIT_USAGE : !report_fits(&rep) || rep.max_batch == 0 || rep.max_prompt == 0 || rep.max_seq == 0 ? EXIT_NOFIT : 0;
out:
    vc_result_free(&r);
    vc_estimator_free(e);
    vc_model_free(m);
    free(c.sweep);
    return flush_out(rc);
}

#ifndef VC_CLI_NO_MAIN
int main(int argc, char **argv) { return vc_cli_main(argc, argv, stdout, stderr); }
#endif
