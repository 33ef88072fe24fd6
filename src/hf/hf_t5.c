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
 * What is not modelled yet (and so refused by vc_hf_build, src/hf/hf.c): the
 * memory of training, inference and generation -- the encoder on the source,
 * the decoder on the target, the position bias held through each stack, the
 * cross-attention on the encoder's output and EncoderDecoderCache.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hf_arch.h"
#include "util.h"

static int t5_bad(rd *r, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int t5_bad(rd *r, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vc_set_errorv(r->err, VC_ERR_MODEL, key, fmt, ap);
    va_end(ap);
    return -1;
}

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
    if (!a->dec_N) a->dec_N = a->N; /* num_decoder_layers absent or null: num_layers */
    if (a->dec_N > 1024)
        return t5_bad(r, "num_decoder_layers", "%lld layers: more than the limit of 1024", (long long)a->dec_N);
    /* feed_forward_proj: "ACT" or "gated-ACT" (T5Config's ValueError otherwise) */
    const cJSON *fp = t5_key(r, "feed_forward_proj");
    if (fp && !cJSON_IsString(fp)) return t5_bad(r, "feed_forward_proj", "expected a string such as \"relu\" or \"gated-gelu\"");
    const char *s = fp ? fp->valuestring : "relu";
    char e[64];
    vc_escape(e, sizeof e, s);
    const char *dash = strchr(s, '-');
    bool gated = dash && (size_t)(dash - s) == 5 && !strncmp(s, "gated", 5);
    if ((dash && !gated) || (dash && strchr(dash + 1, '-')))
        return t5_bad(r, "feed_forward_proj", "\"%s\" is not of the form \"gated-ACT\" or \"ACT\" (T5Config raises ValueError)", e);
    const char *act = dash ? dash + 1 : s;
    size_t alen = strlen(act);
    if (!strcmp(s, "gated-gelu")) { /* T5Config: "for backwards compatibility" */
        act = "gelu_new";
        alen = strlen(act);
    }
    /* is_gated_act / dense_act_fn written in the file replace the derived ones (PretrainedConfig's kwargs):
     * one that disagrees with feed_forward_proj is refused rather than silently followed */
    const cJSON *ga = t5_key(r, "is_gated_act");
    if (ga && !cJSON_IsBool(ga)) return t5_bad(r, "is_gated_act", "expected true or false");
    if (ga && cJSON_IsTrue(ga) != gated)
        return t5_bad(r, "is_gated_act", "%s disagrees with feed_forward_proj \"%s\" (transformers would build %s MLP)",
                      cJSON_IsTrue(ga) ? "true" : "false", e, cJSON_IsTrue(ga) ? "the gated" : "the ungated");
    const cJSON *da = t5_key(r, "dense_act_fn");
    if (da && !cJSON_IsString(da)) return t5_bad(r, "dense_act_fn", "expected a string such as \"gelu_new\"");
    if (da && (strlen(da->valuestring) != alen || strncmp(da->valuestring, act, alen))) {
        char d[64];
        vc_escape(d, sizeof d, da->valuestring);
        return t5_bad(r, "dense_act_fn", "\"%s\" disagrees with feed_forward_proj \"%s\" (which gives \"%.*s\")", d, e,
                      (int)alen, act);
    }
    a->gated = gated;
    a->act = t5_act(act, alen);
    if (a->act < 0)
        return t5_bad(r, "feed_forward_proj", "\"%s\": the activation is not modelled (relu, gelu, gelu_new, gelu_fast, "
                      "gelu_pytorch_tanh, silu or swish, optionally gated-)", e);
    const cJSON *ed = t5_key(r, "is_encoder_decoder");
    if (ed && !cJSON_IsBool(ed)) return t5_bad(r, "is_encoder_decoder", "expected true or false");
    if (ed && !cJSON_IsTrue(ed))
        return t5_bad(r, "is_encoder_decoder", "false: T5ForConditionalGeneration is an encoder-decoder (generate() "
                      "reads this flag to run the encoder first)");
    /* _relative_position_bucket: the encoder's bidirectional buckets halve num_buckets, then
     * max_exact = num_buckets // 2 and math.log(max_distance / max_exact) divides by it (a
     * ZeroDivisionError below 4 buckets); the decoder's max_exact is num_buckets // 2, and a
     * max_distance at or below max_exact makes that log 0 or negative: NaN or negative buckets,
     * an out-of-range nn.Embedding index once positions reach max_exact */
    if (a->rel_buckets < 4)
        return t5_bad(r, "relative_attention_num_buckets", "%lld: at least 4 (the encoder's max_exact, num_buckets // 4, "
                      "divides in _relative_position_bucket)", (long long)a->rel_buckets);
    if (a->rel_maxdist <= a->rel_buckets / 2)
        return t5_bad(r, "relative_attention_max_distance", "%lld: must be more than relative_attention_num_buckets // 2 "
                      "(%lld, the decoder's max_exact): log(max_distance / max_exact) must be positive",
                      (long long)a->rel_maxdist, (long long)(a->rel_buckets / 2));
    int64_t t;
    if (__builtin_mul_overflow(a->rel_buckets, a->NH, &t) || t > (INT64_C(1) << 48))
        return t5_bad(r, "relative_attention_num_buckets", "relative_attention_bias (%lld x %lld heads) is more than 2^48 "
                      "elements", (long long)a->rel_buckets, (long long)a->NH);
    return 0;
}

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
    const int64_t encoder = a->N * enc_block + bias + H; /* + final_layer_norm */
    const int64_t decoder = a->dec_N * dec_block + bias + H;
    return shared + encoder + decoder + (a->tie ? 0 : shared); /* lm_head: its own weight when untied */
}
