/*
 * attention_int.h — what attention.c (MultiheadAttention, Transformer
 * layers, the SDPA kind) and sdpa.c (the scaled_dot_product_attention
 * backends) share: size arithmetic, the physical layouts of [B, H, L, D]
 * tensors, small op helpers and the SDPA call description. Private to
 * layers/.
 */
#ifndef VC_ATTENTION_INT_H
#define VC_ATTENTION_INT_H

#include "ops.h"


static inline bool is_half(vc_dtype dt) { return dt == VC_DT_F16 || dt == VC_DT_BF16; }

static inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
static inline int64_t ceil_div(int64_t x, int64_t m) { return (x + m - 1) / m; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

#define BIG (INT64_C(1) << 60)

static inline int64_t sat_add(int64_t a, int64_t b) { return a > BIG - b ? BIG : a + b; }
static inline int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > BIG) ? BIG : r;
}

/* A merged transient being described (vc_op_ftemp_parts): several tensors
 * that live together inside one kernel call, each rounded to 512 bytes as
 * the caching allocator rounds it, allocated as one block; `alt` numbers
 * phases of the call that follow one another (the block is the largest). */
typedef struct {
    int n;
    vc_part p[VC_MAX_PARTS];
} tparts;

static inline void tp_add(tparts *t, vc_numel n, vc_dtype dt, int alt)
{
    if (t->n < VC_MAX_PARTS) t->p[t->n++] = (vc_part){n, dt, alt, 1, 1};
}

/* f(g, vc_batch(b)), declaring the batches over which f keeps that value
 * (vc_batch_range): f is constant above `flat`; at and below it, the run of
 * equal values around the batch is scanned (flat is small: a heuristic's
 * threshold of a few hundred (batch x heads) blocks). */
typedef struct sdpa_s sdpa_t;
typedef int64_t (*batch_fn)(vc_build *b, const sdpa_t *g, int64_t batch);
static inline int64_t batch_const(vc_build *b, const sdpa_t *g, batch_fn f, int64_t flat)
{
    const int64_t n = vc_batch(b), v = f(b, g, n);
    int64_t lo = n, hi = n;
    if (n > flat) {
        lo = flat + 1;
        hi = VC_BATCH_ANY;
    } else {
        while (hi < flat && f(b, g, hi + 1) == v) hi++;
        if (hi == flat && f(b, g, flat + 1) == v) hi = VC_BATCH_ANY;
    }
    while (lo > 1 && f(b, g, lo - 1) == v) lo--;
    vc_batch_range(b, lo, hi);
    return v;
}

/* ------------------------------------------------------------ layouts */

/* The logical dims of an attention tensor [B, H, L, D] and the physical
 * orders (outermost first) the tensors of this file come in. */
enum { DB, DH, DL, DD };
enum { LAY_BHLD, LAY_BLHD, LAY_LBHD };
static const int lay_order[3][4] = {{DB, DH, DL, DD}, {DB, DL, DH, DD}, {DL, DB, DH, DD}};

/* The physical order of `lay` without its size-1 dims. */
static inline int lay_strip(int lay, const int64_t sz[4], int out[4])
{
    int n = 0;
    for (int i = 0; i < 4; i++)
        if (sz[lay_order[lay][i]] != 1) out[n++] = lay_order[lay][i];
    return n;
}

/* Is a dense tensor stored in `lay` contiguous when viewed in the logical
 * order `want` (size-1 dims do not count, as in is_contiguous())? */
static inline bool lay_contig(int lay, const int64_t sz[4], const int want[4])
{
    int a[4], w[4], n = lay_strip(lay, sz, a), m = 0;
    for (int i = 0; i < 4; i++)
        if (sz[want[i]] != 1) w[m++] = want[i];
    if (n != m) return false;
    for (int i = 0; i < n; i++)
        if (a[i] != w[i]) return false;
    return true;
}

static const int ORD_BHLD[4] = {DB, DH, DL, DD};
static const int ORD_BLHD[4] = {DB, DL, DH, DD};
static const int ORD_LBHD[4] = {DL, DB, DH, DD};

/* Can dims outer and inner (adjacent in the logical shape) be merged by a
 * view (stride[outer] == size[inner] * stride[inner])? */
static inline bool lay_merge(int lay, const int64_t sz[4], int outer, int inner)
{
    if (sz[outer] == 1 || sz[inner] == 1) return true;
    int a[4], n = lay_strip(lay, sz, a);
    for (int i = 0; i + 1 < n; i++)
        if (a[i] == outer) return a[i + 1] == inner;
    return false;
}

/* reshape() of a non-viewable tensor: clone + _unsafe_view (grad passes). */
static inline vc_t copy_op(vc_build *b, vc_t x) { return vc__op_clone(b, x); }

/* x * python_scalar (mul.Scalar): a new tensor, nothing saved; backward
 * grad * scalar (a new tensor of x's size). */
static inline vc_t mul_scalar(vc_build *b, vc_t x) { return vc__op_fresh(b, "mul", x, vc_numel_of(b, x)); }

/* A new tensor computed from x without a gradient (masks). */
static inline vc_t nodiff(vc_build *b, const char *name, vc_t x, vc_numel n, vc_dtype dt)
{
    vc_op *o = vc_op_begin(b, name);
    if (x >= 0) vc_op_in_nodiff(o, x);
    vc_t y = vc_op_out(o, n, dt);
    vc_op_end(o);
    return y;
}

/* ------------------------------------------------------------ SDPA */

enum { BK_MATH, BK_FLASH, BK_EFFICIENT };

struct sdpa_s {
    int64_t N, H, L, S, D, Dv; /* batch, heads (product of leading dims), lengths, head dims */
    bool fused;                 /* 4-D tensors: flash / efficient may run */
    int lq, lk, lv;             /* physical layouts of q, k, v */
    int lgrad;                  /* layout the output gradient arrives in; -1: the output's */
    bool fold_q, fold_k, fold_v;/* math: matmul's reshape to 3-D copies */
    double p;                   /* dropout (0 when not training) */
    bool causal;
    int backend;
    int lout;                   /* set by the backend: the output's physical layout */
    int64_t Hkv;                /* kv heads when fewer than H (enable_gqa, flash only); 0 otherwise */
    bool gqa_inside;            /* math with enable_gqa: k and v have Hkv heads, repeated inside */
    bool gqa_bcast;             /* math without enable_gqa: k and v broadcast by each matmul (FalconAttention) */
    bool masked;                /* a float attn_mask is passed (vc_sdpa_args.masked): not flash */
    vc_t mask;                  /* that mask (the memory-efficient kernel saves it for backward) */
    int64_t varlen;             /* flash: flash-attn's varlen kernel over this many packed sequences; 0 none */
    int64_t mask_ld;            /* vc_sdpa_args.mask_ld: the mask's row stride when a batch-shared view, 0 none */
};

/* The backend scaled_dot_product_attention picks for g (sdpa.c, §4.4). */
int vc_sdpa_pick(vc_build *b, const sdpa_t *g, vc_dtype dt);
/* The chosen backend's op (math, flash or memory-efficient); sets g->lout. */
vc_t vc_sdpa_run(vc_build *b, vc_t q, vc_t k, vc_t v, sdpa_t *g);

#endif
