/*
 * render.c — a response as text: one estimate's report (table, JSON, CSV),
 * a sweep's rows and its SVG chart, --serve's report, --list-gpus, the
 * layer kinds; each into a memory stream whose text the front end prints.
 * The terminal's abilities come from the front end (vc_render_options).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "util.h"

static vc_status nomem(vc_error *err)
{
    if (err) {
        memset(err, 0, sizeof *err);
        err->code = VC_ERR_NOMEM;
        snprintf(err->msg, sizeof err->msg, "out of memory");
    }
    return VC_ERR_NOMEM;
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* head, then the words of text wrapped to width, further lines indented. */
static void print_wrapped(FILE *f, const char *head, const char *text, int width, int indent)
{
    text_line l;
    line_begin(&l, f, width, indent, head);
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, " ");
        if (n) line_itemn(&l, " ", p, n);
        p += n + (p[n] == ' ');
    }
    line_end(&l);
}

static void list_gpus(FILE *f, vc_format format, int width)
{
    char b[32];
    if (format == VC_FORMAT_JSON) {
        fprintf(f, "{\n  \"schema_version\": 1,\n  \"gpus\": [");
        for (size_t i = 0; i < vc_gpu_count(); i++) {
            const vc_gpu *g = vc_gpu_get(i);
            fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
            json_str(f, g->name);
            fprintf(f, ", \"product\": ");
            json_str(f, g->label);
            fprintf(f, ", \"vendor\": ");
            json_str(f, g->vendor);
            fprintf(f, ", \"capacity\": %" PRId64 ", \"hopper\": %s, \"source\": ", g->capacity, g->hopper ? "true" : "false");
            json_str(f, g->source);
            fprintf(f, ", \"sms\": %d, \"sm_threads\": %d}", g->sms, g->sm_threads);
        }
        fprintf(f, "\n  ]\n}\n");
    } else if (format == VC_FORMAT_CSV) {
        fprintf(f, "name,product,vendor,capacity,hopper,source,sms,sm_threads\n");
        for (size_t i = 0; i < vc_gpu_count(); i++) {
            const vc_gpu *g = vc_gpu_get(i);
            fprintf(f, "%s,\"%s\",%s,%" PRId64 ",%s,\"%s\",%d,%d\n", g->name, g->label, g->vendor, g->capacity,
                    g->hopper ? "true" : "false", g->source, g->sms, g->sm_threads);
        }
    } else {
        /* within the width: the source of the figure on its own lines (bytes: -f csv or json) */
        fprintf(f, "%-11s %10s  %-6s %-5s  %s\n", "name", "memory", "vendor", "sm90+", "product");
        for (size_t i = 0; i < vc_gpu_count(); i++) {
            const vc_gpu *g = vc_gpu_get(i);
            format_bytes(g->capacity, b, sizeof b);
            char head[96];
            snprintf(head, sizeof head, "%-11s %10s  %-6s %-5s ", g->name, b, g->vendor, g->hopper ? "yes" : "");
            print_wrapped(f, head, g->label, width, 38);
            print_wrapped(f, "            source:", g->source, width, 14);
        }
        fprintf(f, "\nmemory: the total nvidia-smi (MiB x 1048576) or rocm-smi reports for one device\n"
                   "(bytes: -f csv or -f json); sm90+: the preset sets the Hopper/Blackwell cuBLAS\n"
                   "workspace (32 MiB). Keep headroom with NAME:90%%.\n");
    }
}

/* --serve: vLLM's KV cache pool and what it holds. */
static void print_serve(FILE *f, vc_format format, const vc_response *resp)
{
    const vc_report *rep = &resp->rep;
    const vc_serve_options *so = &resp->so;
    const vc_serve_result *r = &resp->sr;
    const vc_options *o = rep->opts;
    if (format == VC_FORMAT_JSON) {
        fprintf(f, "{\n  \"schema_version\": 1,\n  \"serve\": {\"gpu\": ");
        json_str(f, resp->gpu.name);
        const vc_json_echo echo = {o, rep, so, r}; /* the options: options.def's VC_OPTION_JSON rows */
        json_echo(f, &echo, VC_JSON_SERVE_GPU, "    ", false);
        fprintf(f, ", \"gpu_total\": %" PRId64, resp->gpu.total);
        json_echo(f, &echo, VC_JSON_SERVE, "    ", false);
        fprintf(f, ",\n    \"weights\": %" PRId64 ", \"profile_peak\": %" PRId64 ", \"requested\": %" PRId64 ", \"kv_cache\": %" PRId64
                   ", \"page_bytes\": %" PRId64 ", \"blocks\": %" PRId64 ", \"tokens\": %" PRId64 ", \"request_tokens\": %" PRId64
                   ", \"concurrency\": %" PRId64,
                r->weights, r->profile_peak, r->requested, r->kv_cache, r->page_bytes, r->blocks, r->tokens, r->request_tokens,
                r->concurrency);
        /* vLLM's non-torch memory (src/engine/serve.c vllm_non_torch): the increase it subtracts, by
         * part, and what that commit's arithmetic leaves out */
        fprintf(f, ",\n    \"non_torch_increase\": %" PRId64 ", \"non_torch_parts\": {\"cublas\": %" PRId64
                   ", \"attention_kernels\": %" PRId64, r->non_torch, r->non_torch_cublas, r->non_torch_kernels);
        if (r->non_torch_nccl) /* NCCL's NVLS buffers, set up by the profiling run's all-reduce (vllm_snapshot) */
            fprintf(f, ", \"nccl_nvls\": %" PRId64, r->non_torch_nccl);
        if (r->non_torch_logits_nccl) /* the logits' all-gather's communicator (src/engine/serve_nccl.c) */
            fprintf(f, ", \"nccl_logits_gather\": %" PRId64, r->non_torch_logits_nccl);
        fprintf(f, "}, \"nccl_counted\": %s, \"cuda_graphs_counted\": %s",
                r->non_torch_nccl || r->non_torch_logits_nccl ? "true" : "false",
                r->graphs_subtracted > 0 ? "true" : "false"); /* given, or estimated (serve.c); 0 given: none */
        /* what vLLM's snapshot holds, and its CUDA graphs (src/engine/serve.c vllm_snapshot, vllm_graphs) */
        static const char *const why[] = {"profiled", "enforce_eager", "not_cuda", "v2_model_runner"};
        fprintf(f, ",\n    \"at_snapshot\": {\"cuda_context\": %" PRId64 ", \"nccl\": %" PRId64 ", \"custom_all_reduce\": %" PRId64
                   ", \"symmetric_memory\": %" PRId64 "}",
                r->snapshot_context, r->snapshot_nccl, r->snapshot_custom_ar, r->snapshot_symm_mem);
        fprintf(f, ",\n    \"cuda_graphs\": {\"piecewise\": %" PRId64 ", \"largest_piecewise\": %" PRId64 ", \"full\": %" PRId64
                   ", \"largest_full\": %" PRId64 ", \"subtracted_by_vllm\": %s, \"why\": \"%s\", \"floor\": %" PRId64
                   ", \"subtracted\": %" PRId64 ", \"estimate\": %" PRId64 ", \"estimate_parts\": {\"activations\": %" PRId64
                   ", \"workspace\": %" PRId64 ", \"floor\": %" PRId64 "}, \"source\": \"%s\", \"beyond_utilization\": %" PRId64 "}",
                r->graphs_piecewise, r->graphs_largest_piecewise, r->graphs_full, r->graphs_largest_full,
                r->graphs_profiled ? "true" : "false", r->graphs_why >= 0 && r->graphs_why < 4 ? why[r->graphs_why] : "?",
                r->graphs_floor, r->graphs_subtracted, r->graphs_estimate, r->graphs_activations, r->graphs_workspace,
                r->graphs_estimate ? r->graphs_floor : 0, /* the estimate's parts: serve_graphs.c */
                o->cuda_graph_memory >= 0 ? "given" : "estimated",
                /* the V2 model runner captures them after the pool is sized, subtracting none (serve.c vllm_graphs):
                 * the estimate on top of gpu_memory_utilization's share */
                r->graphs_why == VC_SERVE_GRAPHS_V2_RUNNER ? r->graphs_estimate : 0);
        if (r->latent_layers > 0) /* MLA: the cache's kind (src/engine/serve.c) */
            fprintf(f, ", \"kv_cache_kind\": \"mla_latent\", \"latent_layers\": %" PRId64 ", \"latent_per_token\": %" PRId64,
                    r->latent_layers, r->latent);
        if (r->state_layers > 0) /* Gated DeltaNet, Mamba2 or ShortConv: a fixed state per request beside the paged K/V (src/engine/serve.c) */
            fprintf(f, ", \"kv_cache_kind\": \"%s\", \"state_layers\": %" PRId64
                       ", \"state_bytes_per_request_layer\": %" PRId64,
                    r->state_mamba == 2   ? "mamba_state" /* attention-free: mamba2 */
                    : r->state_mamba == 3 ? "shortconv_state+paged_kv"
                    : r->state_mamba      ? "mamba_state+paged_kv"
                                          : "deltanet_state+paged_kv",
                    r->state_layers, r->state_bytes);
        if (r->v4_request_bytes > 0) /* DeepSeek-V4's pages by layer kind (src/engine/serve_dsv4.c) */
            fprintf(f, ", \"kv_cache_kind\": \"deepseek_v4\",\n    \"deepseek_v4\": {\"sliding_only_layers\": %" PRId64
                       ", \"csa_layers\": %" PRId64 ", \"hca_layers\": %" PRId64 ", \"csa_bytes_per_block\": %" PRId64
                       ", \"hca_bytes_per_block\": %" PRId64 ", \"sliding_bytes_per_request\": %" PRId64
                       ", \"state_bytes_per_request\": %" PRId64 ", \"bytes_per_request\": %" PRId64
                       ", \"buffers\": %" PRId64 ", \"workspace\": %" PRId64 ", \"activations\": %" PRId64 "}",
                    r->v4_layers[0], r->v4_layers[1], r->v4_layers[2], r->v4_block_bytes[1], r->v4_block_bytes[2],
                    r->v4_swa_request, r->v4_state_request, r->v4_request_bytes, r->v4_buffers, r->v4_workspace,
                    r->v4_activations);
        if (r->cross_layers > 0) /* an encoder-decoder (whisper: src/engine/serve_encdec.c) */
            fprintf(f, ",\n    \"encoder_decoder\": {\"encoder_peak\": %" PRId64 ", \"decoder_peak\": %" PRId64
                       ", \"dummy_clips\": %" PRId64 ", \"encoder_outputs\": %" PRId64 ", \"self_attention_layers\": %" PRId64
                       ", \"cross_attention_layers\": %" PRId64 ", \"cross_tokens\": %" PRId64 ", \"blocks_per_request\": %" PRId64 "}",
                    r->encoder_peak, r->decoder_peak, r->mm_items, r->mm_outputs, r->cross_layers, r->cross_layers,
                    r->cross_tokens, r->blocks_per_request);
        else if (r->mm_encoder > 0) { /* a multimodal model's encoder profiling (src/engine/serve_mm.c) */
            char ep[24] = "null"; /* the encoder phase not estimated (the tower's run not modelled): null, not a figure */
            if (r->mm_encoder_peak >= 0) snprintf(ep, sizeof ep, "%" PRId64, r->mm_encoder_peak);
            fprintf(f, ",\n    \"mm_encoder\": {\"items\": %" PRId64 ", \"item_tokens\": %" PRId64 ", \"item_width\": %" PRId64
                       ", \"item_height\": %" PRId64 ", \"budget\": %" PRId64 ", \"outputs\": %" PRId64 ", \"inputs\": %" PRId64
                       ", \"encoder_phase_peak\": %s, \"language_model_phase_peak\": %" PRId64
                       ", \"tower_activations_counted\": %s}",
                    r->mm_items, r->mm_item_tokens, r->mm_item_width, r->mm_item_height, r->mm_budget, r->mm_outputs,
                    r->mm_inputs, ep, r->profile_lm, r->mm_encoder_peak >= 0 ? "true" : "false");
        }
        else if (r->mm_encoder < 0)
            fprintf(f, ",\n    \"mm_encoder\": null");
        fprintf(f, "}\n}\n");
        return;
    }
    char a[32], b[32], d[32];
    char tp[48] = "";
    if (o->tp > 1) snprintf(tp, sizeof tp, " (per GPU of tensor_parallel_size %" PRId64 ")", o->tp);
    fprintf(f, "%s (%s)\nvLLM on %s%s, %s%s%s, gpu_memory_utilization %.2f, max_num_batched_tokens %" PRId64 ", max_num_seqs %" PRId64
               ", kv cache %s\n\n", rep->model[0] ? rep->model : rep->file, rep->file, resp->gpu.name, tp, vc_precision_name(o->precision),
            rep->weights ? ", weights " : "", rep->weights ? rep->weights : "",
            so->gpu_memory_utilization, r->max_num_batched_tokens, r->max_num_seqs, vc_kv_dtype_name(so->kv_cache_dtype));
    format_bytes(r->requested, a, sizeof a);
    fprintf(f, "  %-22s %12s\n", "usable (utilization)", a);
    format_bytes(r->weights, a, sizeof a);
    fprintf(f, "  %-22s %12s\n", "weights", a);
    format_bytes(r->profile_peak, a, sizeof a);
    fprintf(f, "  %-22s %12s  (peak of the profiling run, weights included)\n", "profiling run", a);
    if (r->cross_layers > 0) { /* an encoder-decoder's two phases (src/engine/serve_encdec.c) */
        format_bytes(r->encoder_peak, a, sizeof a);
        format_bytes(r->decoder_peak, b, sizeof b);
        format_bytes(r->mm_outputs, d, sizeof d);
        fprintf(f, "  %-22s %12s  (the encoder over %" PRId64 " dummy 30 s clip%s of %" PRId64 " positions, weights included)\n",
                "encoder phase", a, r->mm_items, r->mm_items == 1 ? "" : "s", r->mm_item_tokens);
        fprintf(f, "  %-22s %12s  (the decoder's dummy run, weights and the encoder's outputs (%s) included)\n",
                "decoder phase", b, d);
    } else if (r->mm_encoder > 0) { /* src/engine/serve_mm.c */
        format_bytes(r->mm_outputs + r->mm_inputs, a, sizeof a);
        fprintf(f, "  %-22s %12s  (%" PRId64 " dummy item%s of %" PRId64 " tokens, %" PRId64 "x%" PRId64 ": the encoder's inputs and "
                   "outputs, held through the language model's run, in the peak above)\n",
                "encoder profiling", a, r->mm_items, r->mm_items == 1 ? "" : "s", r->mm_item_tokens, r->mm_item_width,
                r->mm_item_height);
        if (r->mm_encoder_peak >= 0) {
            format_bytes(r->mm_encoder_peak, a, sizeof a);
            fprintf(f, "  %-22s %12s  (the weights and the vision tower's run on the dummy items, at its worst op%s)\n", "encoder phase", a,
                    r->mm_encoder_peak >= r->profile_peak ? ": the profiling run's peak" : "");
        } else
            fprintf(f, "  %-22s %12s  (the vision tower's own run: not modelled %s, not in the peak above)\n", "encoder phase",
                    "not modelled", r->mm_encoder == 2 ? "for this family"
                                    : o->tp > 1        ? "with tensor_parallel_size > 1"
                                                       : "on this GPU's vendor");
    } else if (r->mm_encoder < 0)
        fprintf(f, "  %-22s %12s  (vLLM runs this model's multimodal encoder on a dummy batch first: not derived for "
                   "this family, not in the peak above)\n", "encoder profiling", "not modelled");
    format_bytes(r->non_torch, a, sizeof a);
    const bool amd = resp->gpu.preset && strcmp(resp->gpu.preset->vendor, "NVIDIA") != 0; /* context.c: not modelled */
    fprintf(f, "  %-22s %12s  (%s)\n", "non-torch increase", a,
            r->non_torch_logits_nccl && r->non_torch_nccl ? "cuBLAS, attention kernels and NCCL's buffers of the "
                                                            "profiling run's all-reduce and logits all-gather"
            : r->non_torch_logits_nccl && amd ? "RCCL's buffers of the profiling run's logits all-gather; rocBLAS and kernels "
                                                "not modelled"
            : r->non_torch_logits_nccl ? "cuBLAS, attention kernels and NCCL's buffers of the profiling run's logits all-gather"
            : r->non_torch_nccl ? "cuBLAS, attention kernels and NCCL's NVLS buffers of the profiling run"
            : r->non_torch ? "cuBLAS and attention kernels the profiling run loads"
            : amd        ? "not modelled on this GPU's vendor"
                         : "eager loading: loaded before vLLM's snapshot");
    if (o->tp > 1) { /* held at vLLM's snapshot, not subtracted (src/engine/serve.c vllm_snapshot) */
        format_bytes(r->snapshot_nccl + r->snapshot_custom_ar + r->snapshot_symm_mem, a, sizeof a);
        char n[32], c[32], s[32], v[64] = "";
        format_bytes(r->snapshot_nccl - r->snapshot_nvls_credits, n, sizeof n);
        format_bytes(r->snapshot_custom_ar, c, sizeof c);
        format_bytes(r->snapshot_symm_mem, s, sizeof s);
        if (r->snapshot_nvls_credits) { /* NCCL's NVLS credits, at the communicator's creation */
            char k[32];
            format_bytes(r->snapshot_nvls_credits, k, sizeof k);
            snprintf(v, sizeof v, " + NVLS credits %s", k);
        }
        fprintf(f, "  %-22s %12s  (held at vLLM's snapshot, not subtracted: NCCL ring %s%s, custom all-reduce %s, "
                   "symmetric memory %s)\n", "NCCL + all-reduce", a, n, v, c, s);
    }
    /* vLLM's CUDA graphs (src/engine/serve.c vllm_graphs) */
    if (r->graphs_why == VC_SERVE_GRAPHS_EAGER) fprintf(f, "  %-22s %12s  (enforce_eager: none captured)\n", "CUDA graphs", "none");
    else {
        char g[96];
        snprintf(g, sizeof g, "%" PRId64 " PIECEWISE (largest %" PRId64 ") + %" PRId64 " FULL (largest %" PRId64 ")",
                 r->graphs_piecewise, r->graphs_largest_piecewise, r->graphs_full, r->graphs_largest_full);
        /* vLLM's estimate derived from the capture's forward (src/engine/serve_graphs.c) */
        char e[160], x[32], w[32];
        format_bytes(r->graphs_estimate, a, sizeof a);
        format_bytes(r->graphs_activations, x, sizeof x);
        format_bytes(r->graphs_workspace, w, sizeof w);
        if (r->graphs_estimate > 0)
            snprintf(e, sizeof e, "estimated %s: activations at %" PRId64 " tokens %s + cuBLAS workspace %s + %" PRId64
                     " graphs x 1 MiB", a, r->graphs_largest_piecewise, x, w, r->graphs_floor >> 20);
        else { /* an encoder-decoder's FULL_DECODE_ONLY graphs (src/engine/serve_encdec.c), DeepSeek-V4's (serve_dsv4.c): not estimated */
            format_bytes(r->graphs_floor, a, sizeof a);
            snprintf(e, sizeof e, "not estimated for %s, at least %s",
                     r->v4_request_bytes ? "DeepSeek-V4, whose forward is not built"
                                         : "an encoder-decoder's decode-only graphs", a);
        }
        if (r->graphs_profiled && o->cuda_graph_memory < 0 && r->v4_request_bytes > 0) { /* DeepSeek-V4: the floor (serve.c) */
            fprintf(f, "  %-22s %12s  (%s: vLLM's measure, %s; the floor taken off the pool, a lower bound of vLLM's)\n",
                    "CUDA graphs", a, g, e);
        } else if (r->graphs_profiled && o->cuda_graph_memory < 0 && r->graphs_estimate > 0) { /* vLLM's default: serve.c */
            fprintf(f, "  %-22s %12s  (%s: vLLM's measure, %s; taken off the pool, as vLLM does by default)\n",
                    "CUDA graphs", a, g, e);
        } else if (r->graphs_profiled && o->cuda_graph_memory == 0) { /* vLLM before v0.21.0, or its variable 0 */
            fprintf(f, "  %-22s %12s  (%s: given as 0, none taken off the pool, as vLLM before v0.21.0 or with "
                       "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0; %s)\n", "CUDA graphs", "not counted", g, e);
        } else if (r->graphs_profiled && o->cuda_graph_memory >= 0) {
            format_bytes(r->graphs_subtracted, a, sizeof a);
            fprintf(f, "  %-22s %12s  (%s: vLLM's measure as given, taken off the pool; %s)\n", "CUDA graphs", a, g, e);
        } else if (r->graphs_profiled) {
            fprintf(f, "  %-22s %12s  (%s: vLLM subtracts its start-up measure of them, %s; the pool below does "
                       "not)\n", "CUDA graphs", a, g, e);
        } else if (r->graphs_why == VC_SERVE_GRAPHS_V2_RUNNER) /* captured after the pool is sized, none subtracted */
            fprintf(f, "  %-22s %12s  (%s, captured after the pool is sized: the V2 model runner's "
                       "profile_cudagraph_memory is 0; %s; none taken off the pool: on top of gpu_memory_utilization's "
                       "share)\n", "CUDA graphs", a, g, e);
        else
            fprintf(f, "  %-22s %12s  (%s, captured after the pool is sized: vLLM profiles them on CUDA only; %s)\n",
                    "CUDA graphs", "not counted", g, e);
    }
    format_bytes(r->kv_cache, a, sizeof a);
    fprintf(f, "  %-22s %12s\n", "KV cache pool", a);
    format_bytes(r->page_bytes, b, sizeof b);
    fprintf(f, "  %-22s %12" PRId64 "  (%" PRId64 " tokens each, %s per block)\n", "blocks", r->blocks, r->block_size, b);
    if (r->latent_layers > 0) /* MLA: vLLM pages the compressed latent, not per-head K and V */
        fprintf(f, "  %-22s %12s  (%" PRId64 " layers x %" PRId64 " per token: kv_lora_rank + qk_rope_head_dim, one head)\n",
                "cache kind", "MLA latent", r->latent_layers, r->latent);
    if (r->state_layers > 0 && r->state_mamba == 3) { /* ShortConv (lfm2, lfm2_moe): MambaSpec pages, src/engine/serve.c */
        format_bytes(r->state_bytes, a, sizeof a);
        fprintf(f, "  %-22s %12s  (%" PRId64 " ShortConv layers: conv state, %s per request and layer, one block each; "
                   "the attention layers' K/V paged)\n", "cache kind", "conv state", r->state_layers, a);
    } else if (r->state_layers > 0 && r->state_mamba) { /* Mamba2 (granitemoehybrid ...; mamba2 alone): MambaSpec pages, src/engine/serve.c */
        format_bytes(r->state_bytes, a, sizeof a);
        fprintf(f, "  %-22s %12s  (%" PRId64 " Mamba2 layers: conv + SSM state, %s per request and layer, one block "
                   "each; %s)\n", "cache kind", "Mamba state", r->state_layers, a,
                r->state_mamba == 2 ? "attention-free: no K/V, a block a request" : "the attention layers' K/V paged");
    } else if (r->state_layers > 0) { /* Gated DeltaNet: vLLM's MambaSpec pages beside the attention layers' blocks */
        format_bytes(r->state_bytes, a, sizeof a);
        fprintf(f, "  %-22s %12s  (%" PRId64 " Gated DeltaNet layers: conv + recurrent state, %s per request and "
                   "layer, one block each; the attention layers' K/V paged)\n", "cache kind", "DeltaNet state",
                r->state_layers, a);
    }
    if (r->v4_request_bytes > 0) { /* DeepSeek-V4's fp8_ds_mla pages by layer kind (src/engine/serve_dsv4.c) */
        char w[32], x[32], y[32];
        format_bytes(r->v4_swa_request, w, sizeof w);
        format_bytes(r->v4_state_request, x, sizeof x);
        format_bytes(r->v4_request_bytes, y, sizeof y);
        fprintf(f, "  %-22s %12s  (%" PRId64 " CSA layers x %.2f B/token (latent + indexer keys), %" PRId64 " HCA layers x "
                   "%.2f B/token; every layer's %s window pages and the compressor states: %s + %s a request, %s in all)\n",
                "cache kind", "DeepSeek-V4", r->v4_layers[1], (double)r->v4_block_bytes[1] / (double)r->block_size,
                r->v4_layers[2], (double)r->v4_block_bytes[2] / (double)r->block_size,
                r->v4_layers[0] ? "sliding" : "sliding-window", w, x, y);
        format_bytes(r->v4_buffers, w, sizeof w);
        format_bytes(r->v4_workspace, x, sizeof x);
        format_bytes(r->v4_activations, y, sizeof y);
        fprintf(f, "  %-22s %12s  (top-k and MTP buffers %s, in the weights; workspace %s and live tensors %s, in the "
                   "profiling run)\n", "DeepSeek-V4 extras", "", w, x, y);
    }
    if (r->cross_layers > 0) /* an encoder-decoder: two KV cache groups (src/engine/serve_encdec.c) */
        fprintf(f, "  %-22s %12s  (%" PRId64 " self-attention layers + %" PRId64 " cross-attention layers of %" PRId64
                   " encoder positions a request, two groups: %" PRId64 " blocks a request)\n", "cache kind", "self + cross",
                r->cross_layers, r->cross_layers, r->cross_tokens, r->blocks_per_request);
    fprintf(f, "  %-22s %12" PRId64 "\n", "tokens", r->tokens);
    snprintf(d, sizeof d, "%" PRId64 "+%" PRId64, o->prompt, o->new_tokens);
    fprintf(f, "  %-22s %12" PRId64 "  (requests of %s = %" PRId64 " tokens at once)\n", "concurrency", r->concurrency, d,
            r->request_tokens);
}

static int print_one(FILE *f, vc_format format, const vc_report *rep)
{
    if (format == VC_FORMAT_JSON) report_json(f, rep);
    else if (format == VC_FORMAT_CSV) {
        if (report_csv_header(f, rep) || report_csv_row(f, rep)) return -1;
    } else report_table(f, rep);
    return 0;
}

/* --columns: every name one of this report's CSV columns (--max-batch and
 * --max-seq add theirs), before anything is estimated */
vc_status vc__check_columns(const vc_response *resp, vc_error *err)
{
    vc_report names = resp->rep;
    names.max_batch = resp->max_batch ? 0 : -1;
    names.max_seq = resp->max_seq ? 0 : -1;
    names.max_prompt = resp->max_context ? 0 : -1;
    char msg[2048];
    if (!report_csv_check(&names, msg, sizeof msg)) return VC_OK; /* its message marks the options */
    return vc__usage_long(err, msg);
}

/* A sweep's rows in format (their estimates are in resp->rows). */
static int print_sweep(FILE *f, vc_format format, const vc_response *resp)
{
    vc_report rep = resp->rep;
    vc_options o = resp->o;
    rep.opts = &o;
    bool json = format == VC_FORMAT_JSON, csv = format == VC_FORMAT_CSV;
    if (json) report_json_sweep_begin(f);
    for (size_t i = 0; i < resp->nsweep; i++) {
        o.batch = resp->sweep[i];
        rep.r = &resp->rows[i];
        if (json) report_json_sweep_row(f, &rep, i == 0);
        else if (csv) {
            if ((!i && report_csv_header(f, &rep)) || report_csv_row(f, &rep)) return -1;
        } else {
            if (!i) report_sweep_table_begin(f, &rep);
            report_sweep_table_row(f, &rep);
        }
        /* --per-layer in a table sweep: the rows follow their summary line */
        if (!json && !csv && rep.per_layer && resp->rows[i].nlayers) report_sweep_layers(f, &rep);
    }
    if (json) report_json_sweep_end(f, &rep);
    else if (!csv) report_sweep_table_end(f, &rep);
    return 0;
}

vc_status vc_response_render(const vc_response *resp, vc_format format, const vc_render_options *ro, char **text,
                             size_t *len, vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    *text = NULL;
    if (len) *len = 0;
    if (format == VC_FORMAT_DEFAULT) format = resp->format;
    if (resp->kind == VC_RESP_TEXT) {
        if (!(*text = malloc(resp->text_len + 1))) return nomem(err);
        memcpy(*text, resp->text, resp->text_len);
        (*text)[resp->text_len] = '\0';
        if (len) *len = resp->text_len;
        return VC_OK;
    }
    vc_term term = {false, false, VC_TEXT_WIDTH};
    if (ro) {
        term.utf8 = ro->utf8 != 0;
        term.color = ro->color != 0;
        if (ro->width > VC_TEXT_WIDTH) term.width = ro->width < 1000 ? ro->width : 1000;
    }
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return nomem(err);
    int bad = 0;
    if (resp->kind == VC_RESP_LIST_GPUS) list_gpus(f, format, term.width);
    else if (resp->kind == VC_RESP_SERVE) print_serve(f, format, resp);
    else {
        vc_response *r = (vc_response *)resp; /* the term is the render's: set it on the report for this call */
        r->rep.term = term;
        bad = resp->kind == VC_RESP_SWEEP ? print_sweep(f, format, resp) : print_one(f, format, &resp->rep);
    }
    if (fclose(f) || bad) {
        free(buf);
        return nomem(err);
    }
    *text = buf;
    if (len) *len = n;
    return VC_OK;
}

vc_status vc_response_plot_svg(const vc_response *resp, char **svg, size_t *len, vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    *svg = NULL;
    if (len) *len = 0;
    if (resp->kind != VC_RESP_SWEEP || !resp->plot) return VC_OK;
    vc_plot_point *pts = calloc(resp->nsweep, sizeof *pts);
    if (!pts) return nomem(err);
    bool gpu = resp->have_gpu;
    for (size_t i = 0; i < resp->nsweep; i++) {
        const vc_memory *m = &resp->rows[i].memory;
        pts[i] = (vc_plot_point){resp->sweep[i], m->weights, m->gradients, m->optimizer_states, m->activations,
                                 m->peak_allocated, m->total, !gpu || m->total <= resp->gpu.capacity};
    }
    const vc_options *o = &resp->o;
    char sub[256];
    snprintf(sub, sizeof sub, "%s, %s%s%s%s%s", vc_mode_name(o->mode), vc_precision_name(o->precision),
             o->mode == VC_MODE_TRAIN ? ", " : "", o->mode == VC_MODE_TRAIN ? vc_optim_name(o->optim) : "",
             gpu ? ", on " : "", gpu ? resp->gpu.name : "");
    const vc_report *rep = &resp->rep;
    vc_plot p = {rep->model[0] ? rep->model : rep->file ? rep->file : "counts-only estimate", sub, pts, resp->nsweep,
                 gpu ? resp->gpu.name : NULL, resp->gpu.capacity, resp->plot_max};
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) {
        free(pts);
        return nomem(err);
    }
    svg_render(f, &p);
    free(pts);
    if (fclose(f)) {
        free(buf);
        return nomem(err);
    }
    *svg = buf;
    if (len) *len = n;
    return VC_OK;
}

vc_status vc_layer_list_text(int width, char **text, size_t *len, vc_error *err)
{
    vc_error_clear(err); /* an out-parameter: cleared first (vramcalc.h) */
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return nomem(err);
    /* a line per kind (scripts read the first word); summaries wrapped to the width */
    for (size_t i = 0; i <= vc_kind_count(); i++) {
        char head[64];
        snprintf(head, sizeof head, "%-28s", i < vc_kind_count() ? vc_kind_name(i) : "Sequential");
        print_wrapped(f, head, i < vc_kind_count() ? vc_kind_summary(i) : "a block of layers (a scope), with repeat/frozen/checkpoint",
                      width > 0 ? width : INT32_MAX, 29);
    }
    if (fclose(f)) {
        free(buf);
        return nomem(err);
    }
    *text = buf;
    if (len) *len = n;
    return VC_OK;
}
