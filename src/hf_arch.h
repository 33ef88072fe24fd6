/*
 * hf_arch.h — the architecture a Hugging Face config.json describes, as
 * src/hf_read.c reads it, src/hf_tp.c splits it over tensor-parallel ranks
 * and src/hf_layers.c writes it as layers; src/hf.c runs the three.
 * Private to those files.
 */
#ifndef VC_HF_ARCH_H
#define VC_HF_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "vramcalc/vramcalc.h"

enum { F_LLAMA, F_MISTRAL, F_QWEN2, F_QWEN3, F_GEMMA, F_GEMMA2, F_PHI3, F_MIXTRAL, F_QWEN2_MOE, F_GPT2, F_GPT_NEOX,
       F_BERT, F_ROBERTA, F_COUNT };

enum { A_SILU, A_GELU, A_GELU_TANH, A_RELU, A_GELU_NEW, A_GELU_FAST };

typedef struct {
    int fam;
    int64_t V, H, I, N, NH, KV, D, R, maxpos, types, labels, seq;
    double eps, p_embd, p_attn, p_resid, final_cap, attn_cap;
    bool tie, qkv_bias, o_bias, mlp_bias, qk_norm, parallel;
    int act;
    int64_t window;
    bool window_alt;                   /* gemma2: every other layer */
    bool eager;                        /* attn_implementation "eager" (gemma2's default) */
    int64_t E, K, moe_I, shared_I, sparse_step;
    bool norm_topk;
    const cJSON *mlp_only;             /* qwen2_moe: mlp_only_layers */
    double imbalance;
    bool ckpt;          /* gradient checkpointing per decoder layer */
    int64_t sp;         /* --tp --sp: the TP degree the sequence is split over, 1 none */
} arch;

/* The supported model_types, as the errors list them. */
#define FAMILIES "llama, mistral, qwen2, qwen3, gemma, gemma2, phi3, mixtral, qwen2_moe, gpt2, gpt_neox, bert, roberta"

/* The largest size a key or --seq may give: 2^40. */
#define MAX_SIZE (INT64_C(1) << 40)

/* The reader's state, which the writer shares for oom and sp. */
typedef struct {
    const cJSON *cfg;
    vc_error *err;
    const char *fam;
    bool oom;
    int64_t sp; /* arch.sp: Linears and embeddings get their sequence-parallel keys */
} rd;

/* hf_read.c: the family's keys (r->fam and a->fam set) read into a, with
 * their PretrainedConfig defaults, then the products that become tensor
 * sizes checked. -1 with r->err naming the key. */
int vc__hf_read(rd *r, arch *a);
/* hf_layers.c: a's layers appended to arr (r->oom set when out of memory). */
void vc__hf_write(rd *r, cJSON *arr, const arch *a);

/* hf_tp.c: a's share on one of o->tp tensor-parallel ranks (Megatron's
 * split, docs/parallel.md 2.6): the column-parallel widths divided, the
 * vocabulary padded and divided. Errors name --tp / --sp. */
int vc__hf_tp_split(arch *a, const vc_hf_options *o, vc_error *err);
/* With --sp: "sequence_gather" for a column-parallel Linear, "sequence_scatter"
 * for a row-parallel one (by the HF module name's last part), NULL otherwise. */
const char *vc__hf_sp_role(const char *name);

#endif
