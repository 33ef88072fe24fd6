/*
 * kvquant.c — --cache quantized (issue 13; docs/inference.md "Cache formats"):
 * transformers' QuantizedCache with its default backend, optimum-quanto.
 *
 * What it follows:
 *  - transformers generation/utils.py GenerationMixin._prepare_cache_for_generation:
 *    cache_implementation="quantized" builds QuantizedCache(backend=cache_config.pop("backend",
 *    "quanto"), **cache_config); cache_utils.py (transformers@004999d9) QuantizedCache.__init__:
 *    one QuantoQuantizedLayer per decoder layer (no sliding-window layers), defaults nbits 4,
 *    axis_key = axis_value = 0, q_group_size 64, residual_length 128;
 *  - QuantizedLayer.update: the first call quantizes key_states.contiguous() (and the values)
 *    into _quantized_keys and returns key_states as they are; every later call
 *        dequant_keys = _dequantize(_quantized_keys); dequant_values = ...
 *        keys_to_return = cat([dequant_keys, self.keys, key_states], -2)   (values alike)
 *        if self.keys.dim() == 4 and self.keys.shape[-2] + 1 >= residual_length:
 *            _quantized_keys = _quantize(keys_to_return.contiguous()); ... values
 *            self.keys = self.values = torch.tensor([])                   (1-D: not dim 4)
 *        else: self.keys = cat([self.keys, key_states], -2)              (values alike)
 *    so the residual grows from 0 to max(R, 2) - 1 tokens and the step after requantizes
 *    everything (a cycle of C = max(R, 2) steps; step k requantizes when k % C == 0);
 *  - QuantoQuantizedLayer._quantize: MaxOptimizer()(tensor, qint2|qint4, axis, group) then
 *    quantize_weight(tensor, qtype, axis, scale, zeropoint, group) (optimum-quanto@e33f8202):
 *    tensor/optimizers/affine_optimizer.py AffineOptimizer.__call__ group(base, 0, g) (a view:
 *    [numel / g, g]; grouped.py group: g must divide numel / B), max_optimizer.py
 *    MaxOptimizer.optimize: rmin = amin, rmax = amax [G, 1], scale = (rmax - rmin) / (qmax - qmin),
 *    shift = -rmin, both in the tensor's dtype; library/quantize.py quantize_affine:
 *    clamp(round((base + shift) / scale), 0, 2^bits - 1).to(uint8) [G, g];
 *    tensor/weights/qbits.py WeightQBitsTensor.__init__ -> packed.py PackedTensor.pack ->
 *    pack_weights: packed = zeros([ceil(G / (8 / bits)), g], uint8), then for each of the
 *    8 / bits row slices packed[: rows] |= unpacked[slice] << (bits * i) (a temporary each);
 *  - QBitsTensor.dequantize (tensor/qbits.py QBitsDequantizer.forward): data = unpack()
 *    (CUDA: library/extensions/cuda/unpack.cu allocate_output, one uint8 tensor of
 *    rows x 8 / bits rows), dqt = scale * data (the scale's dtype), dqt -= shift, ungroup
 *    (a view); the unpacked bytes are freed as the function returns.
 * Stored per layer, for keys and for values of T tokens (n = B x Hkv x T x head_dim
 * elements, G = n / g groups): ceil(G x bits / 8) x g bytes of data, G scales and G shifts
 * in the model's dtype, plus the residual in the model's dtype.
 */
#include <stdio.h>
#include <string.h>

#include "ops.h"
#include "plan.h"
#include "util.h"

static int64_t cdiv(int64_t a, int64_t c) { return (a + c - 1) / c; }

int64_t vc__kvq_cycle(const vc_options *o) { return o->kv_residual > 2 ? o->kv_residual : 2; }

/* An in-place op on x reading y (packed |= ..., dqt -= shift). */
static void inplace(vc_build *b, const char *name, vc_t x, vc_t y)
{
    vc_op *o = vc_op_begin(b, name);
    int i = vc_op_in_nodiff(o, x);
    vc_op_in_nodiff(o, y);
    vc_op_out_view(o, i, vc_numel_of(b, x), true);
    vc_op_end(o);
}

/* torch.cat of a, c (-1: the empty 1-D tensor, skipped) and d */
static vc_t cat3(vc_build *b, vc_t a, vc_t c, vc_t d, vc_numel n, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, "cat");
    vc_op_in_nodiff(o, a);
    if (c >= 0) vc_op_in_nodiff(o, c);
    vc_op_in_nodiff(o, d);
    vc_t r = vc_op_out(o, n, dt);
    vc_op_end(o);
    return r;
}

/* QuantoQuantizedLayer._quantize of x (n elements per sample, dtype dt) into q[0..2]:
 * the packed data, the scale, the shift. */
static void quantize(vc_build *b, vc_t x, int64_t n, vc_dtype dt, int32_t q[3])
{
    const int64_t g = b->o.kv_group, G = n / g, vpi = 8 / b->o.kv_bits, rows = cdiv(G, vpi);
    vc_numel ng = vc_n_sample(G), nn = vc_n_sample(n);
    /* MaxOptimizer.optimize on group(x): [G, 1] each */
    vc_t rmin = vc__op_nograd(b, "amin", x, -1, ng, dt);
    vc_t rmax = vc__op_nograd(b, "amax", x, -1, ng, dt);
    vc_t d = vc__op_nograd(b, "sub", rmax, rmin, ng, dt);
    vc_t scale = vc__op_nograd(b, "div", d, -1, ng, dt);
    vc_t shift = vc__op_nograd(b, "neg", rmin, -1, ng, dt);
    /* quantize_affine: data = round((base + shift) / scale), a local until it returns
     * clamp(data, 0, 2^bits - 1).to(uint8) */
    vc_t t = vc__op_nograd(b, "add", x, shift, nn, dt);
    t = vc__op_nograd(b, "div", t, scale, nn, dt);
    vc_t data = vc__op_nograd(b, "round", t, -1, nn, dt);
    t = vc__op_nograd(b, "clamp", data, -1, nn, dt);
    vc_t u = vc__op_nograd(b, "_to_copy", t, -1, nn, VC_DT_U8);
    vc__extend_life(b, data);
    /* pack_weights */
    vc_t packed = vc__op_new(b, "zeros", vc_n_sample(rows * g), VC_DT_U8);
    for (int64_t i = 0; i < vpi && i * rows < G; i++) {
        int64_t r = G - i * rows < rows ? G - i * rows : rows;
        vc_t sh = vc__op_nograd(b, "__lshift__", u, -1, vc_n_sample(r * g), VC_DT_U8);
        inplace(b, "__ior__", packed, sh);
    }
    vc__extend_life(b, u); /* WeightsQBitsQuantizer.forward's local: freed as it returns */
    vc__extend_life(b, x); /* _quantize's argument (key_states.contiguous()): until it returns */
    q[0] = packed;
    q[1] = scale;
    q[2] = shift;
}

/* _dequantize(q) of n elements per sample: a new tensor of the scale's dtype. */
static vc_t dequantize(vc_build *b, const int32_t q[3], int64_t n)
{
    const int64_t vpi = 8 / b->o.kv_bits;
    vc_dtype dt = vc_dt_of(b, q[1]);
    vc_t u = vc__op_nograd(b, "unpack", q[0], -1, vc_n_sample(vc_numel_of(b, q[0]).ps * vpi), VC_DT_U8);
    vc_t d = vc__op_nograd(b, "mul", q[1], u, vc_n_sample(n), dt);
    inplace(b, "sub_", d, q[2]);
    vc__extend_life(b, u);
    return d;
}

/* quanto's group(): g must divide the elements of one sequence (axis 0 is the batch) */
static bool group_fits(vc_build *b, int64_t per_token)
{
    const vc_gen *g = &b->gen;
    const int64_t gs = b->o.kv_group, C = vc__kvq_cycle(&b->o), M = g->steps;
    /* requantizations: P + j C tokens, j <= last (after _prefill, generate.c "The prefill": P - 1 + j C, the loop's
     * step k requantizing when (k + 1) % C == 0) */
    int64_t last = M >= 2 || g->shift ? (M - 1 + g->shift) / C : 0;
    for (int64_t j = 0; j <= last && j <= gs; j++) {
        int64_t T = g->prompt - g->shift + j * C, n;
        if (__builtin_mul_overflow(per_token, T, &n) || n < gs || n % gs) {
            b->st = VC_ERR_USAGE;
            b->why_opt = O("kv_group_size");
            snprintf(b->why, sizeof b->why,
                     "quanto groups the %lld elements of a layer's keys per sequence at %lld tokens into groups of %lld "
                     "(optimum-quanto grouped.py group: the group size must divide them)",
                     (long long)n, (long long)T, (long long)gs);
            return false;
        }
    }
    return true;
}

bool vc__kvq_update(vc_build *b, vc_kv_slot *s, vc_t *k, vc_t *v, int64_t *S, int64_t kpt, int64_t vpt, vc_dtype dt)
{
    const int64_t L = b->gen.seq;
    if (s->qlen == 0) { /* the first update: the prompt's states quantized, returned as they are */
        if (!group_fits(b, kpt) || !group_fits(b, vpt)) return false;
        quantize(b, vc__op_contiguous(b, *k), kpt * L, dt, s->q);
        quantize(b, vc__op_contiguous(b, *v), vpt * L, dt, s->q + 3);
        s->qlen = L;
        s->len = 0;
        s->k = s->v = -1;
        s->kpt = kpt;
        s->vpt = vpt;
        b->gen.ret[0] = *k; /* key_states: the attention's locals until it returns (vc_kv_end) */
        b->gen.ret[1] = *v;
        return false;
    }
    const int64_t Q = s->qlen, r = s->len, T = Q + r + L;
    vc_t dk = dequantize(b, s->q, kpt * Q), dv = dequantize(b, s->q + 3, vpt * Q);
    vc_t kr = cat3(b, dk, s->k, *k, vc_n_sample(kpt * T), dt);
    vc_t vr = cat3(b, dv, s->v, *v, vc_n_sample(vpt * T), dt);
    if (s->k >= 0 && r + 1 >= b->o.kv_residual) { /* requantize everything, the residual emptied */
        int32_t old[6];
        memcpy(old, s->q, sizeof old);
        quantize(b, kr, kpt * T, dt, s->q);
        for (int i = 0; i < 3; i++) vc__extend_life(b, old[i]); /* rebound: freed now */
        quantize(b, vr, vpt * T, dt, s->q + 3);
        for (int i = 3; i < 6; i++) vc__extend_life(b, old[i]);
        vc__extend_life(b, s->k);
        vc__extend_life(b, s->v);
        s->k = s->v = -1;
        s->qlen = T;
        s->len = 0;
    } else {
        vc_t nk = vc__op_nograd(b, "cat", s->k, *k, vc_n_sample(kpt * (r + L)), dt);
        vc_t nv = vc__op_nograd(b, "cat", s->v, *v, vc_n_sample(vpt * (r + L)), dt);
        s->k = nk;
        s->v = nv;
        s->len = r + L;
    }
    vc__extend_life(b, dk); /* update()'s locals */
    vc__extend_life(b, dv);
    *k = kr;
    *v = vr;
    b->gen.ret[0] = kr; /* keys_to_return: the attention's key_states until it returns (vc_kv_end) */
    b->gen.ret[1] = vr;
    *S = T;
    return true;
}

/* The cache as it is before decoding step `step` (1-based): the quantized store of
 * P + C floor((step - 1) / C) tokens, a residual of (step - 1) mod C; after _prefill (generate.c "The prefill",
 * shift 1) P - 1 + C floor(step / C) and step mod C. */
void vc__kvq_grow(vc_build *b, vc_kv_slot *s, int64_t step)
{
    const int64_t sh = b->gen.shift, e = step - 1 + sh;
    const int64_t C = vc__kvq_cycle(&b->o), Q = b->gen.prompt - sh + C * (e / C), r = e % C;
    if (s->qlen == 0 || b->st) return;
    if (Q != s->qlen) { /* requantized in between: the new store replaces the old */
        const int64_t gsz = b->o.kv_group, vpi = 8 / b->o.kv_bits;
        for (int i = 0; i < 6; i++) {
            int64_t G = Q * (i < 3 ? s->kpt : s->vpt) / gsz;
            vc_t o = s->q[i];
            s->q[i] = vc__op_nograd(b, "quantize", o, -1, vc_n_sample(i % 3 ? G : cdiv(G, vpi) * gsz), vc_dt_of(b, o));
        }
        s->qlen = Q;
    }
    if (r == s->len) return;
    if (r == 0) {
        s->k = s->v = -1;
    } else {
        s->k = vc__op_nograd(b, "cat", s->k, -1, vc_n_sample(s->kpt * r), vc_dt_of(b, s->q[1]));
        s->v = vc__op_nograd(b, "cat", s->v, -1, vc_n_sample(s->vpt * r), vc_dt_of(b, s->q[4]));
    }
    s->len = r;
}
