/*
 * hf.c — a Hugging Face config.json as a vramcalc model (issue 12).
 *
 * vc_hf_build() reads the config (a JSON object with "model_type" and no
 * "layers") and writes the equivalent vramcalc model as a cJSON tree: the
 * same format a user could write by hand (vramcalc --emit-model prints it),
 * which the normal loader then loads. Layers are named as the HF modules
 * are (model.embed_tokens, model.layers > self_attn.q_proj, mlp.down_proj,
 * lm_head, ...), projections are Linear layers, and the new kinds of
 * layers/llm.c do the rest. Every architecture follows its modeling_*.py at
 * huggingface/transformers 5dd4a63548857797727ae73eeb6a6e886ea02a3e.
 *
 * This file holds the families' table, the public helpers and the entry
 * point; the keys are read and checked in hf_read.c, the layers written in
 * hf_layers.c (the module each layer stands for is named there), one
 * tensor-parallel rank's share is taken in hf_tp.c.
 *
 * Errors name the config key (err->path) and exit 2 in the CLI; nothing is
 * guessed: a key the family needs and the config lacks is an error, a key
 * with a PretrainedConfig default takes that default.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf.h"
#include "hf_arch.h"
#include "policy.h"
#include "util.h"

static const char *const fam_names[F_COUNT] = {"llama", "mistral", "qwen2",    "qwen3", "gemma",    "gemma2", "phi3",
                                               "mixtral", "qwen2_moe", "gpt2", "gpt_neox", "bert", "roberta"};

const char *vc_hf_families(void) { return FAMILIES; }

/* PEFT's default target_modules per model_type (peft/utils/constants.py
 * TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING), as the layers here
 * are named. */
static const char *const lora_targets[F_COUNT] = {
    [F_LLAMA] = "q_proj,v_proj",     [F_MISTRAL] = "q_proj,v_proj",   [F_QWEN2] = "q_proj,v_proj",
    [F_QWEN3] = "q_proj,v_proj",     [F_GEMMA] = "q_proj,v_proj",     [F_GEMMA2] = "q_proj,v_proj",
    [F_PHI3] = "qkv_proj,o_proj,gate_up_proj,down_proj",              [F_MIXTRAL] = "q_proj,v_proj",
    [F_QWEN2_MOE] = "q_proj,v_proj", [F_GPT2] = "c_attn",             [F_GPT_NEOX] = "query_key_value",
    [F_BERT] = "query,value",        [F_ROBERTA] = "query,value",
};

const char *vc_hf_lora_targets(const cJSON *cfg)
{
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    for (int i = 0; i < F_COUNT && cJSON_IsString(mt); i++)
        if (!strcmp(mt->valuestring, fam_names[i])) return lora_targets[i];
    return "";
}

/* vllm/config/model.py (vllm-project/vllm @ 18ec6629): _find_dtype reads
 * config.dtype (transformers turns a config.json's "torch_dtype" into it);
 * _STR_DTYPE_TO_TORCH_DTYPE names; _FLOAT16_NOT_SUPPORTED_MODELS. */
int vc_hf_dtype(const cJSON *cfg, bool *no_fp16)
{
    static const struct { const char *name; int dt; } names[] = {
        {"float32", VC_DT_F32}, {"float", VC_DT_F32}, {"float16", VC_DT_F16}, {"half", VC_DT_F16},
        {"bfloat16", VC_DT_BF16},
    };
    static const char *const no16[] = {"gemma2", "gemma3", "gemma3_text", "plamo2", "glm4"};
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    *no_fp16 = false;
    for (size_t i = 0; i < sizeof no16 / sizeof *no16 && cJSON_IsString(mt); i++)
        *no_fp16 |= !strcmp(mt->valuestring, no16[i]);
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(cfg, "dtype");
    if (!cJSON_IsString(d)) d = cJSON_GetObjectItemCaseSensitive(cfg, "torch_dtype");
    for (size_t i = 0; i < sizeof names / sizeof *names && cJSON_IsString(d); i++)
        if (!strcmp(d->valuestring, names[i].name)) return names[i].dt;
    return -1;
}

bool vc_hf_is_config(const cJSON *root)
{
    return cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "model_type") &&
           !cJSON_GetObjectItemCaseSensitive(root, "layers");
}

void vc_hf_options_init(vc_hf_options *o)
{
    o->seq = 0; /* 0: VC_HF_DEFAULT_SEQ, or the learned-position limit when smaller */
    o->moe_imbalance = 1.0;
    o->checkpoint = 0;
    o->loss = VC_LOSS_IMPL_HF;
    o->tp = 1;
    o->sp = 0;
    o->loss_chunks = 8; /* CEWithChunkedOutputLoss(num_output_chunks=8) */
}
vc_status vc_hf_build(const cJSON *cfg, const vc_hf_options *o, cJSON **model, vc_error *err)
{
    *model = NULL;
    rd r = {cfg, err, "", false, 1};
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    if (!cJSON_IsString(mt))
        return vc_set_error(err, VC_ERR_MODEL, "model_type", "expected a string naming the architecture (supported: " FAMILIES ")");
    arch a;
    memset(&a, 0, sizeof a);
    a.fam = -1;
    for (int i = 0; i < F_COUNT; i++)
        if (!strcmp(mt->valuestring, fam_names[i])) a.fam = i;
    if (a.fam < 0) {
        char e[80];
        vc_escape(e, sizeof e, mt->valuestring);
        return vc_set_error(err, VC_ERR_MODEL, "model_type", "unsupported model_type \"%s\" (supported: " FAMILIES ")", e);
    }
    r.fam = fam_names[a.fam];
    a.imbalance = o ? o->moe_imbalance : 1.0;
    a.ckpt = o && o->checkpoint;
    if (vc__hf_read(&r, &a)) return err->code; /* the keys, checked (hf_read.c) */
    /* the sequence: --seq, else 2048, or the learned positions when fewer */
    int64_t npos = a.fam == F_GPT2 ? a.maxpos : a.fam == F_BERT ? a.maxpos : a.fam == F_ROBERTA ? a.maxpos - a.window : 0;
    a.seq = o && o->seq > 0 ? o->seq : VC_HF_DEFAULT_SEQ;
    if (!(o && o->seq > 0) && npos > 0 && npos < a.seq) a.seq = npos;
    if (npos > 0 && a.seq > npos)
        return vc_set_error(err, VC_ERR_USAGE, "--seq", "%lld tokens: %s has %lld learned positions (%s)", (long long)a.seq,
                            r.fam, (long long)npos, a.fam == F_GPT2 ? "n_positions" : "max_position_embeddings");
    if (a.seq > MAX_SIZE) return vc_set_error(err, VC_ERR_USAGE, "--seq", "%lld tokens: more than 2^40", (long long)a.seq);
    /* --loss: the causal LM's loss, a row of src/loss.c's table by its option name */
    bool encoder = a.fam == F_BERT || a.fam == F_ROBERTA;
    unsigned li = o ? (unsigned)o->loss : VC_LOSS_IMPL_HF;
#define VC__LNAME(e, n) n,
    static const char *const loss_opts[] = {VC_LOSS_MAP(VC__LNAME) NULL};
#undef VC__LNAME
    if (li >= VC_LOSS_IMPL__N) return vc_set_error(err, VC_ERR_USAGE, "--loss", "unknown loss");
    int lrow = vc__loss_from_option(loss_opts[li]);
    if (encoder && li != VC_LOSS_IMPL_HF)
        return vc_set_error(err, VC_ERR_USAGE, "--loss", "%s is a causal-LM loss; %s is an encoder with a classification "
                            "head (cross_entropy)", loss_opts[li], r.fam);
    const vc_loss_row *lr = lrow >= 0 ? vc_loss_row_get((vc_loss)lrow) : NULL;
    if (o && (o->loss_chunks < 1 || o->loss_chunks > MAX_SIZE))
        return vc_set_error(err, VC_ERR_USAGE, "--loss-chunks", "expected a positive number of chunks, at most 2^40");
    if (lr && lr->tp_why && o && o->tp > 1) /* a row a tensor-parallel rank cannot run (src/loss.c) */
        return vc_set_error(err, VC_ERR_USAGE, "--loss", "%s with --tp is not modelled: %s", loss_opts[li], lr->tp_why);
    if (vc__hf_tp_split(&a, o, err)) return err->code; /* one tensor-parallel rank's share (hf_tp.c) */
    r.sp = a.sp;
    /* a decoder on a tensor-parallel rank: Megatron's vocab-parallel cross-entropy (hf_tp.c) */
    const char *loss_name = encoder ? "cross_entropy" : o && o->tp > 1 ? "vocab_parallel" : lr ? lr->name : "causal_lm";

    cJSON *m = cJSON_CreateObject();
    cJSON *layers = m ? cJSON_CreateArray() : NULL;
    if (!layers) {
        cJSON_Delete(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    char nm[160], src[120];
    const cJSON *arch_list = cJSON_GetObjectItemCaseSensitive(cfg, "architectures");
    const cJSON *a0 = cJSON_IsArray(arch_list) ? cJSON_GetArrayItem(arch_list, 0) : NULL;
    char an[80] = "";
    if (cJSON_IsString(a0)) vc_escape(an, sizeof an, a0->valuestring);
    if (a.fam == F_BERT || a.fam == F_ROBERTA) /* the task head built, whatever the checkpoint's class */
        snprintf(an, sizeof an, "%s", a.fam == F_BERT ? "BertForSequenceClassification" : "RobertaForSequenceClassification");
    snprintf(nm, sizeof nm, "%s%s%s (Hugging Face config, seq %lld)", r.fam, an[0] ? " " : "", an, (long long)a.seq);
    snprintf(src, sizeof src, "transformers modeling_%s.py (model_type %s)", r.fam, r.fam);
    cJSON *in = cJSON_AddStringToObject(m, "name", nm) && cJSON_AddStringToObject(m, "source", src)
                    ? cJSON_AddObjectToObject(m, "input") : NULL;
    cJSON *shape = in ? cJSON_AddArrayToObject(in, "shape") : NULL;
    bool ok = shape != NULL;
    if (ok) {
        cJSON *len = cJSON_CreateNumber((double)a.seq);
        ok = len && cJSON_AddItemToArray(shape, len);
        if (!ok) cJSON_Delete(len);
    }
    ok = ok && cJSON_AddStringToObject(in, "dtype", "int64") &&
         cJSON_AddStringToObject(m, "loss", loss_name);
    if (ok && lrow == VC_LOSS_CHUNKED && !encoder && !(o && o->tp > 1)) /* torchtune's num_output_chunks (src/loss.c emit_chunked) */
        ok = cJSON_AddNumberToObject(m, "loss_chunks", (double)(o ? o->loss_chunks : 8)) != NULL;
    /* the positions a generation may reach: max_position_embeddings (n_positions), unless a
     * sliding window bounds what attention sees (generate.c refuses longer prompts) */
    if (ok && a.maxpos > 0 && a.window == 0 && a.fam != F_BERT && a.fam != F_ROBERTA)
        ok = cJSON_AddNumberToObject(m, "max_positions", (double)a.maxpos) != NULL;
    if (!ok || !cJSON_AddItemToObject(m, "layers", layers)) {
        cJSON_Delete(layers);
        cJSON_Delete(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    vc__hf_write(&r, layers, &a); /* the layers (hf_layers.c) */
    if (r.oom) {
        cJSON_Delete(m);
        return vc_set_error(err, VC_ERR_NOMEM, NULL, "out of memory");
    }
    *model = m;
    return VC_OK;
}
