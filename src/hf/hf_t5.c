/*
 * hf_t5.c — t5 / flan-t5 (model_type t5; issue 31, item 4): the keys of
 * T5Config that the row's generic reading (hf_read.c) cannot check, and
 * T5ForConditionalGeneration's parameters.
 *
 * Sources, huggingface/transformers @ 6b8b757dfcb582379a64f013cdce46c43629f2b0:
 *  - configuration_t5.py T5Config.__init__: num_decoder_layers "if not None else
 *    self.num_layers"; feed_forward_proj split on "-": dense_act_fn the last part,
 *    is_gated_act whether the first is "gated", ValueError when there are more than
 *    two parts or two without "gated"; "gated-gelu" gives dense_act_fn "gelu_new"
 *    ("for backwards compatibility"); then super().__init__(**kwargs), which sets
 *    every other key of the file as an attribute (PretrainedConfig): a config's own
 *    is_gated_act / dense_act_fn replace the ones just derived.
 *  - modeling_t5.py: T5ForConditionalGeneration.__init__ (shared nn.Embedding(vocab_size,
 *    d_model); encoder and decoder T5Stack(config, self.shared), the decoder with
 *    num_layers = num_decoder_layers; lm_head nn.Linear(d_model, vocab_size, bias=False),
 *    tied to shared under tie_word_embeddings: named_parameters() then counts the one
 *    tensor once); T5Stack.__init__ (block: T5Block(has_relative_attention_bias=bool(i == 0)),
 *    final_layer_norm); T5Block.__init__ (T5LayerSelfAttention, T5LayerCrossAttention
 *    when is_decoder, T5LayerFF); T5Attention.__init__ (q, k, v nn.Linear(d_model,
 *    n_heads * d_kv, bias=False), o nn.Linear(inner_dim, d_model, bias=False),
 *    relative_attention_bias nn.Embedding(relative_attention_num_buckets, n_heads) when
 *    has_relative_attention_bias; T5LayerCrossAttention's has none); T5LayerFF
 *    (T5DenseGatedActDense wi_0, wi_1, wo under is_gated_act, else T5DenseActDense
 *    wi, wo; no biases) and T5LayerNorm (a weight of d_model, no bias) after
 *    each sub-layer's layer_norm; T5Attention._relative_position_bucket (below).
 *
 * The memory of training and inference: vc__hf_t5_write below, with layers/t5.c.
 * Gradient checkpointing (modeling_t5.py T5Stack.forward: use_cache = False in training, then
 * self._gradient_checkpointing_func(layer_module.forward, ...) for every T5Block of both stacks;
 * non-reentrant): each stack's blocks checkpointed Sequentials (t5_blocks), block 0 alone: with
 * position_bias None it computes the biases inside its checkpoint (T5Attention.forward: compute_bias, or
 * the cross-attention's zeros, + mask, after the scores' matmul) and returns them (T5Block.forward's
 * attention_outputs; T5Stack.forward: position_bias = layer_outputs[2], encoder_decoder_position_bias =
 * layer_outputs[3], 4 with output_attentions), ordinary outputs of its checkpoint that the later blocks take as arguments (the
 * block's "export", src/model/load.c); its backward's recompute makes them again. Under checkpointing
 * T5Attention.forward sets position_bias.requires_grad = True on the zeros (T5PositionBias
 * "requires_grad"). docs/llm.md gives the measured cases.
 * Generation (--mode generate): src/engine/generate.c's encoder-decoder path runs the layers written here
 * as generate() does (the encoder up to the layer named "encoder" once; the decoder a token a step, its
 * "decoder_input_ids" the loop's; the cross-attention's k and v, projections of "encoder", run at the
 * first step only), with layers/t5.c's cached attention, masks and bias.
 * What is not modelled is refused: --serve (vc__gen_begin, src/engine/generate.c: vLLM has no
 * T5ForConditionalGeneration), every N-th block checkpointed, --loss and --tp (vc_hf_build,
 * src/hf/hf.c), fp16, autocast, quantized weights, --pp, op-level checkpointing and
 * activation offloading (vc__t5_check below).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "model.h"
#include "util.h"

/* A key's value, null read as absent (as hf_read.c's key_of). */
static const cJSON *t5_key(rd *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->cfg, key);
    return cJSON_IsNull(v) ? NULL : v;
}

/* dense_act_fn as ACT2FN names it, for the activations layers/ models. */
static int t5_act(const char *s, size_t n)
{
    static const struct { const char *name; int act; } acts[] = {
        {"relu", A_RELU}, {"gelu", A_GELU}, {"gelu_new", A_GELU_NEW}, {"gelu_fast", A_GELU_FAST},
        {"gelu_pytorch_tanh", A_GELU_TANH}, {"silu", A_SILU}, {"swish", A_SILU},
    };
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++)
        if (strlen(acts[i].name) == n && !strncmp(s, acts[i].name, n)) return acts[i].act;
    return -1;
}

int vc__hf_t5_read(rd *r, arch *a)
{
    const bool own = a->dec_N != 0;
    if (!own) a->dec_N = a->N; /* num_decoder_layers absent or null: num_layers */
    if (a->dec_N > 1024) /* the key that gave the count */
        return vc__hf_bad(r, own ? "num_decoder_layers" : "num_layers", "%lld decoder layers: more than the limit of 1024",
                          (long long)a->dec_N);
    /* feed_forward_proj: "ACT" or "gated-ACT" (T5Config's ValueError otherwise) */
    const cJSON *fp = t5_key(r, "feed_forward_proj");
    if (fp && !cJSON_IsString(fp)) return vc__hf_bad(r, "feed_forward_proj", "expected a string such as \"relu\" or \"gated-gelu\"");
    /* the class's default: T5Config's "relu", MT5Config's "gated-gelu" */
    const char *s = fp ? fp->valuestring : !strcmp(a->f->model_type, "t5") ? "relu" : "gated-gelu";
    char e[64];
    vc_escape(e, sizeof e, s);
    const char *dash = strchr(s, '-');
    bool gated = dash && (size_t)(dash - s) == 5 && !strncmp(s, "gated", 5);
    if ((dash && !gated) || (dash && strchr(dash + 1, '-')))
        return vc__hf_bad(r, "feed_forward_proj", "\"%s\" is not of the form \"gated-ACT\" or \"ACT\" (T5Config raises ValueError)", e);
    const char *act = dash ? dash + 1 : s;
    size_t alen = strlen(act);
    if (!strcmp(s, "gated-gelu")) { /* T5Config: "for backwards compatibility" */
        act = "gelu_new";
        alen = strlen(act);
    }
    /* is_gated_act / dense_act_fn written in the file replace the derived ones (PretrainedConfig's kwargs):
     * one that disagrees with feed_forward_proj is refused rather than silently followed */
    const cJSON *ga = t5_key(r, "is_gated_act");
    if (ga && !cJSON_IsBool(ga)) return vc__hf_bad(r, "is_gated_act", "expected true or false");
    if (ga && cJSON_IsTrue(ga) != gated)
        return vc__hf_bad(r, "is_gated_act", "%s disagrees with feed_forward_proj \"%s\" (transformers would build %s MLP)",
                      cJSON_IsTrue(ga) ? "true" : "false", e, cJSON_IsTrue(ga) ? "the gated" : "the ungated");
    const cJSON *da = t5_key(r, "dense_act_fn");
    if (da && !cJSON_IsString(da)) return vc__hf_bad(r, "dense_act_fn", "expected a string such as \"gelu_new\"");
    if (da && (strlen(da->valuestring) != alen || strncmp(da->valuestring, act, alen))) {
        char d[64];
        vc_escape(d, sizeof d, da->valuestring);
        return vc__hf_bad(r, "dense_act_fn", "\"%s\" disagrees with feed_forward_proj \"%s\" (which gives \"%.*s\")", d, e,
                      (int)alen, act);
    }
    a->gated = gated;
    a->act = t5_act(act, alen);
    if (a->act < 0)
        return vc__hf_bad(r, "feed_forward_proj", "\"%s\": the activation is not modelled (relu, gelu, gelu_new, gelu_fast, "
                      "gelu_pytorch_tanh, silu or swish, optionally gated-)", e);
    const cJSON *ed = t5_key(r, "is_encoder_decoder");
    if (ed && !cJSON_IsBool(ed)) return vc__hf_bad(r, "is_encoder_decoder", "expected true or false");
    if (ed && !cJSON_IsTrue(ed))
        return vc__hf_bad(r, "is_encoder_decoder", "false: T5ForConditionalGeneration is an encoder-decoder (generate() "
                      "reads this flag to run the encoder first)");
    /* _relative_position_bucket: the encoder's bidirectional buckets halve num_buckets, then
     * max_exact = num_buckets // 2 and math.log(max_distance / max_exact) divides by it (a
     * ZeroDivisionError below 4 buckets); the decoder's max_exact is num_buckets // 2, and a
     * max_distance at or below max_exact makes that log 0 or negative: NaN or negative buckets,
     * an out-of-range nn.Embedding index once positions reach max_exact */
    if (a->rel_buckets < 4)
        return vc__hf_bad(r, "relative_attention_num_buckets", "%lld: at least 4 (the encoder's max_exact, num_buckets // 4, "
                      "divides in _relative_position_bucket)", (long long)a->rel_buckets);
    if (a->rel_maxdist <= a->rel_buckets / 2)
        return vc__hf_bad(r, "relative_attention_max_distance", "%lld: must be more than relative_attention_num_buckets // 2 "
                      "(%lld, the decoder's max_exact): log(max_distance / max_exact) must be positive",
                      (long long)a->rel_maxdist, (long long)(a->rel_buckets / 2));
    int64_t t;
    if (__builtin_mul_overflow(a->rel_buckets, a->NH, &t) || t > (INT64_C(1) << 48))
        return vc__hf_bad(r, "relative_attention_num_buckets", "relative_attention_bias (%lld x %lld heads) is more than 2^48 "
                      "elements", (long long)a->rel_buckets, (long long)a->NH);
    return 0;
}

/* umt5 (modeling_umt5.py, huggingface/transformers @ de0f5d1eab94a1725c9e4f202498521adf32c5e1): T5 v1.1's
 * modules with a relative_attention_bias in the SelfAttention of EVERY block (UMT5LayerSelfAttention:
 * UMT5Attention(config, has_relative_attention_bias=True)); UMT5Attention.forward computes its own
 * position_bias in every call (compute_bias, or the cross-attention's torch.zeros((1, n_heads, q, k)) with no
 * requires_grad), then + the stack's mask, after the scores' matmul, a local that dies when the attention
 * returns: UMT5Block passes no position_bias from block to block. UMT5Stack.forward's masks are T5Stack's
 * (the encoder's (1 - m) * finfo.min, the decoder's _update_causal_mask and invert_attention_mask). */
static bool t5_every(const arch *a) { return !strcmp(a->f->model_type, "umt5"); }

/* Every product is bounded by hf_read.c's check_sizes (vocab x d_model, d_ff x d_model x 3 and
 * 3 x heads x d_kv x d_model at most 2^48 each, at most 1024 layers per stack) and the bucket
 * table's check above: the sum stays below 2^62. */
int64_t vc__hf_t5_parameters(const arch *a)
{
    const int64_t H = a->H, inner = a->NH * a->D;
    const int64_t attn = 4 * H * inner;                  /* T5Attention: q, k, v [inner, d_model], o [d_model, inner] */
    const int64_t ff = (a->gated ? 3 : 2) * H * a->I;    /* wi_0, wi_1, wo or wi, wo */
    const int64_t enc_block = attn + H + ff + H;         /* T5LayerSelfAttention, T5LayerFF, each with its layer_norm */
    const int64_t dec_block = enc_block + attn + H;      /* + T5LayerCrossAttention (EncDecAttention, layer_norm) */
    const int64_t bias = a->rel_buckets * a->NH;         /* block[0]'s relative_attention_bias, in each stack */
    const int64_t shared = a->V * H;
    /* umt5: every block's SelfAttention has one (UMT5LayerSelfAttention: has_relative_attention_bias=True) */
    const int64_t nb_enc = t5_every(a) ? a->N : 1, nb_dec = t5_every(a) ? a->dec_N : 1;
    const int64_t encoder = a->N * enc_block + nb_enc * bias + H; /* + final_layer_norm */
    const int64_t decoder = a->dec_N * dec_block + nb_dec * bias + H;
    return shared + encoder + decoder + (a->tie ? 0 : shared); /* lm_head: its own weight when untied */
}

/* ---- the layers (issue 31 item 4: the memory) ----
 *
 * T5ForConditionalGeneration.forward with labels (training) or decoder_input_ids (inference), as
 * modeling_t5.py @ 6b8b757d runs it, written with layers/t5.c's kinds:
 *  - encoder = T5Stack (is_decoder False, use_cache False: T5ForConditionalGeneration.__init__'s
 *    encoder_config): embed_tokens (the shared nn.Embedding), dropout, the blocks, final_layer_norm,
 *    dropout; block 0's compute_bias (bidirectional buckets) plus the padding mask is the
 *    position_bias every block adds (T5PositionBias, before block 0);
 *  - decoder_input_ids = _shift_right(labels) (T5DecoderIds);
 *  - decoder = T5Stack (is_decoder True, use_cache = config.use_cache, True by default: an
 *    EncoderDecoderCache that keeps every layer's self- and cross-attention key and value states
 *    until the output is dropped): the causal mask and block 0's unidirectional bias, the
 *    cross-attention's zeros plus the encoder's inverted mask, each shared by the blocks;
 *    T5Block: T5LayerSelfAttention, T5LayerCrossAttention (q on the decoder, k and v on the
 *    encoder's output), T5LayerFF (T5DenseActDense wi, act, dropout, wo; or T5DenseGatedActDense
 *    act(wi_0) * wi_1, dropout, wo), each `hidden_states + dropout(sublayer(layer_norm(h)))`;
 *  - sequence_output * d_model ** -0.5 when tie_word_embeddings, lm_head, then the loss
 *    (CrossEntropyLoss on the logits in their dtype: src/engine/loss.c "seq2seq_lm").
 * The dropouts are config.dropout_rate's (attention weights too: T5Attention.dropout). The cache's
 * states in training: DynamicCache.update's first update keeps key_states itself, so the
 * projections' outputs live until the forward returns (the harness's loop drops `outputs` then). */
typedef struct {
    rd *r;
    cJSON *arr;
    char last[128]; /* the name of the layer written last ("" none): a copy, the names are often the callers' locals */
} t5w;

static cJSON *t5_lay(t5w *w, const char *type, const char *name)
{
    snprintf(w->last, sizeof w->last, "%s", name ? name : "");
    return vc__hf_layer(w->r, w->arr, type, name);
}
static void t5_num(t5w *w, cJSON *o, const char *k, double v) { vc__hf_num(w->r, o, k, v); }
static void t5_str(t5w *w, cJSON *o, const char *k, const char *v) { vc__hf_str(w->r, o, k, v); }
static void t5_flag(t5w *w, cJSON *o, const char *k, bool v) { vc__hf_flag(w->r, o, k, v); }
static void t5_ins(t5w *w, cJSON *o, const char *a, const char *b, const char *c, const char *d)
{
    vc__hf_ins(w->r, o, a, b, c, d);
}
static void t5_linear(t5w *w, const char *name, const char *in, int64_t nin, int64_t nout)
{
    cJSON *o = t5_lay(w, "Linear", name);
    if (in) t5_ins(w, o, in, NULL, NULL, NULL);
    t5_num(w, o, "in_features", (double)nin);
    t5_num(w, o, "out_features", (double)nout);
    t5_flag(w, o, "bias", false);
}
static void t5_norm(t5w *w, const arch *a, const char *name)
{
    cJSON *o = t5_lay(w, "T5LayerNorm", name);
    t5_num(w, o, "hidden_size", (double)a->H);
    t5_num(w, o, "eps", a->eps);
}
static void t5_dropout(t5w *w, const arch *a, const char *name)
{
    if (a->p_resid <= 0) return; /* nn.Dropout(0.0) returns its input */
    cJSON *o = t5_lay(w, "Dropout", name);
    t5_num(w, o, "p", a->p_resid);
}
/* dropout of `in` (not the last layer): the name of what follows reads, `in` itself when p is 0 */
static const char *t5_dropout_of(t5w *w, const arch *a, const char *name, const char *in)
{
    if (a->p_resid <= 0) return in;
    cJSON *o = t5_lay(w, "Dropout", name);
    t5_ins(w, o, in, NULL, NULL, NULL);
    t5_num(w, o, "p", a->p_resid);
    return name;
}
static void t5_act_layer(t5w *w, const arch *a, const char *name)
{
    if (a->act == A_GELU_NEW || a->act == A_GELU_FAST) { /* ACT2FN's NewGELUActivation / FastGELUActivation */
        cJSON *o = t5_lay(w, "NewGELU", name);
        t5_str(w, o, "variant", a->act == A_GELU_NEW ? "new" : "fast");
    } else if (a->act == A_SILU) {
        t5_lay(w, "SiLU", name);
    } else if (a->act == A_RELU) {
        t5_lay(w, "ReLU", name);
    } else {
        cJSON *o = t5_lay(w, "GELU", name);
        t5_str(w, o, "approximate", a->act == A_GELU_TANH ? "tanh" : "none");
    }
}

/* a T5 module's return (layers/t5.c T5Return): `out`, the locals it held released */
static void t5_end(t5w *w, const char *name, const char *out, const char *const *locals, int n)
{
    char out_name[sizeof w->last]; /* out may be w->last, which t5_lay rewrites */
    snprintf(out_name, sizeof out_name, "%s", out ? out : "");
    cJSON *o = t5_lay(w, "T5Return", name);
    const char *v[8] = {out ? out_name : NULL};
    if (n > 7) n = 7; /* T5Return takes 8 inputs at most */
    for (int i = 0; i < n; i++) v[i + 1] = locals[i];
    cJSON *arr = o ? cJSON_CreateStringArray(v, n + 1) : NULL;
    if (o && (!arr || !cJSON_AddItemToObject(o, "inputs", arr))) {
        cJSON_Delete(arr);
        w->r->oom = true;
    }
}

/* hidden_states + dropout(x): the sublayer's residual add */
static void t5_residual(t5w *w, const arch *a, const char *name, const char *residual, const char *drop)
{
    t5_dropout(w, a, drop);
    char prev[sizeof w->last]; /* what the dropout wrote, before t5_lay rewrites w->last */
    snprintf(prev, sizeof prev, "%s", w->last);
    t5_ins(w, t5_lay(w, "Add", name), residual, *prev ? prev : NULL, NULL, NULL);
}

/* A position bias a block computes itself (T5Attention.forward with position_bias None): block 0's
 * under checkpointing, inside its checkpoint (t5_blocks) */
typedef struct {
    const char *name, *mask;
    bool buckets, bidirectional;
    bool local; /* umt5: every attention's own, dying when it returns (t5_every); else block 0's, exported */
} t5pb;

static void t5_bias(t5w *w, const arch *a, const char *name, const char *q, const char *k, const char *mask, bool buckets,
                    bool bidirectional);

/* T5LayerSelfAttention (sub 0) or T5LayerCrossAttention (sub 1, k and v on kv); pb: the bias this
 * attention computes (after its projections and scores' matmul: compute_bias or the zeros, then
 * + mask), else `bias`, the one it is given */
static void t5_attention(t5w *w, const arch *a, int sub, const char *residual, const char *kv, const char *bias, bool cache,
                         const t5pb *pb)
{
    const int64_t inner = a->NH * a->D;
    char ln[48], q[64], k[64], v[64], at[64], o[64], dr[48], res[48], rt[64];
    const char *m = sub ? "EncDecAttention" : "SelfAttention";
    snprintf(ln, sizeof ln, "layer.%d.layer_norm", sub);
    snprintf(q, sizeof q, "layer.%d.%s.q", sub, m);
    snprintf(k, sizeof k, "layer.%d.%s.k", sub, m);
    snprintf(v, sizeof v, "layer.%d.%s.v", sub, m);
    snprintf(at, sizeof at, "layer.%d.%s.attention", sub, m);
    snprintf(o, sizeof o, "layer.%d.%s.o", sub, m);
    snprintf(dr, sizeof dr, "layer.%d.dropout", sub);
    snprintf(res, sizeof res, "layer.%d.residual", sub);
    cJSON *n = t5_lay(w, "T5LayerNorm", ln);
    if (residual) t5_ins(w, n, residual, NULL, NULL, NULL);
    t5_num(w, n, "hidden_size", (double)a->H);
    t5_num(w, n, "eps", a->eps);
    t5_linear(w, q, ln, a->H, inner);
    t5_linear(w, k, kv ? kv : ln, a->H, inner);
    t5_linear(w, v, kv ? kv : ln, a->H, inner);
    if (pb) {
        t5_bias(w, a, pb->name, ln, kv ? kv : ln, pb->mask, pb->buckets, pb->bidirectional);
        bias = pb->name;
    }
    cJSON *c = t5_lay(w, "T5Attention", at);
    t5_ins(w, c, q, k, v, bias);
    t5_num(w, c, "num_heads", (double)a->NH);
    t5_num(w, c, "head_dim", (double)a->D);
    if (a->p_resid > 0) t5_num(w, c, "dropout", a->p_resid);
    if (cache) t5_flag(w, c, "cache", true);
    t5_linear(w, o, NULL, inner, a->H);
    /* T5Attention.forward returns after self.o: its states and the caller's normed input die then (and
     * UMT5Attention's position_bias, its own local) */
    snprintf(rt, sizeof rt, "layer.%d.%s.return", sub, m);
    const char *held[] = {ln, q, k, v, pb && pb->local ? pb->name : NULL};
    t5_end(w, rt, o, held, pb && pb->local ? 5 : 4);
    t5_residual(w, a, res, residual ? residual : "input", dr);
}

/* T5LayerFF: layer_norm, DenseReluDense, dropout, the residual */
static void t5_ff(t5w *w, const arch *a, int sub, const char *residual)
{
    char ln[48], wi[64], wi1[64], act[64], mul[64], dd[64], wo[64], dr[48], res[48], rt[64];
    snprintf(ln, sizeof ln, "layer.%d.layer_norm", sub);
    snprintf(wi, sizeof wi, "layer.%d.DenseReluDense.%s", sub, a->gated ? "wi_0" : "wi");
    snprintf(wi1, sizeof wi1, "layer.%d.DenseReluDense.wi_1", sub);
    snprintf(act, sizeof act, "layer.%d.DenseReluDense.act", sub);
    snprintf(mul, sizeof mul, "layer.%d.DenseReluDense.mul", sub);
    snprintf(dd, sizeof dd, "layer.%d.DenseReluDense.dropout", sub);
    snprintf(wo, sizeof wo, "layer.%d.DenseReluDense.wo", sub);
    snprintf(dr, sizeof dr, "layer.%d.dropout", sub);
    snprintf(res, sizeof res, "layer.%d.residual", sub);
    t5_norm(w, a, ln);
    t5_linear(w, wi, NULL, a->H, a->I);
    t5_act_layer(w, a, act);
    if (a->gated) { /* hidden_gelu = act(wi_0(h)); hidden_linear = wi_1(h); hidden_gelu * hidden_linear */
        t5_linear(w, wi1, ln, a->H, a->I);
        t5_ins(w, t5_lay(w, "Mul", mul), act, wi1, NULL, NULL);
    }
    t5_dropout(w, a, dd);
    t5_linear(w, wo, NULL, a->I, a->H);
    /* T5LayerFF.forward: forwarded_states (the norm's output) until DenseReluDense returns */
    snprintf(rt, sizeof rt, "layer.%d.DenseReluDense.return", sub);
    const char *held[] = {ln};
    t5_end(w, rt, wo, held, 1);
    t5_residual(w, a, res, residual, dr);
}

/* One T5Stack's blocks, n of them from block `first`: a Sequential repeated n times. pb and xpb:
 * the self- and cross-attention biases block 0 computes itself (under checkpointing), exported to
 * the blocks after it; else bias and cross_bias, given. */
static void t5_blocks(t5w *w, const arch *a, const char *name, const char *in, int64_t n, bool decoder, const char *enc,
                      const char *bias, const char *cross_bias, const t5pb *pb, const t5pb *xpb)
{
    cJSON *seq = t5_lay(w, "Sequential", name);
    t5_ins(w, seq, in, NULL, NULL, NULL);
    if (n > 1) t5_num(w, seq, "repeat", (double)n);
    if (a->ckpt) t5_flag(w, seq, "checkpoint", true); /* every T5Block (T5Stack.forward's _gradient_checkpointing_func) */
    if (pb && !pb->local) { /* T5Stack.forward: position_bias = layer_outputs[2] (and encoder_decoder_position_bias) */
        const char *ex[2] = {pb->name, xpb ? xpb->name : NULL};
        cJSON *e = cJSON_CreateStringArray(ex, xpb ? 2 : 1);
        if (!e || !seq || !cJSON_AddItemToObject(seq, "export", e)) {
            cJSON_Delete(e);
            w->r->oom = true;
        }
    }
    cJSON *arr = seq ? cJSON_AddArrayToObject(seq, "layers") : NULL;
    if (!arr) {
        w->r->oom = true;
        return;
    }
    t5w b = {w->r, arr, ""};
    /* the decoder's attention is cached (EncoderDecoderCache) unless checkpointing turned use_cache off */
    const bool cache = decoder && !a->ckpt;
    t5_attention(&b, a, 0, NULL, NULL, bias, cache, pb);
    if (decoder) t5_attention(&b, a, 1, "layer.0.residual", enc, cross_bias, cache, xpb);
    t5_ff(&b, a, decoder ? 2 : 1, decoder ? "layer.1.residual" : "layer.0.residual");
    /* T5Block.forward returns: its input (T5Stack's hidden_states) and the sub-layers' outputs
     * (self_attention_outputs, cross_attention_outputs) die then; the biases it computed are in
     * attention_outputs, returned */
    const char *held[] = {"input", "layer.0.residual", decoder ? "layer.1.residual" : NULL, NULL, NULL};
    int nh = decoder ? 3 : 2;
    if (pb && !pb->local) held[nh++] = pb->name;
    if (xpb && !xpb->local) held[nh++] = xpb->name;
    t5_end(&b, "return", decoder ? "layer.2.residual" : "layer.1.residual", held, nh);
    snprintf(w->last, sizeof w->last, "%s", name);
}

static void t5_mask(t5w *w, const char *name, const char *in, const char *kind)
{
    cJSON *o = t5_lay(w, "T5StackMask", name);
    t5_ins(w, o, in, NULL, NULL, NULL);
    t5_str(w, o, "mask", kind);
}

static void t5_bias(t5w *w, const arch *a, const char *name, const char *q, const char *k, const char *mask, bool buckets,
                    bool bidirectional)
{
    cJSON *o = t5_lay(w, "T5PositionBias", name);
    t5_ins(w, o, q, k, mask, NULL);
    t5_num(w, o, "num_heads", (double)a->NH);
    if (buckets) {
        t5_num(w, o, "num_buckets", (double)a->rel_buckets);
        t5_num(w, o, "max_distance", (double)a->rel_maxdist);
        t5_flag(w, o, "bidirectional", bidirectional);
    } else if (a->ckpt && !t5_every(a)) { /* T5Attention.forward: position_bias.requires_grad = True under checkpointing
                                           * (UMT5Attention's zeros have none) */
        t5_flag(w, o, "requires_grad", true);
    }
}

void vc__hf_t5_write(rd *r, cJSON *arr, const arch *a)
{
    t5w w = {r, arr, ""};
    /* the encoder */
    cJSON *o = t5_lay(&w, "Embedding", "shared");
    t5_num(&w, o, "num_embeddings", (double)a->V);
    t5_num(&w, o, "embedding_dim", (double)a->H);
    t5_mask(&w, "encoder.mask", "shared", "padding");
    const char *emb = t5_dropout_of(&w, a, "encoder.dropout", "shared"); /* self.dropout(inputs_embeds) */
    static const char ebias[] = "encoder.block.0.layer.0.SelfAttention.relative_attention_bias";
    const bool every = t5_every(a);
    if (every) { /* umt5: each block's SelfAttention its own bias (the block checkpointed whole under checkpointing) */
        const t5pb pb = {"layer.0.SelfAttention.relative_attention_bias", "encoder.mask", true, true, true};
        t5_blocks(&w, a, "encoder.block", emb, a->N, false, NULL, NULL, NULL, &pb, NULL);
    } else if (a->ckpt) { /* block 0 computes the bias inside its checkpoint, an output of it the others take */
        const t5pb pb = {ebias, "encoder.mask", true, true, false};
        t5_blocks(&w, a, "encoder.block.0", emb, 1, false, NULL, NULL, NULL, &pb, NULL);
        if (a->N > 1) t5_blocks(&w, a, "encoder.block", "encoder.block.0", a->N - 1, false, NULL, ebias, NULL, NULL, NULL);
    } else {
        t5_bias(&w, a, ebias, emb, emb, "encoder.mask", true, true);
        t5_blocks(&w, a, "encoder.block", emb, a->N, false, NULL, ebias, NULL, NULL, NULL);
    }
    t5_norm(&w, a, "encoder.final_layer_norm");
    t5_dropout(&w, a, "encoder.final_dropout");
    static const char *const elocals[] = {"shared", "encoder.mask", ebias};
    t5_end(&w, "encoder", *w.last ? w.last : NULL, elocals, every ? 2 : 3);
    t5_flag(&w, cJSON_GetArrayItem(arr, cJSON_GetArraySize(arr) - 1), "keep_forward", true); /* encoder_outputs */
    const char *enc = "encoder"; /* encoder_outputs[0] */
    /* decoder_input_ids and the decoder */
    o = t5_lay(&w, "T5DecoderIds", "decoder_input_ids");
    t5_num(&w, o, "length", (double)a->tgt);
    o = t5_lay(&w, "Embedding", "decoder.embed_tokens");
    t5_num(&w, o, "num_embeddings", (double)a->V);
    t5_num(&w, o, "embedding_dim", (double)a->H);
    t5_str(&w, o, "tie", "shared"); /* T5Stack(config, self.shared): the same module */
    /* get_input_embeddings() is self.shared, which both stacks call: PEFT's enable_input_require_grads
     * forward hook makes this call's output a leaf that requires grad too (layers/embedding.c) */
    t5_flag(&w, o, "input_embeddings", true);
    t5_mask(&w, "decoder.causal_mask", "decoder.embed_tokens", "causal");
    t5_mask(&w, "decoder.encoder_mask", enc, "cross");
    const char *demb = t5_dropout_of(&w, a, "decoder.dropout", "decoder.embed_tokens");
    static const char dbias[] = "decoder.block.0.layer.0.SelfAttention.relative_attention_bias";
    static const char xbias[] = "decoder.encoder_decoder_position_bias";
    if (every) { /* umt5: each block's self- and cross-attention their own */
        const t5pb pb = {"layer.0.SelfAttention.relative_attention_bias", "decoder.causal_mask", true, false, true},
                   xpb = {"layer.1.EncDecAttention.position_bias", "decoder.encoder_mask", false, false, true};
        t5_blocks(&w, a, "decoder.block", demb, a->dec_N, true, enc, NULL, NULL, &pb, &xpb);
    } else if (a->ckpt) { /* block 0's self- and cross-attention biases, inside its checkpoint */
        const t5pb pb = {dbias, "decoder.causal_mask", true, false, false},
                   xpb = {xbias, "decoder.encoder_mask", false, false, false};
        t5_blocks(&w, a, "decoder.block.0", demb, 1, true, enc, NULL, NULL, &pb, &xpb);
        if (a->dec_N > 1)
            t5_blocks(&w, a, "decoder.block", "decoder.block.0", a->dec_N - 1, true, enc, dbias, xbias, NULL, NULL);
    } else {
        t5_bias(&w, a, dbias, demb, demb, "decoder.causal_mask", true, false);
        t5_bias(&w, a, xbias, demb, enc, "decoder.encoder_mask", false, false);
        t5_blocks(&w, a, "decoder.block", demb, a->dec_N, true, enc, dbias, xbias, NULL, NULL);
    }
    t5_norm(&w, a, "decoder.final_layer_norm");
    t5_dropout(&w, a, "decoder.final_dropout");
    static const char *const dlocals[] = {"decoder.embed_tokens", "decoder.causal_mask", "decoder.encoder_mask", dbias, xbias};
    t5_end(&w, "decoder", *w.last ? w.last : NULL, dlocals, every ? 3 : 5);
    t5_flag(&w, cJSON_GetArrayItem(arr, cJSON_GetArraySize(arr) - 1), "keep_forward", true); /* decoder_outputs */
    if (a->tie) { /* sequence_output * (self.model_dim ** -0.5) */
        o = t5_lay(&w, "Scale", "lm_head_rescale");
        t5_num(&w, o, "factor", 1.0 / sqrt((double)a->H));
        /* sequence_output, rebound to the product: a local until the forward returns */
        o = t5_lay(&w, "T5Return", "sequence_output");
        t5_ins(&w, o, "lm_head_rescale", NULL, NULL, NULL);
        t5_flag(&w, o, "keep_forward", true);
    }
    o = t5_lay(&w, "Linear", "lm_head");
    t5_num(&w, o, "in_features", (double)a->H);
    t5_num(&w, o, "out_features", (double)a->V);
    t5_flag(&w, o, "bias", false);
    if (a->tie) t5_str(&w, o, "tie", "shared");
}

/* What a T5 model's estimate does not model, refused before the plan (src/engine/plan.c):
 *  - precisions other than fp32 and bf16 (the model cast whole, model.to(torch.bfloat16)):
 *    fp16 runs T5Block's clamp of every sub-layer's output (torch.where(isinf(h).any(), ...),
 *    torch.clamp), and autocast meets T5DenseActDense's hidden_states.to(self.wo.weight.dtype)
 *    (an fp32 copy before wo); mixed-* keep fp32 master weights beside them;
 *  - quantized weights: from_pretrained keeps T5PreTrainedModel._keep_in_fp32_modules ["wo"] in
 *    float32 and unquantized, which the storage formats here do not express;
 *  - pipeline stages (the decoder reads the encoder's output in every block). */
vc_status vc__t5_check(const vc_model *m, const vc_options *o, vc_error *err)
{
    bool t5 = false, attn = false; /* T5LayerNorm: a T5 model; T5Attention without it: MPNet's (hf_mpnet.c) */
    for (size_t i = 0; i < m->ninst && !t5; i++) {
        t5 = !strcmp(m->inst[i].kind->name, "T5LayerNorm");
        attn |= !strcmp(m->inst[i].kind->name, "T5Attention");
    }
    if (!t5) return attn ? vc__mpnet_check(m, o, err) : VC_OK;
    if (o->precision != VC_PREC_FP32 && o->precision != VC_PREC_BF16)
        return vc_set_error(err, VC_ERR_USAGE, O("precision"), "t5 is modelled in fp32 and bf16 (the model cast whole); %s",
                            o->precision == VC_PREC_FP16 ? "fp16 adds T5Block's clamp of every sub-layer, not modelled"
                            : o->precision == VC_PREC_AMP_FP16 || o->precision == VC_PREC_AMP_BF16
                                ? "under autocast T5DenseActDense casts its input to wo's float32 first, not modelled"
                                : "fp32 master weights beside 16-bit ones are not modelled for it");
    if (m->has_quant || m->cfg_quant.format != VC_WEIGHTS_DENSE)
        return vc_set_error(err, VC_ERR_USAGE, m->has_quant ? O("weights") : "quantization_config",
                            "t5: from_pretrained keeps wo in float32 and unquantized (_keep_in_fp32_modules); "
                            "quantized T5 weights are not modelled");
    if (o->pp > 1 || m->stage.on) /* a stage's options carry pp 1 (src/parallel/pipeline.c) */
        return vc_set_error(err, VC_ERR_USAGE, O("pp"), "t5: pipeline stages of an encoder-decoder are not modelled");
    if (o->ckpt_ops) /* T5Stack's checkpoint is the whole T5Block's (hf_t5.c t5_blocks) */
        return vc_set_error(err, VC_ERR_USAGE, O("grad_ckpt_ops"), "t5: T5Stack checkpoints whole T5Blocks; "
                            "torchtitan's op-level selective checkpointing is not modelled for it");
    if (o->act_offload != VC_ACT_OFFLOAD_NONE)
        return vc_set_error(err, VC_ERR_USAGE, O("act_offload"), "t5: offloading the saved activations is not modelled for it");
    return VC_OK;
}
