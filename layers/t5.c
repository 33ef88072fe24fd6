/*
 * t5.c — the pieces of T5ForConditionalGeneration (issue 31 item 4: t5 /
 * flan-t5) that no other kind has: T5LayerNorm, the relative position bias
 * the first block of each T5Stack computes and every block shares
 * (T5PositionBias) from the mask its stack prepares (T5StackMask), T5Attention's
 * eager core with that bias added to its scores (T5Attention), the modules'
 * returns that end their locals' lives (T5Return), and the decoder's input ids
 * (T5DecoderIds).
 * src/hf/hf_t5.c writes a config.json's model with them. Under --mode generate (src/engine/generate.c
 * "Encoder-decoders") the masks, the decoder's bias and the attention follow generate()'s cached
 * forward (vc_gen_seq2seq, vc_kv_update_self, vc_kv_cross).
 *
 * Source: huggingface/transformers @ 6b8b757dfcb582379a64f013cdce46c43629f2b0,
 * src/transformers/models/t5/modeling_t5.py (the function each piece follows is
 * named at it). T5 has no sdpa path at that commit: T5Attention.forward computes
 * its scores, softmax and weights itself.
 */
#include "layer.h"
#include "ops.h"

/* ---- T5LayerNorm ----
 * T5LayerNorm.forward:
 *   variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
 *   hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
 *   if self.weight.dtype in [torch.float16, torch.bfloat16]: hidden_states = hidden_states.to(self.weight.dtype)
 *   return self.weight * hidden_states
 * Unlike LlamaRMSNorm the product takes the input itself (16-bit: an fp32 result by
 * type promotion), which its backward keeps; pow keeps the fp32 copy. */
typedef struct {
    int64_t hidden;
    double eps;
} t5ln_cfg;

static int t5ln_parse(vc_args *a, void *p)
{
    t5ln_cfg *c = p;
    return vc_arg_int(a, "hidden_size", VC_REQUIRED, 1, &c->hidden) || vc_arg_float(a, "eps", 1e-6, 0.0, 1.0, &c->eps);
}

static int t5ln_setup(vc_setup *s, void *p)
{
    const t5ln_cfg *c = p;
    const vc_shape *x = &s->in[0];
    if (x->d[x->nd - 1] != c->hidden)
        return vc_fail(s, "hidden_size", "hidden_size is %lld but the input has %lld features (last dimension)",
                       (long long)c->hidden, (long long)x->d[x->nd - 1]);
    s->out = *x;
    return vc_param(s, "weight", c->hidden);
}

static void t5ln_emit(vc_build *b, const void *p)
{
    (void)p;
    vc_t x = vc_input(b, 0), w = vc_weight(b, 0);
    const vc_shape *xs = vc_input_shape(b, 0);
    int64_t rows = 1;
    for (int i = 0; i < xs->nd - 1; i++) rows *= xs->d[i];
    vc_numel full = vc_numel_of(b, x), nr = vc_n_sample(rows);
    vc_t h = vc__op_cast(b, x, VC_DT_F32); /* .to(torch.float32): x itself when fp32 */
    vc_op *o = vc_op_begin(b, "pow");      /* pow_backward: grad * 2 * self: saves self */
    int i = vc_op_in(o, h);
    vc_t sq = vc_op_out(o, full, VC_DT_F32);
    vc_op_save_if(o, h, i);
    vc_op_btemp(o, vc_n_scale(full, 2), VC_DT_F32);
    vc_op_end(o);
    vc_t var = vc__op_mean(b, sq, nr);
    vc_t ve = vc__op_fresh(b, "add", var, nr); /* variance + eps */
    vc_t r = vc__op_unary(b, "rsqrt", ve, VC_SAVE_OUT, false);
    vc_t hn = vc__op_mul_dt(b, x, r, full, VC_DT_F32); /* hidden_states * rsqrt(...): fp32 by promotion */
    vc_dtype wdt = vc_dt_of(b, w);
    if (wdt == VC_DT_BF16 || wdt == VC_DT_F16) hn = vc__op_cast(b, hn, wdt); /* .to(self.weight.dtype) */
    vc_dtype odt = wdt == VC_DT_F32 || vc_dt_of(b, hn) == VC_DT_F32 ? VC_DT_F32 : wdt;
    vc_set_output(b, vc__op_mul_dt(b, w, hn, full, odt));
}

const vc_kind vc_kind_T5LayerNorm = {
    .ops = 8,
    .name = "T5LayerNorm", .summary = "T5's RMS norm: x.to(float32).pow(2).mean, x * rsqrt, .to(weight dtype), weight *",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(t5ln_cfg),
    .parse = t5ln_parse, .setup = t5ln_setup, .emit = t5ln_emit,
};

/* ---- T5StackMask: the additive mask T5Stack.forward prepares (a local until the stack returns) ----
 *  "padding" (the encoder's, [1, k]): attention_mask = torch.ones(B, k) (float32), causal_mask =
 *    attention_mask[:, None, None, :].to(dtype) (the same tensor in fp32), (1.0 - m) * finfo(dtype).min;
 *  "causal" (the decoder's self-attention, [q, k]): attention_mask = torch.ones(B, q) (float32), then
 *    _update_causal_mask -> _prepare_4d_causal_attention_mask_with_cache_position (eager): full((q, k),
 *    min), triu(1), *= arange(k) > cache_position.reshape(-1, 1), expand(B, 1, -1, -1).clone(),
 *    padding_mask = causal[..., :k] + attention_mask[:, None, None, :] (float32 by promotion) == 0,
 *    causal[..., :k] = causal[..., :k].masked_fill(padding_mask, min) (a copy_);
 *  "cross" (the decoder's encoder_extended_attention_mask, [1, k]): torch.ones((B, k), dtype=torch.long),
 *    invert_attention_mask: [:, None, None, :].to(dtype), (1.0 - m) * finfo(dtype).min.
 * Input: the stack's embeddings (causal, padding) or the encoder's output (cross), for the lengths.
 * Under generate() (vc_gen_seq2seq; generation/utils.py @000034a passes the encoder's attention_mask, an
 * int64 [B, P], and cache_position): "padding" and "cross" convert that mask (.to(dtype): a copy, no
 * ones); "causal" is the decoder's at one query: T5Stack.forward's ones(B, past + 1) (float32), no arange
 * (cache_position given), full((1, past + 1), min), no triu (sequence_length 1), the rest as above with
 * the key length past + 1 (the self-attention cache after this step's update). */
enum { MASK_PADDING, MASK_CAUSAL, MASK_CROSS };
static const char *const mask_names[] = {"padding", "causal", "cross", NULL};

typedef struct {
    int mask;
    bool keep_ones; /* MPNetModel.forward (src/hf/hf_mpnet.c): attention_mask = torch.ones(input_shape), its local */
} sm_cfg;

static int sm_parse(vc_args *a, void *p)
{
    sm_cfg *c = p;
    return vc_arg_enum(a, "mask", mask_names, -1, &c->mask) || vc_arg_bool(a, "keep_ones", false, &c->keep_ones);
}

static int sm_setup(vc_setup *s, void *p)
{
    const sm_cfg *c = p;
    if (s->in[0].nd != 2) return vc_fail(s, NULL, "expected [seq, d_model]");
    int64_t k = s->in[0].d[0], d[2] = {c->mask == MASK_CAUSAL ? k : 1, k}, t;
    if (vc_mul(s, d[0], d[1], &t)) return -1;
    s->out = vc_shape_make(2, d);
    return 0;
}

static vc_t ng(vc_build *b, const char *name, vc_t x, vc_t y, vc_numel n, vc_dtype dt)
{
    return vc__op_nograd(b, name, x, y, n, dt);
}

static void sm_emit(vc_build *b, const void *p)
{
    const sm_cfg *c = p;
    int64_t k = vc_input_shape(b, 0)->d[0], q = k, past;
    vc_dtype dt = vc_act_dt(b);
    const bool gen = vc_gen_seq2seq(b, &past);
    if (c->mask == MASK_CAUSAL) {
        if (gen) k = past + q;
        const vc_numel qk = vc_n_fixed(q * k);
        vc_t ones = vc__op_new(b, "ones", vc_n_sample(k), VC_DT_F32);
        vc_t pos = gen ? -1 : vc__op_new(b, "arange", vc_n_fixed(q), VC_DT_I64); /* cache_position */
        vc_t full = vc__op_new(b, "full", qk, dt);
        vc_t tri = q > 1 || !gen ? ng(b, "triu", full, -1, qk, dt) : full;
        vc_t ar = vc__op_new(b, "arange", vc_n_fixed(k), VC_DT_I64);
        vc_t gt = ng(b, "gt", ar, pos, qk, VC_DT_BOOL);
        vc_op *o = vc_op_begin(b, "mul_");
        int it = vc_op_in_nodiff(o, tri);
        vc_op_in_nodiff(o, gt);
        tri = vc_op_out_view(o, it, qk, true);
        vc_op_end(o);
        vc_t cm = ng(b, "clone", tri, -1, vc_n_sample(q * k), dt); /* expand(B, 1, -1, -1).clone() */
        vc_t pad = ng(b, "add", cm, ones, vc_n_sample(q * k), VC_DT_F32);
        vc_t eq = ng(b, "eq", pad, -1, vc_n_sample(q * k), VC_DT_BOOL);
        vc_t mf = ng(b, "masked_fill", cm, eq, vc_n_sample(q * k), dt);
        o = vc_op_begin(b, "copy_");
        int ic = vc_op_in_nodiff(o, cm);
        vc_op_in_nodiff(o, mf);
        vc_set_output(b, vc_op_out_view(o, ic, vc_n_sample(q * k), true));
        vc_op_end(o);
        return;
    }
    vc_t ones = gen ? -1 : vc__op_new(b, "ones", vc_n_sample(k), c->mask == MASK_CROSS ? VC_DT_I64 : VC_DT_F32);
    vc_t m = ones;
    if (c->keep_ones && ones >= 0) vc_keep_forward(b, ones); /* until the model's forward returns */
    if (gen || c->mask == MASK_CROSS || dt != VC_DT_F32) m = ng(b, "_to_copy", ones, -1, vc_n_sample(k), dt);
    vc_t inv = ng(b, "rsub", m, -1, vc_n_sample(k), dt);
    vc_set_output(b, ng(b, "mul", inv, -1, vc_n_sample(k), dt));
}

const vc_kind vc_kind_T5StackMask = {
    .ops = 12,
    .name = "T5StackMask", .summary = "the additive mask a T5Stack prepares: padding, causal or the inverted encoder mask",
    .min_inputs = 1, .max_inputs = 1, .cfg_size = sizeof(sm_cfg),
    .parse = sm_parse, .setup = sm_setup, .emit = sm_emit,
};

/* ---- T5PositionBias ----
 * What T5Attention.forward makes when position_bias is None (the first block of a T5Stack;
 * every later block gets it back from the one before, T5Stack.forward: position_bias =
 * layer_outputs[2]), from the mask T5Stack.forward prepared (T5StackMask):
 *  - buckets > 0 (has_relative_attention_bias): compute_bias(query_length, key_length):
 *    arange(q)[:, None], arange(k)[None, :], relative_position = memory - context,
 *    _relative_position_bucket (bidirectional in the encoder), relative_attention_bias(bucket)
 *    [q, k, heads], permute([2, 0, 1]).unsqueeze(0), [:, :, -q:, :] (views);
 *  - buckets 0 (the cross-attention, no relative bias): torch.zeros((1, heads, q, k)); "requires_grad"
 *    (src/hf/hf_t5.c under checkpointing): `if self.gradient_checkpointing and self.training:
 *    position_bias.requires_grad = True`, a leaf (vc_op_leaf_grad; src/engine/autograd.c fwd_op keeps
 *    the forward's, inside block 0's checkpoint, until backward ends, the recompute's to its stop);
 *  - position_bias + causal_mask: [B, heads, q, k].
 * Inputs: the query side's states [q, d_model], the key side's [k, d_model], the mask.
 * Under generate() (vc_gen_seq2seq) the decoder's bias is compute_bias(cache_position[-1] + 1, key_length,
 * cache_position=cache_position) over the self-attention cache after this step's update: context_position
 * = cache_position[:, None] (a view: no arange), key_length = past + q.
 * "expand" (src/hf/hf_mpnet.c): MPNetEncoder.compute_position_bias (modeling_mpnet.py @ 00099b9f), two
 * inputs (the states, twice), no mask: torch.arange(qlen, dtype=torch.long) and the bucket arithmetic of
 * relative_position_bucket run on the CPU (arange without a device), rp_bucket.to(x.device) is the one
 * [q, k] int64 tensor on the GPU; values = self.relative_attention_bias(rp_bucket) [q, k, heads],
 * permute([2, 0, 1]).unsqueeze(0) (views), .expand((bsz, -1, qlen, klen)).contiguous(): the [B, heads, q, k]
 * copy every MPNetLayer adds to its scores. */
typedef struct {
    int64_t heads, buckets, max_distance;
    bool bidirectional, leaf, expand;
} pb_cfg;

static int pb_parse(vc_args *a, void *p)
{
    pb_cfg *c = p;
    return vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->heads) || vc_arg_int(a, "num_buckets", 0, 0, &c->buckets) ||
           vc_arg_int(a, "max_distance", 128, 1, &c->max_distance) || vc_arg_bool(a, "bidirectional", false, &c->bidirectional) ||
           vc_arg_bool(a, "requires_grad", false, &c->leaf) || vc_arg_bool(a, "expand", false, &c->expand);
}

static int pb_setup(vc_setup *s, void *p)
{
    const pb_cfg *c = p;
    if (s->in[0].nd != 2 || s->in[1].nd != 2) return vc_fail(s, NULL, "expected [seq, d_model] states as inputs 0 and 1");
    int64_t q = s->in[0].d[0], k = s->in[1].d[0], d[3] = {c->heads, q, k}, t;
    if (c->expand != (s->nin == 2))
        return vc_fail(s, NULL, c->expand ? "\"expand\" takes two inputs (no mask)" : "expected a mask as input 2");
    if (c->expand && c->buckets < 1) return vc_fail(s, "num_buckets", "\"expand\" needs the bucket table (num_buckets)");
    const vc_shape *m = &s->in[2];
    if (!c->expand && (m->nd != 2 || m->d[1] != k || (m->d[0] != 1 && m->d[0] != q)))
        return vc_fail(s, NULL, "the mask must be [1, %lld] or [%lld, %lld]", (long long)k, (long long)q, (long long)k);
    if (vc_mul(s, c->heads, q, &t) || vc_mul(s, t, k, &t)) return -1;
    if (t > (INT64_C(1) << 56)) return vc_fail(s, NULL, "the bias would have more than 2^56 elements per sample");
    s->out = vc_shape_make(3, d);
    if (c->buckets > 0) return vc_param2(s, "weight", c->buckets, c->heads); /* nn.Embedding(num_buckets, n_heads) */
    return 0;
}

static void pb_emit(vc_build *b, const void *p)
{
    const pb_cfg *c = p;
    int64_t q = vc_input_shape(b, 0)->d[0], k = vc_input_shape(b, 1)->d[0], past;
    const int64_t H = c->heads;
    const bool gen = c->buckets > 0 && !c->bidirectional && vc_gen_seq2seq(b, &past); /* the decoder's, generating */
    if (gen) k = past + q;
    vc_dtype dt = vc_act_dt(b);
    const vc_numel qk = vc_n_fixed(q * k);
    vc_t mask = c->expand ? -1 : vc_input(b, 2), bias;
    if (c->expand) { /* MPNet: the buckets made on the host, copied to the device (rp_bucket.to(x.device)) */
        vc_t bucket = vc__op_new(b, "_to_copy", qk, VC_DT_I64);
        vc_op *o = vc_op_begin(b, "embedding");
        vc_op_in(o, vc_weight(b, 0));
        vc_op_in_nodiff(o, bucket);
        vc_t val = vc_op_out(o, vc_n_fixed(q * k * H), vc_param_dt(b));
        vc_op_save(o, bucket);
        vc_op_end(o);
        vc_t v = vc__op_view(b, val, vc_n_fixed(q * k * H), false); /* permute, unsqueeze, expand */
        vc_set_output(b, vc__op_fresh(b, "clone", v, vc_n_sample(H * q * k))); /* .contiguous() */
        return;
    }
    if (c->buckets > 0) {
        /* compute_bias and _relative_position_bucket: int64 [q, k] tensors on constants */
        vc_t ctx = gen ? -1 : vc__op_new(b, "arange", vc_n_fixed(q), VC_DT_I64);
        vc_t mem = vc__op_new(b, "arange", vc_n_fixed(k), VC_DT_I64);
        vc_t rp = ng(b, "sub", mem, ctx, qk, VC_DT_I64);
        const vc_t rp0 = rp; /* compute_bias's relative_position: alive until compute_bias returns, as ctx and mem */
        vc_t rb = -1;
        if (c->bidirectional) {
            vc_t gt = ng(b, "gt", rp, -1, qk, VC_DT_BOOL);
            vc_t gl = ng(b, "_to_copy", gt, -1, qk, VC_DT_I64);
            rb = ng(b, "mul", gl, -1, qk, VC_DT_I64); /* * num_buckets */
            rb = ng(b, "add", rb, -1, qk, VC_DT_I64); /* relative_buckets (0) += : a new tensor */
            rp = ng(b, "abs", rp, -1, qk, VC_DT_I64);
        } else {
            vc_t z = ng(b, "zeros_like", rp, -1, qk, VC_DT_I64);
            vc_t mn = ng(b, "minimum", rp, z, qk, VC_DT_I64);
            rp = ng(b, "neg", mn, -1, qk, VC_DT_I64);
        }
        vc_t small = ng(b, "lt", rp, -1, qk, VC_DT_BOOL);
        vc_t f = ng(b, "_to_copy", rp, -1, qk, VC_DT_F32); /* relative_position.float() */
        f = ng(b, "div", f, -1, qk, VC_DT_F32);
        f = ng(b, "log", f, -1, qk, VC_DT_F32);
        f = ng(b, "div", f, -1, qk, VC_DT_F32);
        f = ng(b, "mul", f, -1, qk, VC_DT_F32); /* log_ratio: a local of _relative_position_bucket */
        vc_t large = ng(b, "_to_copy", f, -1, qk, VC_DT_I64);
        large = ng(b, "add", large, -1, qk, VC_DT_I64); /* max_exact + (...) */
        vc_t fl = ng(b, "full_like", large, -1, qk, VC_DT_I64);
        large = ng(b, "minimum", large, fl, qk, VC_DT_I64);
        vc_t wh = ng(b, "where", small, large, qk, VC_DT_I64);
        vc_t bucket;
        if (rb >= 0) { /* relative_buckets += torch.where(...): in place */
            vc_op *o = vc_op_begin(b, "add_");
            int ib = vc_op_in_nodiff(o, rb);
            vc_op_in_nodiff(o, wh);
            bucket = vc_op_out_view(o, ib, qk, true);
            vc_op_end(o);
        } else {
            bucket = ng(b, "add", wh, -1, qk, VC_DT_I64); /* 0 + where(...): a new tensor */
        }
        /* _relative_position_bucket returns: its locals relative_position (abs or -min) and log_ratio die
         * now, not at their last use */
        vc_keep_to_here(b, rp);
        vc_keep_to_here(b, f);
        /* values = self.relative_attention_bias(relative_position_bucket): embedding keeps the indices */
        vc_op *o = vc_op_begin(b, "embedding");
        vc_op_in(o, vc_weight(b, 0));
        vc_op_in_nodiff(o, bucket);
        vc_t val = vc_op_out(o, vc_n_fixed(q * k * H), vc_param_dt(b));
        vc_op_save(o, bucket);
        vc_op_end(o);
        /* compute_bias returns: context_position, memory_position and relative_position die now */
        vc_keep_to_here(b, ctx);
        vc_keep_to_here(b, mem);
        vc_keep_to_here(b, rp0);
        bias = vc__op_view(b, val, vc_n_fixed(q * k * H), false); /* permute, unsqueeze, [:, :, -q:, :] */
    } else {
        /* "requires_grad": T5Attention.forward's position_bias.requires_grad = True when
         * self.gradient_checkpointing and self.training: a leaf whose AccumulateGrad node keeps it and
         * its .grad (the [B, heads, q, k] gradient summed to [1, heads, q, k]) until the graph is freed */
        vc_op *o = vc_op_begin(b, "zeros");
        if (c->leaf && vc_training(b)) vc_op_leaf_grad(o);
        bias = vc_op_out(o, vc_n_fixed(H * q * k), dt);
        if (c->leaf && vc_training(b)) vc_op_save(o, bias);
        vc_op_end(o);
    }
    /* position_bias = position_bias + causal_mask: [B, heads, q, k] */
    vc_set_output(b, vc__op_add(b, bias, mask, vc_n_sample(H * q * k), false));
}

const vc_kind vc_kind_T5PositionBias = {
    .ops = 23,
    .name = "T5PositionBias", .summary = "T5's relative position bias (or zeros) plus its stack's mask, shared by its blocks",
    .min_inputs = 2, .max_inputs = 3, .cfg_size = sizeof(pb_cfg),
    .parse = pb_parse, .setup = pb_setup, .emit = pb_emit,
};

/* ---- T5Return: a T5 module's forward returns ----
 * Its output is input 0 (what the module returns, a view); the other inputs are the locals
 * that live until it returns, released here: T5Stack.forward's inputs_embeds, masks,
 * position_bias and encoder_decoder_position_bias; T5Block.forward's input (T5Stack's
 * hidden_states until layer_outputs rebinds it) and its sub-layers' outputs (the
 * self_attention_outputs / cross_attention_outputs tuples); T5Attention.forward's
 * query/key/value states and the normed states its caller holds; T5LayerFF.forward's
 * forwarded_states (the norm's output until DenseReluDense's result rebinds it). "keep_forward":
 * the output lives until the model's forward returns: T5ForConditionalGeneration.forward keeps
 * encoder_outputs (its last_hidden_state) to the end, as Seq2SeqLMOutput.encoder_last_hidden_state. */
typedef struct {
    bool keep; /* the output lives until the model's forward returns (T5ForConditionalGeneration's encoder_outputs) */
} se_cfg;

static int se_parse(vc_args *a, void *p) { return vc_arg_bool(a, "keep_forward", false, &((se_cfg *)p)->keep); }

static int se_setup(vc_setup *s, void *p)
{
    (void)p;
    s->out = s->in[0];
    return 0;
}

static void se_emit(vc_build *b, const void *p)
{
    vc_t x = vc_input(b, 0);
    vc_t y = vc__op_view(b, x, vc_numel_of(b, x), true);
    if (((const se_cfg *)p)->keep) vc_keep_forward(b, y);
    vc_set_output(b, y);
}

const vc_kind vc_kind_T5Return = {
    .ops = 1,
    .name = "T5Return", .summary = "a T5 module's return: its output (input 0), the locals it held (inputs 1..) released",
    .min_inputs = 1, .max_inputs = 8, .cfg_size = sizeof(se_cfg),
    .parse = se_parse, .setup = se_setup, .emit = se_emit,
};

/* ---- T5Attention: the core of T5Attention.forward from the projections to self.o ----
 *   query_states = self.q(hidden_states).view(B, -1, n_heads, d_kv).transpose(1, 2)   (likewise k, v;
 *       the cross-attention's on key_value_states, the encoder's output)
 *   past_key_value.update(key_states, value_states, layer_idx): with use_cache (the decoder's
 *       EncoderDecoderCache, made when config.use_cache: DynamicCache.update's first update keeps
 *       key_states itself): the cache holds them until the model's output is dropped
 *   scores = torch.matmul(query_states, key_states.transpose(3, 2))     (no 1/sqrt(d) scaling)
 *   scores += position_bias_masked                                       (in place)
 *   attn_weights = softmax(scores.float(), dim=-1).type_as(scores)
 *   attn_weights = dropout(attn_weights, p=self.dropout, training=self.training)
 *   attn_output = torch.matmul(attn_weights, value_states)
 *   attn_output.transpose(1, 2).contiguous().view(B, -1, inner_dim)
 * scores and attn_weights are locals of the forward: alive until self.o's output is returned (under
 * no_grad too: measured at batch 1, where no copy of value_states comes between them and the end).
 * matmul folds [B, heads, ., .] to 3-D: the transposed views of [B, L, heads, d] storage are copied
 * (reshape) when their length is above 1 and the batch is not 1, and the copies are what bmm keeps.
 * Under generate() (src/engine/generate.c "Encoder-decoders") the cache is EncoderDecoderCache's:
 * the cross-attention's keys and values of the encoder's output are made at the first step and reused
 * (vc_kv_cross: is_updated), the self-attention's are the DynamicCache's (vc_kv_update_self: the first
 * update keeps the states, later ones torch.cat, a contiguous [B, heads, S, d] that matmul folds without
 * a copy). */
/* MPNetSelfAttention.forward (modeling_mpnet.py @ 00099b9f; src/hf/hf_mpnet.c), the same core with
 * "scale" and "float_softmax" false and the extended mask as input 4:
 *   attention_scores = torch.matmul(q, k.transpose(-1, -2))
 *   attention_scores = attention_scores / math.sqrt(self.attention_head_size)     (a new tensor)
 *   attention_scores += position_bias                                             (in place)
 *   attention_scores = attention_scores + attention_mask                          (a new tensor)
 *   attention_probs = nn.functional.softmax(attention_scores, dim=-1)             (in the scores' dtype)
 *   attention_probs = self.dropout(attention_probs); c = torch.matmul(attention_probs, v)
 * the last attention_scores and attention_probs are the forward's locals until it returns. */
typedef struct {
    int64_t heads, dim;
    double dropout;
    bool cache, scale, float_softmax;
    bool mask; /* set by setup: a fifth input, the extended attention mask */
} ta_cfg;

static int ta_parse(vc_args *a, void *p)
{
    ta_cfg *c = p;
    return vc_arg_int(a, "num_heads", VC_REQUIRED, 1, &c->heads) || vc_arg_int(a, "head_dim", VC_REQUIRED, 1, &c->dim) ||
           vc_arg_float(a, "dropout", 0.0, 0.0, 1.0, &c->dropout) || vc_arg_bool(a, "cache", false, &c->cache) ||
           vc_arg_bool(a, "scale", false, &c->scale) || vc_arg_bool(a, "float_softmax", true, &c->float_softmax);
}

static int ta_setup(vc_setup *s, void *p)
{
    ta_cfg *c = p;
    const int64_t inner = c->heads * c->dim;
    for (int i = 0; i < 3; i++)
        if (s->in[i].nd != 2 || s->in[i].d[1] != inner)
            return vc_fail(s, NULL, "input %d: expected [seq, %lld] (num_heads x head_dim)", i, (long long)inner);
    const int64_t q = s->in[0].d[0], k = s->in[1].d[0];
    if (s->in[2].d[0] != k) return vc_fail(s, NULL, "the keys have %lld rows, the values %lld", (long long)k, (long long)s->in[2].d[0]);
    const vc_shape *pb = &s->in[3];
    if (pb->nd != 3 || pb->d[0] != c->heads || pb->d[1] != q || pb->d[2] != k)
        return vc_fail(s, NULL, "the position bias must be [%lld, %lld, %lld] (heads, queries, keys)", (long long)c->heads,
                       (long long)q, (long long)k);
    if (s->nin == 5 && (s->in[4].nd != 2 || s->in[4].d[1] != k || (s->in[4].d[0] != 1 && s->in[4].d[0] != q)))
        return vc_fail(s, NULL, "the mask (input 4) must be [1, %lld] or [%lld, %lld]", (long long)k, (long long)q, (long long)k);
    c->mask = s->nin == 5;
    s->out = s->in[0];
    return 0;
}

static void ta_emit(vc_build *b, const void *p)
{
    const ta_cfg *c = p;
    const int64_t H = c->heads, D = c->dim, L = vc_input_shape(b, 0)->d[0];
    int64_t S = vc_input_shape(b, 1)->d[0], past;
    vc_t q = vc_input(b, 0), k = vc_input(b, 1), v = vc_input(b, 2), pb = vc_input(b, 3);
    bool cat = false; /* the keys and values are a torch.cat's result (contiguous) */
    vc_t qlen = -1; /* T5Block.forward's query_length=cache_position[-1] + 1, the cross-attention's argument */
    if (vc_gen_seq2seq(b, &past)) { /* use_cache: the decoder's attention is always cached under generate() */
        if (vc_kv_cross(b, 1, &k, &v)) {
            qlen = vc__op_new(b, "add", vc_n_fixed(1), VC_DT_I64);
            vc_hold(b, qlen);
        } else if (c->cache) {
            cat = vc_kv_update_self(b, &k, &v, &S);
        }
    } else if (c->cache) { /* EncoderDecoderCache: the states until the output is dropped */
        vc_keep_forward(b, k);
        vc_keep_forward(b, v);
    }
    q = vc__op_view(b, q, vc_numel_of(b, q), false); /* .view().transpose(1, 2) */
    k = vc__op_view(b, k, vc_numel_of(b, k), false);
    v = vc__op_view(b, v, vc_numel_of(b, v), false);
    /* at batch 1 the [1, heads, ., .] views fold to [heads, ., .] without a copy */
    const bool one = vc_batch_is_one(b);
    vc_t qm = L > 1 && !one ? vc__op_clone(b, q) : q;
    vc_t km = S > 1 && !one && !cat ? vc__op_clone(b, k) : k;
    vc_t w = vc__op_bmm_raw(b, qm, km, vc_n_sample(H * L * S));
    if (c->scale) w = vc__op_fresh(b, "div", w, vc_numel_of(b, w)); /* MPNet: / math.sqrt(head size) */
    w = vc__op_add(b, w, pb, vc_numel_of(b, w), true); /* scores += position_bias_masked */
    if (c->mask) w = vc__op_add(b, w, vc_input(b, 4), vc_numel_of(b, w), false); /* MPNet: + attention_mask */
    const vc_t scores = w;
    vc_hold(b, scores); /* `scores`, a local until the forward returns */
    vc_dtype dt = vc_dt_of(b, w);
    const bool f32 = c->float_softmax && dt != VC_DT_F32;
    if (f32) w = vc__op_cast(b, w, VC_DT_F32); /* scores.float() */
    w = vc__op_softmax(b, w, false);
    if (f32) w = vc__op_cast(b, w, dt); /* .type_as(scores) */
    w = vc__op_dropout(b, w, vc_training(b) ? c->dropout : 0.0);
    const vc_t weights = w;
    vc_hold(b, weights); /* `attn_weights`, a local until the forward returns too */
    vc_t vm = S > 1 && !one && !cat ? vc__op_clone(b, v) : v; /* the second matmul's copy of value_states */
    vc_t o = vc__op_bmm_raw(b, w, vm, vc_n_sample(H * L * D));
    o = vc__op_view(b, o, vc_numel_of(b, o), false); /* transpose(1, 2) */
    o = vc__op_contiguous(b, o);
    vc_set_output(b, vc__op_view(b, o, vc_numel_of(b, o), true));
    vc_release(b, scores);
    vc_release(b, weights);
    vc_release(b, qlen);
}

const vc_kind vc_kind_T5Attention = {
    .ops = 13,
    .name = "T5Attention", .summary = "T5Attention's eager core: q k^T (no scaling) + position bias, fp32 softmax, dropout, x v",
    .min_inputs = 4, .max_inputs = 5, .cfg_size = sizeof(ta_cfg),
    .parse = ta_parse, .setup = ta_setup, .emit = ta_emit,
};

/* ---- T5DecoderIds: the decoder's input ids [target length] ----
 * Training: T5ForConditionalGeneration.forward, labels given and no decoder_input_ids:
 * decoder_input_ids = self._shift_right(labels): input_ids.new_zeros(shape),
 * shifted[..., 1:] = input_ids[..., :-1].clone(), shifted[..., 0] = start, masked_fill_(shifted
 * == -100, pad): a local of the forward until it returns. Inference (no labels): the batch's
 * decoder_input_ids, held by the loop like input_ids. */
typedef struct {
    int64_t len;
    bool mbart; /* modeling_mbart.py's shift_tokens_right (mbart_shift below) */
} di_cfg;

static int di_parse(vc_args *a, void *p)
{
    di_cfg *c = p;
    if (vc_arg_int(a, "length", VC_REQUIRED, 1, &c->len)) return -1;
    return vc_arg_bool(a, "mbart", false, &c->mbart);
}

static int di_setup(vc_setup *s, void *p)
{
    const di_cfg *c = p;
    s->out = vc_shape_make(1, &c->len);
    s->out_dt = VC_DT_I64;
    if (c->mbart) s->ops = 10;
    return 0;
}

/* One in-place op on dst (copy_ / masked_fill_) reading src; returns dst's view. */
static vc_t di_inplace(vc_build *b, const char *name, vc_t dst, vc_t src, int64_t T)
{
    vc_op *o = vc_op_begin(b, name);
    int i = vc_op_in_nodiff(o, dst);
    vc_op_in_nodiff(o, src);
    dst = vc_op_out_view(o, i, vc_n_sample(T), true);
    vc_op_end(o);
    return dst;
}

/* modeling_mbart.py shift_tokens_right(labels, pad) (huggingface/transformers @efa7189c, the same @00b676f8):
 * prev = input_ids.clone(); prev.masked_fill_(prev == -100, pad); index_of_eos = (prev.ne(pad).sum(dim=1) -
 * 1).unsqueeze(-1); decoder_start_tokens = prev.gather(1, index_of_eos).squeeze(); prev[:, 1:] = prev[:, :-1].clone();
 * prev[:, 0] = decoder_start_tokens; index_of_eos and decoder_start_tokens are locals until it returns. */
static vc_t mbart_shift(vc_build *b, int64_t T)
{
    vc_t pv = vc__op_new(b, "clone", vc_n_sample(T), VC_DT_I64);
    pv = di_inplace(b, "masked_fill_", pv, ng(b, "eq", pv, -1, vc_n_sample(T), VC_DT_BOOL), T);
    vc_t ne = ng(b, "ne", pv, -1, vc_n_sample(T), VC_DT_BOOL);
    vc_t sum = ng(b, "sum", ne, -1, vc_n_sample(1), VC_DT_I64);
    vc_t idx = ng(b, "sub", sum, -1, vc_n_sample(1), VC_DT_I64);
    vc_hold(b, idx);
    vc_t st = ng(b, "gather", pv, idx, vc_n_sample(1), VC_DT_I64);
    vc_hold(b, st);
    if (T > 1) pv = di_inplace(b, "copy_", pv, vc__op_new(b, "clone", vc_n_sample(T - 1), VC_DT_I64), T);
    pv = di_inplace(b, "copy_", pv, st, T);
    vc_release(b, idx);
    vc_release(b, st);
    return pv;
}

static void di_emit(vc_build *b, const void *p)
{
    const di_cfg *c = p;
    const int64_t T = c->len;
    if (!vc_training(b)) {
        vc_t ids = vc__op_new(b, "decoder_input_ids", vc_n_sample(T), VC_DT_I64);
        vc_persist(b, ids);
        vc_set_output(b, ids);
        return;
    }
    vc_t sh;
    if (c->mbart) {
        sh = mbart_shift(b, T);
    } else {
        sh = vc__op_new(b, "new_zeros", vc_n_sample(T), VC_DT_I64);
        if (T > 1) sh = di_inplace(b, "copy_", sh, vc__op_new(b, "clone", vc_n_sample(T - 1), VC_DT_I64), T);
        sh = di_inplace(b, "masked_fill_", sh, ng(b, "eq", sh, -1, vc_n_sample(T), VC_DT_BOOL), T);
    }
    vc_keep_forward(b, sh);
    vc_set_output(b, sh);
}

const vc_kind vc_kind_T5DecoderIds = {
    .ops = 5,
    .name = "T5DecoderIds", .summary = "T5's decoder input ids: _shift_right(labels) in training, given in inference",
    .min_inputs = 0, .max_inputs = 0, .flags = VC_KIND_NO_INPUT, .cfg_size = sizeof(di_cfg),
    .parse = di_parse, .setup = di_setup, .emit = di_emit,
};
