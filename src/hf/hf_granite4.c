/*
 * hf_granite4.c — IBM Granite 4.0 (model_type granitemoehybrid; issue 31), and Mamba2ForCausalLM (model_type
 * mamba2: the same Mamba2 mixer; its sources and what is modelled in the section "mamba2" at the end): Granite-4.0-H-Small,
 * H-Tiny, H-Micro (Mamba2 and attention layers) and Granite-4.0-Micro (attention only): the keys of
 * GraniteMoeHybridConfig the row's generic reading (hf_read.c) cannot check, the parameters, the layers; and NVIDIA
 * Nemotron-H (model_type nemotron_h, its section at the end), whose Mamba2 layers are the same kind.
 *
 * Sources, huggingface/transformers:
 *  - configuration_granitemoehybrid.py @ 008f5c8c, GraniteMoeHybridConfig.__init__: vocab_size 32000,
 *    hidden_size 4096, intermediate_size 11008, num_hidden_layers 32, num_attention_heads 32,
 *    num_key_value_heads None -> num_attention_heads, hidden_act silu, max_position_embeddings 2048,
 *    rms_norm_eps 1e-6, tie_word_embeddings False, attention_bias False, attention_dropout 0,
 *    embedding_multiplier 1, logits_scaling 1, residual_multiplier 1, attention_multiplier 1,
 *    num_local_experts 8, num_experts_per_tok 2, output_router_logits False, shared_intermediate_size
 *    1024, position_embedding_type None (allowed: None, "rope"), layer_types None (each "mamba" or
 *    "attention", else ValueError; attribute_map layers_block_type -> layer_types; the property
 *    layers_block_type: layer_types or ["mamba"] x num_hidden_layers), mamba_n_heads 128,
 *    mamba_n_groups 1, mamba_d_state 256, mamba_d_head "auto" (mamba_expand x hidden_size //
 *    mamba_n_heads; ValueError unless mamba_n_heads divides mamba_expand x hidden_size and
 *    mamba_d_head x mamba_n_heads equals it), mamba_d_conv 4, mamba_expand 2, mamba_chunk_size 256,
 *    mamba_conv_bias True, mamba_proj_bias False;
 *  - modeling_granitemoehybrid.py @ 00511f5d: GraniteMoeHybridAttention (q/k/v/o_proj with
 *    attention_bias, head_dim = getattr(config, "head_dim", hidden // heads), scaling
 *    attention_multiplier); GraniteMoeHybridMambaLayer (layers/mamba2.c); GraniteMoeHybridMLP
 *    (shared_mlp: input_linear nn.Linear(H, 2 shared_intermediate_size, bias=False), chunk(2),
 *    act(first) * second, output_linear nn.Linear(shared_intermediate_size, H, bias=False));
 *    GraniteMoeHybridMoE (block_sparse_moe, when num_local_experts > 0: input_linear
 *    GraniteMoeHybridParallelExperts [E, 2 intermediate_size, H], output_linear [E, H,
 *    intermediate_size], router GraniteMoeHybridTopKGating.layer nn.Linear(H, E, bias=False));
 *    GraniteMoeHybridDecoderLayer (input_layernorm, mamba or self_attn, residual + h x
 *    residual_multiplier, post_attention_layernorm, block_sparse_moe(h) + shared_mlp(h) or shared_mlp(h)
 *    alone, residual + h x residual_multiplier); GraniteMoeHybridModel (embed_tokens, x
 *    embedding_multiplier, rotary_emb only when position_embedding_type == "rope", layers, norm);
 *    GraniteMoeHybridForCausalLM (lm_head, tied by _tied_weights_keys under tie_word_embeddings;
 *    logits / logits_scaling).
 *
 * Written here: every model for training, LoRA, inference and generate (the Mamba2 layers' kernel path,
 * layers/mamba2.c; the routed experts' per-expert loop, layers/granitemoe.c); --serve of the H models (vLLM's
 * MambaMixer2 profiling run, layers/mamba2.c; GraniteMoeMoE's FusedMoE, layers/granitemoe.c; the Mamba state
 * pages, src/engine/serve.c mamba_state); --serve of Granite-4.0-Micro (no Mamba layer: vLLM's ModelConfig.is_hybrid
 * is False, a plain decoder's pages, src/engine/serve.c). Refused in one line: --tp, --ep, --moe-imbalance.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

static bool is_int(const cJSON *v) { return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble); }

/* An integer key in [min, 2^40]: def when absent or null. */
static int gh_int(rd *r, const char *key, int64_t def, int64_t min, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return 0;
    }
    if (!is_int(v) || v->valuedouble < (double)min || v->valuedouble > (double)MAX_SIZE)
        return vc__hf_bad(r, key, "expected an integer from %lld to 2^40", (long long)min);
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int gh_bool(rd *r, const char *key, bool def, bool *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    *out = def;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return vc__hf_bad(r, key, "expected true or false");
    *out = cJSON_IsTrue(v);
    return 0;
}

static int params_bound(rd *r, const arch *a, int64_t inter);

/* `key` (mamba_expand, expand): a number above 0, 2 when absent or null */
static int gh_expand(rd *r, const char *key, double *out)
{
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    *out = 2;
    if (ex && !cJSON_IsNull(ex)) {
        if (!cJSON_IsNumber(ex) || !isfinite(ex->valuedouble) || ex->valuedouble <= 0 || ex->valuedouble > (double)MAX_SIZE)
            return vc__hf_bad(r, key, "expected a number above 0");
        *out = ex->valuedouble;
    }
    return 0;
}

/* mamba_d_head: "auto" (or absent, null) the intermediate // mamba_n_heads, else an integer; head_dim x heads must be
 * the intermediate (`what`), as `cls` checks */
static int gh_d_head(rd *r, arch *a, int64_t inter, const char *what, const char *cls)
{
    const cJSON *dh = cJSON_GetObjectItemCaseSensitive(r->cfg, "mamba_d_head");
    if (!dh || cJSON_IsNull(dh) || (cJSON_IsString(dh) && !strcmp(dh->valuestring, "auto"))) {
        a->gh.mp = inter / a->gh.mh;
    } else if (cJSON_IsString(dh)) {
        return vc__hf_bad(r, "mamba_d_head", "expected an integer or \"auto\"");
    } else if (gh_int(r, "mamba_d_head", 0, 1, &a->gh.mp)) {
        return -1;
    }
    if (a->gh.mp * a->gh.mh != inter)
        return vc__hf_bad(r, "mamba_d_head", "%lld x mamba_n_heads (%lld) must equal %s (%lld): %s raises ValueError",
                          (long long)a->gh.mp, (long long)a->gh.mh, what, (long long)inter, cls);
    return 0;
}

bool vc__hf_granite4_mamba(const arch *a, int64_t i)
{
    if (!a->gh.types) return true; /* layers_block_type: ["mamba"] x num_hidden_layers */
    return !strcmp(cJSON_GetArrayItem(a->gh.types, (int)i)->valuestring, "mamba");
}

int vc__hf_granite4_read(rd *r, arch *a)
{
    /* layer_types, or layers_block_type (attribute_map) */
    const char *tk = cJSON_GetObjectItemCaseSensitive(r->cfg, "layer_types") ? "layer_types" : "layers_block_type";
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(r->cfg, tk);
    a->gh.types = NULL;
    if (t && !cJSON_IsNull(t)) {
        if (!cJSON_IsArray(t) || cJSON_GetArraySize(t) < a->N)
            return vc__hf_bad(r, tk, "expected a list of at least %lld layer types (\"mamba\" or \"attention\")", (long long)a->N);
        for (const cJSON *e = t->child; e; e = e->next)
            if (!cJSON_IsString(e) || (strcmp(e->valuestring, "mamba") && strcmp(e->valuestring, "attention")))
                return vc__hf_bad(r, tk, "expected \"mamba\" or \"attention\" for each layer (GraniteMoeHybridConfig raises "
                                  "ValueError on others)");
        a->gh.types = t;
    }
    a->gh.hkey = "mamba_n_heads";
    a->gh.gkey = "mamba_n_groups";
    if (gh_int(r, "mamba_n_heads", 128, 1, &a->gh.mh) || gh_int(r, "mamba_n_groups", 1, 1, &a->gh.mg) ||
        gh_int(r, "mamba_d_state", 256, 1, &a->gh.mn) || gh_int(r, "mamba_d_conv", 4, 1, &a->gh.mk) ||
        gh_int(r, "mamba_chunk_size", 256, 1, &a->gh.chunk) || gh_bool(r, "mamba_conv_bias", true, &a->gh.conv_bias) ||
        gh_bool(r, "mamba_proj_bias", false, &a->gh.proj_bias))
        return -1;
    /* mamba_intermediate = mamba_expand x hidden_size (a float expand allowed: the layer takes
     * int(mamba_expand x hidden_size)); the config's `mamba_intermediate % mamba_n_heads != 0` raises */
    double expand;
    if (gh_expand(r, "mamba_expand", &expand)) return -1;
    const double inter_f = expand * (double)a->H;
    if (inter_f > (double)MAX_SIZE)
        return vc__hf_bad(r, "mamba_expand", "%g x hidden_size (%lld) is more than 2^40", expand, (long long)a->H);
    if (inter_f != floor(inter_f) || fmod(inter_f, (double)a->gh.mh) != 0)
        return vc__hf_bad(r, "mamba_n_heads", "%lld must divide mamba_expand x hidden_size (%g): GraniteMoeHybridConfig "
                          "raises ValueError", (long long)a->gh.mh, inter_f);
    const int64_t inter = (int64_t)inter_f;
    if (gh_d_head(r, a, inter, "mamba_expand x hidden_size", "GraniteMoeHybridConfig")) return -1;
    if (a->gh.mh % a->gh.mg) /* mamba_split_conv1d_scan_combined: assert nheads % ngroups == 0 */
        return vc__hf_bad(r, "mamba_n_groups", "%lld must divide mamba_n_heads (%lld)", (long long)a->gh.mg, (long long)a->gh.mh);
    /* conv_dim's groups x state and the chunk scan's state [heads, head_dim, state] within 2^48 */
    if (a->gh.mg > MAX_SIZE / a->gh.mn || inter > (INT64_C(1) << 48) / a->gh.mn)
        return vc__hf_bad(r, "mamba_d_state", "%lld: the Mamba state (intermediate x state) would pass 2^48 elements",
                          (long long)a->gh.mn);
    /* position_embedding_type: None or "rope" (GraniteMoeHybridModel builds rotary_emb only for "rope";
     * the checkpoints write "nope") */
    const cJSON *pe = cJSON_GetObjectItemCaseSensitive(r->cfg, "position_embedding_type");
    a->gh.rope = false;
    if (pe && !cJSON_IsNull(pe)) {
        if (!cJSON_IsString(pe) || (strcmp(pe->valuestring, "rope") && strcmp(pe->valuestring, "nope")))
            return vc__hf_bad(r, "position_embedding_type", "expected \"rope\", \"nope\" or null");
        a->gh.rope = !strcmp(pe->valuestring, "rope");
    }
    a->R = a->gh.rope ? a->D : 0;
    if (a->gh.rope && a->D % 2)
        return vc__hf_bad(r, "num_attention_heads", "head_dim %lld: the rotary embedding needs an even head_dim", (long long)a->D);
    const cJSON *am = cJSON_GetObjectItemCaseSensitive(r->cfg, "attention_multiplier");
    a->gh.attn_mult = 1.0;
    if (am && !cJSON_IsNull(am)) {
        if (!cJSON_IsNumber(am) || !isfinite(am->valuedouble) || am->valuedouble <= 0 || am->valuedouble > 1e9)
            return vc__hf_bad(r, "attention_multiplier", "expected a number above 0, at most 1e9 (the softmax scale)");
        a->gh.attn_mult = am->valuedouble;
    }
    /* the experts: num_local_experts 0 is the dense model (no block_sparse_moe) */
    if (gh_int(r, "num_local_experts", 8, 0, &a->gh.E) || gh_int(r, "num_experts_per_tok", 2, 0, &a->gh.K)) return -1;
    if (a->gh.E > 0 && (a->gh.K < 1 || a->gh.K > a->gh.E))
        return vc__hf_bad(r, "num_experts_per_tok", "%lld: top-k routing needs from 1 to num_local_experts (%lld) experts",
                          (long long)a->gh.K, (long long)a->gh.E);
    if (a->shared_I < 1)
        return vc__hf_bad(r, "shared_intermediate_size", "expected at least 1 (shared_mlp runs on every layer)");
    if (a->act != A_SILU && a->act != A_GELU)
        return vc__hf_bad(r, "hidden_act", "only silu and gelu are modelled for granitemoehybrid's MLPs");
    bool router_logits = false;
    if (gh_bool(r, "output_router_logits", false, &router_logits)) return -1;
    if (router_logits && a->gh.E > 0)
        return vc__hf_bad(r, "output_router_logits", "true (the auxiliary load-balancing loss in training) is not modelled");
    return params_bound(r, a, inter);
}

/* The whole model within 2^56 parameters (hf_read.c check_total's bound does not see the Mamba layers):
 * the experts, shared_mlp and the mixer of every layer, the embeddings and lm_head. */
static int params_bound(rd *r, const arch *a, int64_t inter)
{
    int64_t tot = 0;
    const int64_t lim = INT64_C(1) << 56;
    int64_t per = 0, m;
    bool ovf = __builtin_mul_overflow(a->gh.E, 3 * a->I, &m) || __builtin_mul_overflow(m, a->H, &per) ||
               __builtin_mul_overflow(3 * a->shared_I, a->H, &m) || __builtin_add_overflow(per, m, &per) ||
               __builtin_mul_overflow(4 * inter + 2 * a->gh.mg * a->gh.mn, a->H, &m) || __builtin_add_overflow(per, m, &per) ||
               __builtin_mul_overflow(per, a->N, &tot) || __builtin_mul_overflow(a->V, 2 * a->H, &m) ||
               __builtin_add_overflow(tot, m, &tot);
    if (ovf || tot > lim)
        return vc__hf_bad(r, "num_hidden_layers", "%lld layers: more than 2^56 parameters, byte counts would overflow 64-bit "
                          "arithmetic", (long long)a->N);
    return 0;
}

/* One GraniteMoeHybridDecoderLayer's parameters; *routed: its experts'. */
static int64_t layer_params(const arch *a, int64_t i, int64_t *routed)
{
    const int64_t H = a->H, Di = a->gh.mh * a->gh.mp, CD = Di + 2 * a->gh.mg * a->gh.mn;
    int64_t p = 2 * H; /* input_layernorm, post_attention_layernorm */
    if (vc__hf_granite4_mamba(a, i)) {
        p += H * (Di + CD + a->gh.mh) + (a->gh.proj_bias ? Di + CD + a->gh.mh : 0); /* in_proj */
        p += CD * a->gh.mk + (a->gh.conv_bias ? CD : 0);                          /* conv1d */
        p += 3 * a->gh.mh;                                                        /* dt_bias, A_log, D */
        p += Di;                                                                  /* norm */
        p += Di * H + (a->gh.proj_bias ? H : 0);                                  /* out_proj */
    } else {
        const int64_t q = a->NH * a->D, kv = a->KV * a->D;
        p += H * (q + 2 * kv) + q * H + (a->qkv_bias ? q + 2 * kv + H : 0); /* q, k, v, o_proj (attention_bias) */
    }
    p += 3 * a->shared_I * H; /* shared_mlp.input_linear [2S, H], output_linear [H, S] */
    *routed = a->gh.E > 0 ? a->gh.E * 3 * a->I * H : 0;
    if (a->gh.E > 0) p += *routed + a->gh.E * H; /* block_sparse_moe: input_linear, output_linear, router.layer */
    return p;
}

int64_t vc__hf_granite4_parameters(const arch *a, int64_t *active)
{
    int64_t tot = a->V * a->H + a->H, act = tot; /* embed_tokens, norm */
    for (int64_t i = 0; i < a->N; i++) {
        int64_t routed, p = layer_params(a, i, &routed);
        tot += p;
        act += p - (a->gh.E > 0 ? routed / a->gh.E * (a->gh.E - a->gh.K) : 0);
    }
    if (!a->tie) { /* lm_head */
        tot += a->V * a->H;
        act += a->V * a->H;
    }
    if (active) *active = act;
    return tot;
}

/* --tp of a family with Mamba2 layers: vLLM's split under --serve (hf_tp.c vc__hf_tp_split), training's refused.
 * Upstream (issue 31): transformers cannot shard them: Mamba2Config (configuration_mamba2.py @ f2a39d49),
 * GraniteMoeHybridConfig (@ 4f7e1d46), NemotronHConfig (@ cfeb552e) and FalconH1Config (@ 7abb76c5) declare no
 * base_model_tp_plan, and torchtitan has no Mamba model. Megatron-core does split them: megatron/core/ssm/
 * mamba_mixer.py @ 00bebb45 MambaMixer.__init__ (asserts nheads % tp == 0 and ngroups % tp == 0, no bias, conv_bias,
 * not norm_before_gate; in_proj a ColumnParallelLinear of [z, x, B, C, dt] per rank, conv1d over d_inner / tp + 2
 * ngroups / tp x d_state, A_log / D / dt_bias over nheads / tp, the gated norm over d_inner / tp in groups of
 * d_inner / ngroups, out_proj a RowParallelLinear): not modelled here yet, so refused and said so. */
static int m2_tp(const arch *a, vc_hf_split split, vc_error *err)
{
    if (split.tp > 1 && !split.vllm)
        return vc_set_error(err, VC_ERR_USAGE, O("tp"), "%s: tensor parallelism of the Mamba2 layers is modelled only as "
                            "vLLM splits them, under " O("serve") " (transformers' %s declares no base_model_tp_plan; "
                            "Megatron-core's MambaMixer split is not modelled)", a->f->model_type, a->f->config_class);
    return 0;
}

int vc__hf_granite4_unmodelled(const arch *a, vc_hf_split split, vc_error *err)
{
    if (a->gh.E > 0 && a->imbalance > 1.0)
        return vc_set_error(err, VC_ERR_USAGE, O("moe_imbalance"), "granitemoehybrid's experts (GraniteMoE) are modelled with "
                            "the tokens spread evenly");
    if (a->gh.E > 4096)
        return vc_set_error(err, VC_ERR_USAGE, "num_local_experts", "%lld experts: more than the 4096 modelled",
                            (long long)a->gh.E);
    return m2_tp(a, split, err);
}

static void g_linear(rd *r, cJSON *arr, const char *name, const char *in, int64_t nin, int64_t nout, bool bias)
{
    cJSON *o = vc__hf_layer(r, arr, "Linear", name);
    if (in) vc__hf_ins(r, o, in, NULL, NULL, NULL);
    vc__hf_num(r, o, "in_features", (double)nin);
    vc__hf_num(r, o, "out_features", (double)nout);
    vc__hf_flag(r, o, "bias", bias);
}

static void g_norm(rd *r, cJSON *arr, const arch *a, const char *name, const char *held_until)
{
    cJSON *o = vc__hf_layer(r, arr, "HFRMSNorm", name);
    vc__hf_num(r, o, "hidden_size", (double)a->H);
    vc__hf_num(r, o, "eps", a->eps);
    if (held_until) vc__hf_str(r, o, "held_until", held_until);
}

/* x * factor (a Python float): a new tensor; `in` NULL the layer before */
static void g_scale(rd *r, cJSON *arr, const char *name, const char *in, double factor)
{
    cJSON *o = vc__hf_layer(r, arr, "Scale", name);
    vc__hf_num(r, o, "factor", factor);
    if (in) vc__hf_ins(r, o, in, NULL, NULL, NULL);
}

/* residual + hidden_states * residual_multiplier: the product a new tensor, then the sum */
static void g_residual(rd *r, cJSON *arr, const arch *a, const char *scale, const char *add, const char *from,
                       const char *residual)
{
    g_scale(r, arr, scale, from, a->resid_mult);
    vc__hf_ins(r, vc__hf_layer(r, arr, "Add", add), residual, scale, NULL, NULL);
}

/* lm_head: a Linear from the hidden size to the vocabulary without bias, tied to `tie_to` under tie_word_embeddings
 * (tie_to NULL: never tied) */
static void g_lm_head(rd *r, cJSON *arr, const arch *a, const char *tie_to)
{
    cJSON *o = vc__hf_layer(r, arr, "Linear", "lm_head");
    vc__hf_num(r, o, "in_features", (double)a->H);
    vc__hf_num(r, o, "out_features", (double)a->V);
    vc__hf_flag(r, o, "bias", false);
    if (tie_to && a->tie) vc__hf_str(r, o, "tie", tie_to);
}

/* The Mamba2Mixer layer after in_proj (layers/mamba2.c), out_proj's bias `bias`; grouped: the gated norm's variance
 * per group (nemotron_h's Zamba2RMSNormGated, group_size = intermediate // n_groups) */
static cJSON *g_mixer_core(rd *r, cJSON *arr, const arch *a, const char *name, bool bias, bool grouped)
{
    cJSON *o = vc__hf_layer(r, arr, "Mamba2Mixer", name);
    vc__hf_num(r, o, "num_heads", (double)a->gh.mh);
    vc__hf_num(r, o, "head_dim", (double)a->gh.mp);
    vc__hf_num(r, o, "n_groups", (double)a->gh.mg);
    vc__hf_num(r, o, "state_size", (double)a->gh.mn);
    vc__hf_num(r, o, "conv_kernel", (double)a->gh.mk);
    vc__hf_num(r, o, "chunk_size", (double)a->gh.chunk);
    vc__hf_num(r, o, "hidden_size", (double)a->H);
    vc__hf_flag(r, o, "conv_bias", a->gh.conv_bias);
    vc__hf_flag(r, o, "bias", bias);
    vc__hf_num(r, o, "eps", a->eps);
    if (grouped) vc__hf_num(r, o, "norm_groups", (double)a->gh.mg);
    if (a->gh.tp > 1) vc__hf_num(r, o, "tp", (double)a->gh.tp); /* vLLM's ranks (hf_tp.c): Mixer2RMSNormGated's path */
    return o;
}

/* A Mamba2 mixer (GraniteMoeHybridMambaLayer, Mamba2Mixer, NemotronHMamba2Mixer: the same modules): in_proj (on
 * `in`, NULL the layer before), then the rest in layers/mamba2.c */
static void g_mixer(rd *r, cJSON *arr, const arch *a, const char *in, const char *in_proj, const char *name, bool grouped)
{
    const int64_t Di = a->gh.mh * a->gh.mp, CD = Di + 2 * a->gh.mg * a->gh.mn;
    g_linear(r, arr, in_proj, in, a->H, Di + CD + a->gh.mh, a->gh.proj_bias);
    g_mixer_core(r, arr, a, name, a->gh.proj_bias, grouped);
}

static void g_layer(rd *r, cJSON *arr, const arch *a, int64_t i)
{
    const bool mamba = vc__hf_granite4_mamba(a, i);
    const char *mixer_end = mamba ? "mamba" : "self_attn.o_proj";
    g_norm(r, arr, a, "input_layernorm", mixer_end);
    if (mamba) { /* GraniteMoeHybridMambaLayer: in_proj, then the rest in layers/mamba2.c */
        g_mixer(r, arr, a, NULL, "mamba.in_proj", "mamba", false);
    } else { /* GraniteMoeHybridAttention: q/k/v_proj, the attention (no rotary with position_embedding_type nope), o_proj */
        const int64_t q = a->NH * a->D, kv = a->KV * a->D;
        g_linear(r, arr, "self_attn.q_proj", NULL, a->H, q, a->qkv_bias);
        g_linear(r, arr, "self_attn.k_proj", "input_layernorm", a->H, kv, a->qkv_bias);
        g_linear(r, arr, "self_attn.v_proj", "input_layernorm", a->H, kv, a->qkv_bias);
        cJSON *o = vc__hf_layer(r, arr, "RotaryAttention", "self_attn.attention");
        vc__hf_ins(r, o, "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", a->gh.rope ? "model.rotary_emb" : NULL);
        vc__hf_num(r, o, "num_heads", (double)a->NH);
        vc__hf_num(r, o, "num_kv_heads", (double)a->KV);
        vc__hf_num(r, o, "head_dim", (double)a->D);
        vc__hf_num(r, o, "rotary_dim", a->gh.rope ? (double)a->D : 0);
        vc__hf_flag(r, o, "causal", true);
        if (a->p_attn > 0) vc__hf_num(r, o, "dropout", a->p_attn);
        g_linear(r, arr, "self_attn.o_proj", NULL, q, a->H, a->qkv_bias);
    }
    g_residual(r, arr, a, "attn_residual_multiplier", "attn_residual", mixer_end, "input");
    g_norm(r, arr, a, "post_attention_layernorm", "shared_mlp.output_linear");
    static const char *const act_json[] = {"silu", "gelu", "gelu_tanh", "relu"};
    if (a->gh.E > 0) { /* block_sparse_moe(hidden_states) first (layers/granitemoe.c) */
        cJSON *m = vc__hf_layer(r, arr, "GraniteMoE", "block_sparse_moe");
        vc__hf_num(r, m, "hidden_size", (double)a->H);
        vc__hf_num(r, m, "intermediate_size", (double)a->I);
        vc__hf_num(r, m, "num_experts", (double)a->gh.E);
        vc__hf_num(r, m, "top_k", (double)a->gh.K);
        vc__hf_str(r, m, "activation", act_json[a->act]);
    }
    /* GraniteMoeHybridMLP: input_linear, chunk(2), act(first) * second, output_linear */
    g_linear(r, arr, "shared_mlp.input_linear", a->gh.E > 0 ? "post_attention_layernorm" : NULL, a->H, 2 * a->shared_I, false);
    cJSON *o = vc__hf_layer(r, arr, "GatedActivation", "shared_mlp.activation");
    vc__hf_flag(r, o, "fused", true);
    vc__hf_str(r, o, "activation", act_json[a->act]);
    g_linear(r, arr, "shared_mlp.output_linear", NULL, a->shared_I, a->H, false);
    if (a->gh.E > 0) /* moe_hidden_states + self.shared_mlp(hidden_states) */
        vc__hf_ins(r, vc__hf_layer(r, arr, "Add", "moe_shared_sum"), "block_sparse_moe", "shared_mlp.output_linear", NULL, NULL);
    g_residual(r, arr, a, "mlp_residual_multiplier", "mlp_residual", a->gh.E > 0 ? "moe_shared_sum" : "shared_mlp.output_linear",
               "attn_residual");
}

static int granite_kind(const arch *a, int64_t i) { return vc__hf_granite4_mamba(a, i); }

/* The decoder layers in runs of one kind (kind(a, i), NULL: one kind) and one checkpointing, one Sequential with
 * `repeat` each (hf_layers.c's layer_stack), the last named `name`: a run after the first is a loop, `keep` (the
 * first run's input, `first_in` when not the layer before) alive to the loop's end; body writes layer i. */
static void g_stack(rd *r, cJSON *arr, const arch *a, const char *name, const char *first_in, const char *keep,
                    int (*kind)(const arch *, int64_t), void (*body)(rd *, cJSON *, const arch *, int64_t))
{
    for (int64_t i = 0; i < a->N && !r->oom;) {
        const bool ck = a->ckpt && (i + 1) % a->ckpt_every == 0;
        int64_t j = i + 1;
        while (j < a->N && (!kind || kind(a, j) == kind(a, i)) && (a->ckpt && (j + 1) % a->ckpt_every == 0) == ck) j++;
        cJSON *seq = vc__hf_layer(r, arr, "Sequential", j == a->N ? name : NULL);
        if (!seq) return;
        if (i == 0 && first_in) vc__hf_ins(r, seq, first_in, NULL, NULL, NULL);
        if (j - i > 1) vc__hf_num(r, seq, "repeat", (double)(j - i));
        if (i > 0 && j - i > 1) vc__hf_flag(r, seq, "loop", true);
        if (i > 0 && j == a->N) vc__hf_str(r, seq, "keep", keep);
        if (ck) vc__hf_flag(r, seq, "checkpoint", true);
        cJSON *layers = cJSON_AddArrayToObject(seq, "layers");
        if (!layers) {
            r->oom = true;
            return;
        }
        body(r, layers, a, i);
        i = j;
    }
}

void vc__hf_granite4_write(rd *r, cJSON *arr, const arch *a)
{
    cJSON *o = vc__hf_layer(r, arr, "Embedding", "model.embed_tokens");
    vc__hf_num(r, o, "num_embeddings", (double)a->V);
    vc__hf_num(r, o, "embedding_dim", (double)a->H);
    o = vc__hf_layer(r, arr, "Scale", "model.embedding_multiplier"); /* inputs_embeds * embedding_multiplier */
    vc__hf_num(r, o, "factor", a->emb_mult);
    if (a->gh.rope) { /* GraniteMoeHybridRotaryEmbedding: position_embedding_type "rope" */
        o = vc__hf_layer(r, arr, "RotaryEmbedding", "model.rotary_emb");
        vc__hf_ins(r, o, "input", NULL, NULL, NULL);
        vc__hf_num(r, o, "head_dim", (double)a->D);
        vc__hf_num(r, o, "rotary_dim", (double)a->D);
    }
    g_stack(r, arr, a, "model.layers", "model.embedding_multiplier", "model.embedding_multiplier", granite_kind, g_layer);
    g_norm(r, arr, a, "model.norm", NULL);
    g_lm_head(r, arr, a, "model.embed_tokens");
    o = vc__hf_layer(r, arr, "Scale", "logits_scaling"); /* logits / config.logits_scaling */
    vc__hf_num(r, o, "factor", 1.0 / a->logits_scale);
}

/* ================================================== mamba2: Mamba2ForCausalLM
 *
 * Sources, huggingface/transformers:
 *  - configuration_mamba2.py @ f2a39d495c8c365996a33c6ae9506ad9c9339f4b, Mamba2Config.__init__: num_heads 128,
 *    head_dim 64, vocab_size 32768, hidden_size 4096, state_size 128, num_hidden_layers 64, layer_norm_epsilon
 *    1e-5, expand 2, conv_kernel 4, n_groups 8, use_bias False, use_conv_bias True, hidden_act silu,
 *    residual_in_fp32 True, time_step_rank "auto" (math.ceil(hidden_size / 16)), time_step_min 0.001,
 *    time_step_max 0.1, time_step_floor 1e-4, time_step_limit (0.0, inf), rescale_prenorm_residual False,
 *    rms_norm True, chunk_size 256, tie_word_embeddings False; no check of num_heads x head_dim;
 *  - modeling_mamba2.py @ 4711664e1c9dabe4e13b5bd6fe337507050f2157: Mamba2Mixer.__init__ (intermediate_size =
 *    int(expand x hidden_size), conv_dim = intermediate + 2 n_groups x state_size, conv1d depthwise with
 *    use_conv_bias, in_proj nn.Linear(hidden, intermediate + conv_dim + num_heads, bias=use_bias), dt_bias,
 *    A_log, norm MambaRMSNormGated(intermediate) whatever rms_norm says (self.rms_norm is stored, never read),
 *    D, out_proj nn.Linear(intermediate, hidden, bias=use_bias)): the modules and the fast path of
 *    GraniteMoeHybridMambaLayer (layers/mamba2.c), time_step_limit only a dt_limit argument of the kernels;
 *    cuda_kernels_forward runs causal_conv1d_fn only for hidden_act silu / swish (self.act(self.conv1d(...))
 *    otherwise, not modelled); Mamba2Cache: conv_states [layers, B, conv_dim, conv_kernel] and ssm_states
 *    [layers, B, heads, head_dim, state] zeros in the embeddings' dtype, made by Mamba2Model.forward before
 *    the first layer, written in place (src/engine/generate.c's per-layer states: the same bytes);
 *    Mamba2Block.forward: residual = hidden_states; self.norm(hidden_states.to(dtype=self.norm.weight.dtype));
 *    residual.to(torch.float32) under residual_in_fp32; the mixer; residual + hidden_states (float32 then);
 *    Mamba2Model: embeddings, layers, norm_f (Mamba2RMSNorm: LlamaRMSNorm's code);
 *  - modeling_mamba2.py @ 020a37d2264e60dc7beb9634c3e87ad870073e2c, Mamba2ForCausalLM.forward:
 *    self.lm_head(hidden_states[:, slice_indices, :].to(self.lm_head.weight.dtype)).float(); _tied_weights_keys
 *    {"lm_head.weight": "backbone.embeddings.weight"} (tied under tie_word_embeddings).
 * --serve: vLLM's Mamba2ForCausalLM is attention-free, its MambaSpec pages alone (src/engine/serve.c mamba_alone),
 * its MambaMixer2 profiling run layers/mamba2.c emit_vllm_profile (Mixer2RMSNormGated.forward_native: n_groups 8).
 * Not modelled, refused in one line: --tp; hidden_act
 * other than silu; rms_norm false (a checkpoint without norm.weight, which transformers cannot load).
 * generate(): the head's .to(lm_head dtype) after the slice (src/engine/generate.c: a Cast before the last Linear
 * is part of the head). Not modelled: apply_mask_to_padding_states's products when generate's attention mask has
 * more than one row (batch > 1 prefill). */

static int m2_num(rd *r, const char *key, double min, double max)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < min || v->valuedouble > max)
        return vc__hf_bad(r, key, "expected a number from %g to %g", min, max);
    return 0;
}

int vc__hf_mamba2_read(rd *r, arch *a)
{
    bool rms = true, rescale = false;
    a->gh.types = NULL;
    a->gh.E = a->gh.K = 0;
    a->gh.rope = false;
    a->R = 0;
    a->gh.hkey = "num_heads";
    a->gh.gkey = "n_groups";
    if (gh_int(r, "num_heads", 128, 1, &a->gh.mh) || gh_int(r, "head_dim", 64, 1, &a->gh.mp) ||
        gh_int(r, "n_groups", 8, 1, &a->gh.mg) || gh_int(r, "state_size", 128, 1, &a->gh.mn) ||
        gh_int(r, "conv_kernel", 4, 1, &a->gh.mk) || gh_int(r, "chunk_size", 256, 1, &a->gh.chunk) ||
        gh_bool(r, "use_conv_bias", true, &a->gh.conv_bias) || gh_bool(r, "use_bias", false, &a->gh.proj_bias) ||
        gh_bool(r, "residual_in_fp32", true, &a->gh.resid_f32) || gh_bool(r, "rms_norm", true, &rms) ||
        gh_bool(r, "rescale_prenorm_residual", false, &rescale))
        return -1;
    if (!rms)
        return vc__hf_bad(r, "rms_norm", "false: Mamba2Mixer builds its gated RMSNorm whatever rms_norm says, so a checkpoint "
                          "without norm.weight does not load; not modelled");
    if (a->act != A_SILU)
        return vc__hf_bad(r, "hidden_act", "only silu is modelled for mamba2 (cuda_kernels_forward's causal_conv1d_fn; other "
                          "activations run nn.Conv1d)");
    /* the init-only keys: numbers (time_step_min / max / floor), time_step_rank an integer or "auto" */
    if (m2_num(r, "time_step_min", 0, 1e9) || m2_num(r, "time_step_max", 0, 1e9) || m2_num(r, "time_step_floor", 0, 1e9))
        return -1;
    const cJSON *tr = cJSON_GetObjectItemCaseSensitive(r->cfg, "time_step_rank");
    int64_t rank;
    if (tr && cJSON_IsString(tr) && strcmp(tr->valuestring, "auto"))
        return vc__hf_bad(r, "time_step_rank", "expected an integer or \"auto\"");
    if (tr && !cJSON_IsString(tr) && gh_int(r, "time_step_rank", 1, 1, &rank)) return -1;
    /* time_step_limit: (min, max), the kernels' dt_limit */
    const cJSON *tl = cJSON_GetObjectItemCaseSensitive(r->cfg, "time_step_limit");
    if (tl && !cJSON_IsNull(tl)) {
        const cJSON *lo = cJSON_GetArrayItem(tl, 0), *hi = cJSON_GetArrayItem(tl, 1);
        if (!cJSON_IsArray(tl) || cJSON_GetArraySize(tl) != 2 || !cJSON_IsNumber(lo) || !cJSON_IsNumber(hi) ||
            lo->valuedouble < 0 || hi->valuedouble < lo->valuedouble)
            return vc__hf_bad(r, "time_step_limit", "expected [min, max] with 0 <= min <= max");
    }
    /* intermediate_size = int(expand x hidden_size): the norm's width; the kernels view it as num_heads x head_dim */
    double expand;
    if (gh_expand(r, "expand", &expand)) return -1;
    const double inter_f = floor(expand * (double)a->H);
    if (inter_f < 1 || inter_f > (double)MAX_SIZE)
        return vc__hf_bad(r, "expand", "int(%g x hidden_size (%lld)) must be from 1 to 2^40", expand, (long long)a->H);
    const int64_t inter = (int64_t)inter_f;
    if (a->gh.mh > MAX_SIZE / a->gh.mp || a->gh.mh * a->gh.mp != inter)
        return vc__hf_bad(r, "num_heads", "%lld x head_dim (%lld) must equal int(expand x hidden_size) (%lld): the kernels "
                          "view the intermediate as num_heads x head_dim", (long long)a->gh.mh, (long long)a->gh.mp,
                          (long long)inter);
    if (a->gh.mh % a->gh.mg) /* mamba_split_conv1d_scan_combined: assert nheads % ngroups == 0 */
        return vc__hf_bad(r, "n_groups", "%lld must divide num_heads (%lld)", (long long)a->gh.mg, (long long)a->gh.mh);
    if (a->gh.mg > MAX_SIZE / a->gh.mn || inter > (INT64_C(1) << 48) / a->gh.mn)
        return vc__hf_bad(r, "state_size", "%lld: the Mamba state (intermediate x state) would pass 2^48 elements",
                          (long long)a->gh.mn);
    return params_bound(r, a, inter);
}

int vc__hf_mamba2_unmodelled(const arch *a, vc_hf_split split, vc_error *err)
{
    /* --serve: vLLM's Mamba state pages alone (src/engine/serve.c mamba_alone) */
    return m2_tp(a, split, err);
}

static void m2_cast(rd *r, cJSON *arr, const char *name, const char *in, const char *dtype)
{
    cJSON *o = vc__hf_layer(r, arr, "Cast", name);
    if (in) vc__hf_ins(r, o, in, NULL, NULL, NULL);
    vc__hf_str(r, o, "dtype", dtype);
}

/* Mamba2Block.forward (every block the same: i unused) */
static void m2_block(rd *r, cJSON *arr, const arch *a, int64_t i)
{
    (void)i;
    m2_cast(r, arr, "norm_input", NULL, "parameters"); /* hidden_states.to(dtype=self.norm.weight.dtype) */
    g_norm(r, arr, a, "norm", "mixer");
    if (a->gh.resid_f32) m2_cast(r, arr, "residual", "input", "float32"); /* residual.to(torch.float32) */
    g_mixer(r, arr, a, "norm", "mixer.in_proj", "mixer", false);
    vc__hf_ins(r, vc__hf_layer(r, arr, "Add", "residual_add"), a->gh.resid_f32 ? "residual" : "input", "mixer", NULL, NULL);
}

void vc__hf_mamba2_write(rd *r, cJSON *arr, const arch *a)
{
    cJSON *o = vc__hf_layer(r, arr, "Embedding", "backbone.embeddings");
    vc__hf_num(r, o, "num_embeddings", (double)a->V);
    vc__hf_num(r, o, "embedding_dim", (double)a->H);
    g_stack(r, arr, a, "backbone.layers", NULL, "backbone.embeddings", NULL, m2_block); /* the blocks in runs of one checkpointing */
    g_norm(r, arr, a, "backbone.norm_f", NULL);
    /* hidden_states[:, slice_indices, :] with slice_indices = slice(-logits_to_keep, None), logits_to_keep 0 in
     * training: three slices that crop nothing, each recorded (TensorIndexing.h applySlice returns the tensor itself
     * only for stop == size; `:` and `0:` unpack to stop PY_SSIZE_T_MAX, docs/autograd.md), so backward runs three
     * slice_backward, each a new zero tensor of the hidden states' size with the gradient copied in (the one before
     * dying as the next is made). A Slice may not change the batch dim: its `:` is written as a second slice of dim 1
     * (the same bytes). */
    static const char *const slices[3] = {"lm_head_slice_batch", "lm_head_slice_seq", "lm_head_slice_hidden"};
    for (int k = 0; k < 3; k++) vc__hf_num(r, vc__hf_layer(r, arr, "Slice", slices[k]), "dim", k == 2 ? 2 : 1);
    m2_cast(r, arr, "lm_head_input", NULL, "parameters"); /* .to(self.lm_head.weight.dtype) */
    g_lm_head(r, arr, a, "backbone.embeddings");
    m2_cast(r, arr, "logits_float", NULL, "float32"); /* .float() */
}

/* ------------------------------------------------------------ nemotron_h
 *
 * NVIDIA Nemotron-H (model_type nemotron_h, NemotronHForCausalLM; issue 31): Nemotron-H-8B/47B/56B,
 * NVIDIA-Nemotron-Nano-9B-v2 and 12B-v2. Sources, huggingface/transformers:
 *  - configuration_nemotron_h.py @ 13923c63 (NemotronHConfig): vocab_size 131072, hidden_size 4096,
 *    layers_block_type None (attribute_map layer_types; each "mamba"/"linear_attention", "attention"/
 *    "full_attention", "mlp" or "moe", else ValueError), tie_word_embeddings False, num_attention_heads 32,
 *    num_key_value_heads 8 (None: the heads), head_dim 128, max_position_embeddings 4096, attention_dropout 0,
 *    intermediate_size 21504, mlp_hidden_act "relu2", mlp_bias False, ssm_state_size 128, mamba_num_heads 128,
 *    mamba_head_dim 64, mamba_hidden_act "silu", n_groups 8, conv_kernel 4, expand 2, use_conv_bias True,
 *    chunk_size 128, use_bias False, layer_norm_epsilon 1e-5, residual_in_fp32 False; __post_init__: the legacy
 *    names mamba_n_groups, mamba_d_conv, mamba_expand, mamba_conv_bias, mamba_chunk_size override these when
 *    present, and hybrid_override_pattern ('M' mamba, '*' attention, '-' mlp, 'E' moe; another character a
 *    KeyError) is the list when layers_block_type is not given; num_hidden_layers is len(layers_block_type).
 *    The checkpoints' own configuration_nemotron_h.py (the remote code the Nemotron-H releases ship, read
 *    here through the code index without its repository's commit) has num_hidden_layers 52 and
 *    hybrid_override_pattern "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-" (Nemotron-H-8B) as its
 *    defaults and asserts len(hybrid_override_pattern) == num_hidden_layers and ^[*\-ME]+$: the row takes
 *    those defaults and refuses a length that differs;
 *  - modeling_nemotron_h.py @ 008d9e95: NemotronHBlock (norm = NemotronHRMSNorm(hidden, layer_norm_epsilon),
 *    residual = hidden_states; hidden_states = norm(hidden_states.to(norm.weight.dtype)); one mixer;
 *    residual + hidden_states; residual_in_fp32 is not read); NemotronHMamba2Mixer (layers/mamba2.c:
 *    intermediate = mamba_num_heads x mamba_head_dim, conv_dim = intermediate + 2 n_groups x ssm_state_size,
 *    in_proj (bias use_bias), conv1d (bias use_conv_bias), dt_bias, A_log, norm Zamba2RMSNormGated(intermediate,
 *    group_size = intermediate // n_groups), D, out_proj (bias use_bias); causal_conv1d_fn only for
 *    mamba_hidden_act silu / swish); NemotronHAttention (q/k/v/o_proj bias=False, head_dim from the config,
 *    scaling head_dim^-0.5, no rotary embedding); NemotronHMLP (up_proj, ACT2FN[mlp_hidden_act], down_proj,
 *    bias mlp_bias); NemotronHModel (embeddings, layers, norm_f); NemotronHForCausalLM (lm_head, bias False,
 *    _tied_weights_keys {}: never tied; logits = lm_head(...).float()).
 * Not modelled, refused naming the key: 'E' / "moe" layers (NemotronHMoE: sigmoid group routing, non-gated
 * relu2 experts, latent projections: Nemotron-3-Nano-30B-A3B), mlp_hidden_act other than relu2,
 * mamba_hidden_act other than silu / swish (the torch conv path), tie_word_embeddings true,
 * num_nextn_predict_layers > 0. The lm_head's .float() is left to the loss (ForCausalLMLoss's own logits.float()
 * then copies nothing): under --mode infer the logits stay in the model's dtype here. --serve: vLLM's
 * NemotronHForCausalLM (vllm/model_executor/models/nemotron_h.py @ 8744bb09: MambaMixer2 with the config's n_groups,
 * so Mixer2RMSNormGated.forward_native, layers/mamba2.c emit_vllm_profile; the Mamba state pages beside the
 * attention layers' with a float32 temporal state, src/engine/serve.c nemotron_h_ssm_dtype and mamba_state). */
static const char nh_default_pattern[] = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-";

char vc__hf_nemotron_h_kind(const arch *a, int64_t i)
{
    if (a->nh.pat) return a->nh.pat[i];
    const char *t = cJSON_GetArrayItem(a->nh.list, (int)i)->valuestring;
    return !strcmp(t, "mamba") || !strcmp(t, "linear_attention") ? 'M'
           : !strcmp(t, "attention") || !strcmp(t, "full_attention") ? '*'
           : !strcmp(t, "mlp")                                      ? '-'
                                                                    : 'E';
}

/* a legacy key (mamba_n_groups ...) when present, else the new one */
static int nh_int(rd *r, const char *legacy, const char *key, int64_t def, int64_t *out)
{
    return gh_int(r, cJSON_GetObjectItemCaseSensitive(r->cfg, legacy) ? legacy : key, def, 1, out);
}

static int nh_str(rd *r, const char *key, const char *def, const char *const *ok, const char *what)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    const char *s = v && !cJSON_IsNull(v) ? (cJSON_IsString(v) ? v->valuestring : NULL) : def;
    for (int k = 0; s && ok[k]; k++)
        if (!strcmp(s, ok[k])) return 0;
    return vc__hf_bad(r, key, "only %s is modelled for nemotron_h", what);
}

int vc__hf_nemotron_h_read(rd *r, arch *a)
{
    const cJSON *lbt = cJSON_GetObjectItemCaseSensitive(r->cfg, "layers_block_type");
    if (!lbt || cJSON_IsNull(lbt)) lbt = cJSON_GetObjectItemCaseSensitive(r->cfg, "layer_types");
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(r->cfg, "hybrid_override_pattern");
    const bool has_n = cJSON_GetObjectItemCaseSensitive(r->cfg, "num_hidden_layers") != NULL;
    a->nh.pat = NULL;
    a->nh.list = NULL;
    const char *tk;
    int64_t len;
    if (lbt && !cJSON_IsNull(lbt)) {
        tk = cJSON_GetObjectItemCaseSensitive(r->cfg, "layers_block_type") ? "layers_block_type" : "layer_types";
        if (!cJSON_IsArray(lbt) || cJSON_GetArraySize(lbt) < 1)
            return vc__hf_bad(r, tk, "expected a list of layer types (NemotronHConfig raises ValueError)");
        static const char *const names[] = {"mamba", "linear_attention", "attention", "full_attention", "mlp", "moe"};
        for (const cJSON *e = lbt->child; e; e = e->next) {
            bool ok = false;
            for (int k = 0; k < 6 && cJSON_IsString(e); k++) ok |= !strcmp(e->valuestring, names[k]);
            if (!ok)
                return vc__hf_bad(r, tk, "expected \"mamba\", \"attention\", \"mlp\" or \"moe\" (or \"linear_attention\", "
                                  "\"full_attention\") for each layer: NemotronHConfig raises ValueError on others");
        }
        a->nh.list = lbt;
        len = cJSON_GetArraySize(lbt);
    } else {
        tk = "hybrid_override_pattern";
        if (pat && !cJSON_IsNull(pat)) {
            if (!cJSON_IsString(pat) || !pat->valuestring[0])
                return vc__hf_bad(r, tk, "expected a string of 'M', '*', '-' and 'E', one a layer");
            a->nh.pat = pat->valuestring;
        } else {
            a->nh.pat = nh_default_pattern;
        }
        len = (int64_t)strlen(a->nh.pat);
        for (int64_t i = 0; i < len; i++)
            if (!strchr("M*-E", a->nh.pat[i]))
                return vc__hf_bad(r, tk, "character %lld ('%c') is not 'M', '*', '-' or 'E' (NemotronHConfig: a KeyError; the "
                                  "checkpoints' config asserts ^[*\\-ME]+$)", (long long)i, a->nh.pat[i] > 32 && a->nh.pat[i] < 127 ? a->nh.pat[i] : '?');
    }
    if (!has_n) a->N = len; /* num_hidden_layers: len(layers_block_type) */
    if (len != a->N)
        return vc__hf_bad(r, tk, "%lld layers, but num_hidden_layers is %lld (the checkpoints' NemotronHConfig asserts they "
                          "are equal)", (long long)len, (long long)a->N);
    bool mamba = false;
    for (int64_t i = 0; i < a->N; i++) {
        const char k = vc__hf_nemotron_h_kind(a, i);
        mamba |= k == 'M';
        if (k == 'E')
            return vc__hf_bad(r, tk, "layer %lld is a MoE layer (NemotronHMoE: sigmoid group routing over non-gated relu2 "
                              "experts, Nemotron-3-Nano-30B-A3B): not modelled", (long long)i);
    }
    (void)mamba;
    /* the Mamba2 mixers */
    a->gh.hkey = "mamba_num_heads";
    a->gh.gkey = cJSON_GetObjectItemCaseSensitive(r->cfg, "mamba_n_groups") ? "mamba_n_groups" : "n_groups";
    if (gh_int(r, "mamba_num_heads", 128, 1, &a->gh.mh) || gh_int(r, "mamba_head_dim", 64, 1, &a->gh.mp) ||
        nh_int(r, "mamba_n_groups", "n_groups", 8, &a->gh.mg) || gh_int(r, "ssm_state_size", 128, 1, &a->gh.mn) ||
        nh_int(r, "mamba_d_conv", "conv_kernel", 4, &a->gh.mk) || nh_int(r, "mamba_chunk_size", "chunk_size", 128, &a->gh.chunk) ||
        gh_bool(r, cJSON_GetObjectItemCaseSensitive(r->cfg, "mamba_conv_bias") ? "mamba_conv_bias" : "use_conv_bias", true,
                &a->gh.conv_bias) ||
        gh_bool(r, "use_bias", false, &a->gh.proj_bias) || gh_bool(r, "mlp_bias", false, &a->nh.mlp_bias))
        return -1;
    if (a->gh.mh > MAX_SIZE / a->gh.mp)
        return vc__hf_bad(r, "mamba_head_dim", "%lld x mamba_num_heads (%lld) is more than 2^40", (long long)a->gh.mp,
                          (long long)a->gh.mh);
    const int64_t inter = a->gh.mh * a->gh.mp;
    if (a->gh.mh % a->gh.mg || inter % a->gh.mg) /* mamba_split_conv1d_scan_combined: nheads % ngroups == 0 */
        return vc__hf_bad(r, cJSON_GetObjectItemCaseSensitive(r->cfg, "mamba_n_groups") ? "mamba_n_groups" : "n_groups",
                          "%lld must divide mamba_num_heads (%lld)", (long long)a->gh.mg, (long long)a->gh.mh);
    if (a->gh.mg > MAX_SIZE / a->gh.mn || inter > (INT64_C(1) << 48) / a->gh.mn)
        return vc__hf_bad(r, "ssm_state_size", "%lld: the Mamba state (intermediate x state) would pass 2^48 elements",
                          (long long)a->gh.mn);
    static const char *const silu[] = {"silu", "swish", NULL}, *const relu2[] = {"relu2", NULL};
    if (nh_str(r, "mamba_hidden_act", "silu", silu, "silu (or swish: causal_conv1d_fn; another runs the torch conv1d)") ||
        nh_str(r, "mlp_hidden_act", "relu2", relu2, "relu2 (ReLUSquaredActivation)"))
        return -1;
    if (a->tie)
        return vc__hf_bad(r, "tie_word_embeddings", "true: NemotronHForCausalLM ties nothing (_tied_weights_keys {}), "
                          "its lm_head is its own");
    int64_t nextn = 0;
    if (gh_int(r, "num_nextn_predict_layers", 0, 0, &nextn)) return -1;
    if (nextn > 0)
        return vc__hf_bad(r, "num_nextn_predict_layers", "%lld: the multi-token-prediction layers are not modelled",
                          (long long)nextn);
    a->R = 0; /* NemotronHAttention: no rotary embedding */
    /* the whole model within 2^56 parameters (hf_read.c check_total does not see the Mamba layers) */
    int64_t per = 0, m, tot;
    bool ovf = __builtin_mul_overflow(4 * inter + 2 * a->gh.mg * a->gh.mn + a->gh.mh, a->H, &per) ||
               __builtin_mul_overflow(2 * a->I, a->H, &m) || __builtin_add_overflow(per, m, &per) ||
               __builtin_mul_overflow(2 * (a->NH + a->KV) * a->D, a->H, &m) || __builtin_add_overflow(per, m, &per) ||
               __builtin_mul_overflow(per, a->N, &tot) || __builtin_mul_overflow(a->V, 2 * a->H, &m) ||
               __builtin_add_overflow(tot, m, &tot);
    if (ovf || tot > (INT64_C(1) << 56))
        return vc__hf_bad(r, "num_hidden_layers", "%lld layers: more than 2^56 parameters, byte counts would overflow 64-bit "
                          "arithmetic", (long long)a->N);
    return 0;
}

/* One NemotronHBlock: norm, one mixer, residual + hidden_states */
static void nh_layer(rd *r, cJSON *arr, const arch *a, int64_t i)
{
    const char k = vc__hf_nemotron_h_kind(a, i);
    const char *end = k == 'M' ? "mixer" : k == '*' ? "mixer.o_proj" : "mixer.down_proj";
    g_norm(r, arr, a, "norm", end);
    if (k == 'M') { /* NemotronHMamba2Mixer */
        g_mixer(r, arr, a, NULL, "mixer.in_proj", "mixer", true);
    } else if (k == '*') { /* NemotronHAttention: q/k/v_proj, the attention (no rotary), o_proj */
        const int64_t q = a->NH * a->D, kv = a->KV * a->D;
        g_linear(r, arr, "mixer.q_proj", NULL, a->H, q, false);
        g_linear(r, arr, "mixer.k_proj", "norm", a->H, kv, false);
        g_linear(r, arr, "mixer.v_proj", "norm", a->H, kv, false);
        cJSON *o = vc__hf_layer(r, arr, "RotaryAttention", "mixer.attention");
        vc__hf_ins(r, o, "mixer.q_proj", "mixer.k_proj", "mixer.v_proj", NULL);
        vc__hf_num(r, o, "num_heads", (double)a->NH);
        vc__hf_num(r, o, "num_kv_heads", (double)a->KV);
        vc__hf_num(r, o, "head_dim", (double)a->D);
        vc__hf_num(r, o, "rotary_dim", 0);
        vc__hf_flag(r, o, "causal", true);
        if (a->p_attn > 0) vc__hf_num(r, o, "dropout", a->p_attn);
        g_linear(r, arr, "mixer.o_proj", NULL, q, a->H, false);
    } else { /* NemotronHMLP: up_proj, relu2 (ReLUSquaredActivation: relu, then torch.square), down_proj */
        g_linear(r, arr, "mixer.up_proj", NULL, a->H, a->I, a->nh.mlp_bias);
        vc__hf_layer(r, arr, "ReLU", "mixer.act_fn.relu");
        vc__hf_ins(r, vc__hf_layer(r, arr, "Mul", "mixer.act_fn.square"), "mixer.act_fn.relu", "mixer.act_fn.relu", NULL, NULL);
        g_linear(r, arr, "mixer.down_proj", NULL, a->I, a->H, a->nh.mlp_bias);
    }
    vc__hf_ins(r, vc__hf_layer(r, arr, "Add", "residual"), end, "input", NULL, NULL);
}

static int nh_kind(const arch *a, int64_t i) { return vc__hf_nemotron_h_kind(a, i); }

void vc__hf_nemotron_h_write(rd *r, cJSON *arr, const arch *a)
{
    cJSON *o = vc__hf_layer(r, arr, "Embedding", "model.embeddings");
    vc__hf_num(r, o, "num_embeddings", (double)a->V);
    vc__hf_num(r, o, "embedding_dim", (double)a->H);
    g_stack(r, arr, a, "model.layers", "model.embeddings", "model.embeddings", nh_kind, nh_layer);
    g_norm(r, arr, a, "model.norm_f", NULL);
    g_lm_head(r, arr, a, NULL);
}

/* ------------------------------------------------------------ falcon_h1
 *
 * TII Falcon-H1 (model_type falcon_h1, FalconH1ForCausalLM; issue 31): Falcon-H1-0.5B, 1.5B, 1.5B-Deep, 3B, 7B, 34B
 * (base and -Instruct). Sources, huggingface/transformers:
 *  - configuration_falcon_h1.py @ 020a37d2 (FalconH1Config): vocab_size 128000, tie_word_embeddings False,
 *    hidden_size 4096, intermediate_size 14336, num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 8
 *    (None: the heads), hidden_act silu, rms_norm_eps 1e-5, num_logits_to_keep 1, max_position_embeddings 8192,
 *    attention_dropout 0, mamba_d_ssm 1024 (None: mamba_expand x hidden_size), mamba_n_heads 128, mamba_d_head "auto"
 *    (mamba_intermediate // mamba_n_heads), mamba_n_groups 1, mamba_d_state 256, mamba_d_conv 4, mamba_expand 2,
 *    mamba_chunk_size 256, mamba_conv_bias True, mamba_proj_bias False, mamba_norm_before_gate True, mamba_rms_norm
 *    False, time_step_min 0.001, time_step_max 0.1, time_step_limit (0, inf), projectors_bias False, the multipliers
 *    (lm_head_multiplier, embedding_multiplier, key_multiplier, attention_out_multiplier, attention_in_multiplier,
 *    ssm_in_multiplier, ssm_out_multiplier 1.0; mlp_multipliers None -> [1, 1]; ssm_multipliers None -> [1] x 5),
 *    attention_bias False, mlp_bias False; validate_architecture: ValueError unless mamba_n_heads divides the
 *    intermediate and mamba_d_head x mamba_n_heads equals it;
 *  - modeling_falcon_h1.py @ 68c08116: FalconH1DecoderLayer.forward (residual; input_layernorm; mamba(h) x
 *    ssm_out_multiplier first; self_attn(h x attention_in_multiplier) x attention_out_multiplier; mamba + attention;
 *    residual + that; pre_ff_layernorm; feed_forward; residual + that); FalconH1Mixer (intermediate mamba_d_ssm,
 *    conv1d with mamba_conv_bias, in_proj bias mamba_proj_bias, dt_bias, A_log, norm FalconH1RMSNormGated only under
 *    mamba_rms_norm, D, out_proj bias projectors_bias; cuda_kernels_forward: h x ssm_in_multiplier, in_proj, x
 *    mup_vector (compute_mup_vector's [1, 1, in_proj width] buffer, one per model), then the kernels of
 *    layers/mamba2.c with rmsnorm_weight None: scan_output x silu(gate), selective_state_update(z=gate));
 *    FalconH1Attention (q/k/v/o_proj with attention_bias, head_dim getattr(config, "head_dim", hidden // heads),
 *    k x key_multiplier after the view, the rotary on every layer, scaling head_dim^-0.5); FalconH1MLP (up_proj(x) x
 *    act(gate_proj(x) x gate_multiplier), down_proj(y) x down_multiplier; bias mlp_bias); FalconH1Model (embed_tokens
 *    x embedding_multiplier, final_layernorm); FalconH1ForCausalLM (lm_head(h) x lm_head_multiplier, tied under
 *    tie_word_embeddings by _tied_weights_keys; prepare_inputs_for_generation: FalconHybridMambaAttentionDynamicCache
 *    (conv_states [B, conv_dim, d_conv] and ssm_states [B, heads, head_dim, state] zeros for every layer, K/V by
 *    torch.cat), logits_to_keep config.num_logits_to_keep).
 * Not modelled, refused in one line naming the key or option: mamba_rms_norm true (FalconH1RMSNormGated's own
 * order), hidden_act other than silu, num_logits_to_keep other than 1, --tp. --serve: vLLM's FalconH1SSMDecoderLayer
 * builds MambaMixer2(use_rms_norm=config.mamba_rms_norm) (vllm/model_executor/models/falcon_h1.py @ 01894272), whose
 * forward_cuda without the norm is layers/mamba2.c emit_vllm_profile's; the state pages beside every layer's
 * attention, src/engine/serve.c mamba_state; the rest of the profiling run is this model's (transformers' order of
 * the muP multipliers). Left out: the in_proj output x attention_mask[..., None] and
 * apply_mask_to_padding_states (only with a padded batch: _update_mamba_mask drops an all-ones mask),
 * update_conv_state's roll temporary ([B, conv_dim, d_conv]) in the prefill, the mup_vector buffer (in_proj width
 * elements). */

static int fh_num(rd *r, const char *key, double def, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    *out = def;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || fabs(v->valuedouble) > 1e9)
        return vc__hf_bad(r, key, "expected a number from -1e9 to 1e9");
    *out = v->valuedouble;
    return 0;
}

/* a list of n numbers (null: ones); out may be NULL */
static int fh_list(rd *r, const char *key, int n, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    for (int k = 0; out && k < n; k++) out[k] = 1.0;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != n)
        return vc__hf_bad(r, key, "expected a list of %d numbers", n);
    int k = 0;
    for (const cJSON *e = v->child; e; e = e->next, k++) {
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || fabs(e->valuedouble) > 1e9)
            return vc__hf_bad(r, key, "expected a list of %d numbers from -1e9 to 1e9", n);
        if (out) out[k] = e->valuedouble;
    }
    return 0;
}

int vc__hf_falcon_h1_read(rd *r, arch *a)
{
    a->gh.types = NULL;
    a->gh.E = a->gh.K = 0;
    a->gh.rope = true;
    bool before = true;
    a->gh.hkey = "mamba_n_heads";
    a->gh.gkey = "mamba_n_groups";
    if (gh_int(r, "mamba_n_heads", 128, 1, &a->gh.mh) || gh_int(r, "mamba_n_groups", 1, 1, &a->gh.mg) ||
        gh_int(r, "mamba_d_state", 256, 1, &a->gh.mn) || gh_int(r, "mamba_d_conv", 4, 1, &a->gh.mk) ||
        gh_int(r, "mamba_chunk_size", 256, 1, &a->gh.chunk) || gh_bool(r, "mamba_conv_bias", true, &a->gh.conv_bias) ||
        gh_bool(r, "mamba_proj_bias", false, &a->gh.proj_bias) || gh_bool(r, "projectors_bias", false, &a->fh.out_bias) ||
        gh_bool(r, "mamba_rms_norm", false, &a->fh.rms_norm) || gh_bool(r, "mamba_norm_before_gate", true, &before))
        return -1;
    if (a->fh.rms_norm)
        return vc__hf_bad(r, "mamba_rms_norm", "true (FalconH1RMSNormGated: the norm per group, then the gate) is not "
                          "modelled; the Falcon-H1 checkpoints write false");
    /* the intermediate: mamba_d_ssm, else int(mamba_expand x hidden_size) */
    double expand;
    if (gh_expand(r, "mamba_expand", &expand)) return -1;
    int64_t inter;
    const cJSON *ds = cJSON_GetObjectItemCaseSensitive(r->cfg, "mamba_d_ssm");
    if (ds && cJSON_IsNull(ds)) {
        const double f = floor(expand * (double)a->H);
        if (f < 1 || f > (double)MAX_SIZE)
            return vc__hf_bad(r, "mamba_expand", "int(%g x hidden_size) must be from 1 to 2^40", expand);
        inter = (int64_t)f;
    } else if (gh_int(r, "mamba_d_ssm", 1024, 1, &inter)) {
        return -1;
    }
    if (inter % a->gh.mh)
        return vc__hf_bad(r, "mamba_n_heads", "%lld must divide the Mamba intermediate (%lld): FalconH1Config raises "
                          "ValueError", (long long)a->gh.mh, (long long)inter);
    if (gh_d_head(r, a, inter, "the Mamba intermediate", "FalconH1Config")) return -1;
    if (a->gh.mh % a->gh.mg) /* mamba_split_conv1d_scan_combined: nheads % ngroups == 0 */
        return vc__hf_bad(r, "mamba_n_groups", "%lld must divide mamba_n_heads (%lld)", (long long)a->gh.mg, (long long)a->gh.mh);
    if (a->gh.mg > MAX_SIZE / a->gh.mn || inter > (INT64_C(1) << 48) / a->gh.mn)
        return vc__hf_bad(r, "mamba_d_state", "%lld: the Mamba state (intermediate x state) would pass 2^48 elements",
                          (long long)a->gh.mn);
    if (a->act != A_SILU)
        return vc__hf_bad(r, "hidden_act", "only silu is modelled for falcon_h1 (cuda_kernels_forward's causal_conv1d_fn, "
                          "the MLP's act_fn)");
    double mlp[2];
    if (fh_num(r, "lm_head_multiplier", 1, &a->fh.lm_head) || fh_num(r, "key_multiplier", 1, &a->fh.key) ||
        fh_num(r, "attention_in_multiplier", 1, &a->fh.attn_in) || fh_num(r, "attention_out_multiplier", 1, &a->fh.attn_out) ||
        fh_num(r, "ssm_in_multiplier", 1, &a->fh.ssm_in) || fh_num(r, "ssm_out_multiplier", 1, &a->fh.ssm_out) ||
        fh_list(r, "mlp_multipliers", 2, mlp) || fh_list(r, "ssm_multipliers", 5, NULL) ||
        m2_num(r, "time_step_min", 0, 1e9) || m2_num(r, "time_step_max", 0, 1e9))
        return -1;
    a->fh.mlp_gate = mlp[0];
    a->fh.mlp_down = mlp[1];
    /* time_step_limit: read by nothing (FalconH1Mixer sets (0, inf) itself), a pair when given */
    const cJSON *tl = cJSON_GetObjectItemCaseSensitive(r->cfg, "time_step_limit");
    if (tl && !cJSON_IsNull(tl) && (!cJSON_IsArray(tl) || cJSON_GetArraySize(tl) != 2 ||
                                    !cJSON_IsNumber(cJSON_GetArrayItem(tl, 0)) || !cJSON_IsNumber(cJSON_GetArrayItem(tl, 1))))
        return vc__hf_bad(r, "time_step_limit", "expected [min, max]");
    int64_t keep = 1;
    if (gh_int(r, "num_logits_to_keep", 1, 0, &keep)) return -1;
    if (keep != 1)
        return vc__hf_bad(r, "num_logits_to_keep", "%lld: generate()'s logits_to_keep other than 1 is not modelled",
                          (long long)keep);
    a->R = a->D; /* FalconH1RotaryEmbedding: the whole head */
    if (a->D % 2)
        return vc__hf_bad(r, "head_dim", "%lld: the rotary embedding needs an even head_dim", (long long)a->D);
    /* the whole model within 2^56 parameters (hf_read.c check_total does not see the Mamba layers) */
    int64_t per = 0, m, tot;
    bool ovf = __builtin_mul_overflow(4 * inter + 2 * a->gh.mg * a->gh.mn + a->gh.mh, a->H, &per) ||
               __builtin_mul_overflow(3 * a->I, a->H, &m) || __builtin_add_overflow(per, m, &per) ||
               __builtin_mul_overflow(2 * (a->NH + a->KV) * a->D, a->H, &m) || __builtin_add_overflow(per, m, &per) ||
               __builtin_mul_overflow(per, a->N, &tot) || __builtin_mul_overflow(a->V, 2 * a->H, &m) ||
               __builtin_add_overflow(tot, m, &tot);
    if (ovf || tot > (INT64_C(1) << 56))
        return vc__hf_bad(r, "num_hidden_layers", "%lld layers: more than 2^56 parameters, byte counts would overflow 64-bit "
                          "arithmetic", (long long)a->N);
    return 0;
}

int vc__hf_falcon_h1_unmodelled(const arch *a, vc_hf_split split, vc_error *err)
{
    return m2_tp(a, split, err); /* --serve: src/engine/serve.c mamba_state */
}

/* One FalconH1DecoderLayer, in forward's order */
static void fh_layer(rd *r, cJSON *arr, const arch *a, int64_t i)
{
    (void)i;
    const int64_t Di = a->gh.mh * a->gh.mp, CD = Di + 2 * a->gh.mg * a->gh.mn;
    const int64_t q = a->NH * a->D, kv = a->KV * a->D;
    /* FalconH1DecoderLayer.forward's hidden_states (the normed input) stays bound through the Mamba and attention
     * branches, to `hidden_states = mamba_hidden_states + attention_hidden_states` (modeling_falcon_h1.py @ 68c08116) */
    g_norm(r, arr, a, "input_layernorm", "mixer_sum");
    /* FalconH1Mixer.cuda_kernels_forward: h x ssm_in_multiplier, in_proj, x mup_vector, the kernels */
    g_scale(r, arr, "mamba.ssm_in_multiplier", NULL, a->fh.ssm_in);
    g_linear(r, arr, "mamba.in_proj", NULL, a->H, Di + CD + a->gh.mh, a->gh.proj_bias);
    g_scale(r, arr, "mamba.mup_vector", NULL, 1.0); /* projected_states * self.mup_vector: a new tensor */
    cJSON *o = g_mixer_core(r, arr, a, "mamba", a->fh.out_bias, false);
    vc__hf_flag(r, o, "rms_norm", false);
    g_scale(r, arr, "ssm_out_multiplier", NULL, a->fh.ssm_out);
    /* FalconH1Attention on h x attention_in_multiplier: self_attn's argument, alive to its return */
    g_scale(r, arr, "attention_in_multiplier", "input_layernorm", a->fh.attn_in);
    vc__hf_str(r, cJSON_GetArrayItem(arr, cJSON_GetArraySize(arr) - 1), "held_until", "self_attn.o_proj");
    g_linear(r, arr, "self_attn.q_proj", NULL, a->H, q, a->qkv_bias);
    g_linear(r, arr, "self_attn.k_proj", "attention_in_multiplier", a->H, kv, a->qkv_bias);
    g_scale(r, arr, "self_attn.key_multiplier", NULL, a->fh.key);
    g_linear(r, arr, "self_attn.v_proj", "attention_in_multiplier", a->H, kv, a->qkv_bias);
    o = vc__hf_layer(r, arr, "RotaryAttention", "self_attn.attention");
    vc__hf_ins(r, o, "self_attn.q_proj", "self_attn.key_multiplier", "self_attn.v_proj", "model.rotary_emb");
    vc__hf_num(r, o, "num_heads", (double)a->NH);
    vc__hf_num(r, o, "num_kv_heads", (double)a->KV);
    vc__hf_num(r, o, "head_dim", (double)a->D);
    vc__hf_num(r, o, "rotary_dim", (double)a->D);
    vc__hf_flag(r, o, "causal", true);
    if (a->p_attn > 0) vc__hf_num(r, o, "dropout", a->p_attn);
    g_linear(r, arr, "self_attn.o_proj", NULL, q, a->H, a->qkv_bias);
    g_scale(r, arr, "attention_out_multiplier", NULL, a->fh.attn_out);
    vc__hf_ins(r, vc__hf_layer(r, arr, "Add", "mixer_sum"), "ssm_out_multiplier", "attention_out_multiplier", NULL, NULL);
    vc__hf_ins(r, vc__hf_layer(r, arr, "Add", "attn_residual"), "input", "mixer_sum", NULL, NULL);
    /* FalconH1MLP: up_proj(x) * act_fn(gate_proj(x) * gate_multiplier), down_proj(y) * down_multiplier */
    g_norm(r, arr, a, "pre_ff_layernorm", "feed_forward.gate_proj");
    g_linear(r, arr, "feed_forward.up_proj", NULL, a->H, a->I, a->mlp_bias);
    g_linear(r, arr, "feed_forward.gate_proj", "pre_ff_layernorm", a->H, a->I, a->mlp_bias);
    g_scale(r, arr, "feed_forward.gate_multiplier", NULL, a->fh.mlp_gate);
    vc__hf_layer(r, arr, "SiLU", "feed_forward.act_fn");
    vc__hf_ins(r, vc__hf_layer(r, arr, "Mul", "feed_forward.mul"), "feed_forward.up_proj", "feed_forward.act_fn", NULL, NULL);
    g_linear(r, arr, "feed_forward.down_proj", NULL, a->I, a->H, a->mlp_bias);
    g_scale(r, arr, "feed_forward.down_multiplier", NULL, a->fh.mlp_down);
    vc__hf_ins(r, vc__hf_layer(r, arr, "Add", "mlp_residual"), "attn_residual", "feed_forward.down_multiplier", NULL, NULL);
}

void vc__hf_falcon_h1_write(rd *r, cJSON *arr, const arch *a)
{
    cJSON *o = vc__hf_layer(r, arr, "Embedding", "model.embed_tokens");
    vc__hf_num(r, o, "num_embeddings", (double)a->V);
    vc__hf_num(r, o, "embedding_dim", (double)a->H);
    g_scale(r, arr, "model.embedding_multiplier", NULL, a->emb_mult); /* embed_tokens(input_ids) * embedding_multiplier */
    o = vc__hf_layer(r, arr, "RotaryEmbedding", "model.rotary_emb");
    vc__hf_ins(r, o, "input", NULL, NULL, NULL);
    vc__hf_num(r, o, "head_dim", (double)a->D);
    vc__hf_num(r, o, "rotary_dim", (double)a->D);
    g_stack(r, arr, a, "model.layers", "model.embedding_multiplier", "model.embedding_multiplier", NULL, fh_layer);
    g_norm(r, arr, a, "model.final_layernorm", NULL);
    g_lm_head(r, arr, a, "model.embed_tokens");
    g_scale(r, arr, "lm_head_multiplier", NULL, a->fh.lm_head); /* lm_head(...) * self.model.lm_head_multiplier */
}
