/*
 * compile.c — --compile: what torch.compile (the inductor backend, default mode)
 * changes in the step's memory, decided per op of the recorded graph
 * (docs/autograd.md §13 "torch.compile"):
 *
 *  1. AOTAutograd's min-cut partitioner chooses which forward values are saved
 *     for backward and which the backward recomputes
 *     (torch/_functorch/partitioners.py @ c28ba8e5 solve_min_cut with
 *     get_default_op_list; functorch 1.13's min_cut_rematerialization_partition
 *     for VC_COMPILE_FUNCTORCH_113): a flow graph over the forward values (one
 *     node per tensor, its capacity the tensor's bytes times 1.1^dist_from_bw,
 *     doubled when all its users are fusible), inputs and banned values joined
 *     to the source, the values backward uses to the sink; the minimum cut is
 *     the saved set. Each op's saved tensors become the cut values its backward
 *     recomputes them from (collect).
 *  2. Inductor fuses pointwise ops: a value whose producer and users are all
 *     fusible, that is not saved nor an output, is a fused kernel's local and
 *     is never allocated (forward); a gradient passed between two fusible
 *     ops' backwards likewise (backward). The fused ops' own eager transients
 *     go with their eager kernels.
 *  3. Not changed: parameters, gradients, optimizer state, the ops inductor
 *     calls as extern kernels (matmuls, convolutions, attention kernels), and
 *     their workspaces. Not modelled: graph breaks, dynamic shapes, custom
 *     kernels, inductor's peak-memory reordering (torch/_inductor/memory.py)
 *     and its buffer reuse inside a graph.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

/* An op's class for the partitioner and inductor's fusion. */
enum {
    CL_EXTERN,  /* not in the recomputable list: banned from recompute, an extern kernel (not fusible) */
    CL_POINT,   /* recomputable and fusible: pointwise ops, reductions, casts, copies */
    CL_DECOMP,  /* decomposed into recomputable ops by inductor's decomposition table before partitioning */
    CL_VIEW,    /* a view op (or an in-place op: functionalized into its out-of-place form) */
    CL_RANDOM,  /* random_ops: banned from recompute, fusible */
    CL_CAT,     /* aten.cat: fusible as a user ("memory fusion into a cat"), banned and not fusible as a producer */
};

/* torch/_functorch/partitioners.py @ c28ba8e5, get_default_op_list: default_recomputable_ops
 * (and pointwise_ops(): every aten op tagged pointwise) under the engine's op names */
static const char *const point_ops[] = {
    "add", "add_", "sub", "rsub", "div", "div_", "mul", "mul_", "pow", "neg", "abs", "exp", "log", "rsqrt", "sqrt",
    "tanh", "sigmoid", "silu", "gelu", "relu", "relu_", "softplus", "clamp", "clamp_min", "where", "eq", "ne",
    "remainder", "round", "bitwise_not", "logical_not", "masked_fill", "__lshift__", "triu", "tril", "cos+sin",
    "sum", "mean", "amax", "amin", "max", "_to_copy", "to", "clone", "contiguous", "copy_", "arange", "zeros",
    "zeros_like", "ones", "new_zeros", "new_ones", "empty", "scalar_tensor", "argmax", "index", "gather",
    "expand", "expand_reshape", "repeat_kv", NULL};
/* torch/_inductor/decomposition.py (with torch/_decomp's core aten decompositions): the norms
 * and softmaxes the joint graph holds as var_mean / amax / exp / sum / mul ... */
static const char *const decomp_ops[] = {"native_layer_norm", "_softmax", "_softmax.out", "softmax", "_safe_softmax",
                                         "_log_softmax", "log_softmax", NULL};
/* VC_COMPILE_FUNCTORCH_113 uses the same table: the reference models' ops
 * (bench/accuracy/compile_partition.py) are in both lists but for the views 1.13's lacks
 * (_reshape_alias, t, transpose: should_ban) */

static bool in_list(const char *const *l, const char *s)
{
    for (int i = 0; s && l[i]; i++)
        if (!strcmp(l[i], s)) return true;
    return false;
}

static int op_class(const vc_build *b, int32_t k)
{
    const op_t *op = &b->op[k];
    const item_t *its = &b->it[op->it0];
    int nout = 0, nview = 0;
    bool temps = false;
    for (int32_t i = 0; i < op->nit; i++) {
        if (its[i].type == IT_OUT) {
            nout++;
            nview += b->t[its[i].t].base >= 0;
        }
        temps |= its[i].type == IT_FTEMP;
    }
    if (op->name && !strcmp(op->name, "native_dropout")) return CL_RANDOM;
    if (op->name && !strcmp(op->name, "cat")) return CL_CAT;
    if (in_list(decomp_ops, op->name)) return CL_DECOMP;
    if (in_list(point_ops, op->name)) return nout && nview == nout ? CL_VIEW : CL_POINT;
    if (nout && nview == nout && !temps) return CL_VIEW; /* reshape, permute, select, split, ...: no storage */
    return CL_EXTERN;
}

static bool fusible(int c) { return c != CL_EXTERN && c != CL_CAT; }
static bool recomputable(int c) { return c == CL_POINT || c == CL_DECOMP || c == CL_VIEW; }

/* ------------------------------------------------------------ max flow (Dinic) */

#define CAP_INF (INT64_MAX / 4)

typedef struct {
    int32_t *head, *next, *to;
    int64_t *cap;
    size_t ne, ce;
    int32_t nv;
    int32_t *level, *iter, *queue;
} flow_t;

static bool edge(flow_t *f, int32_t u, int32_t v, int64_t c)
{
    if (f->ne + 2 > f->ce) {
        size_t nc = f->ce ? 2 * f->ce : 1024;
        int32_t *nx = realloc(f->next, nc * sizeof *nx);
        if (nx) f->next = nx;
        int32_t *nt = realloc(f->to, nc * sizeof *nt);
        if (nt) f->to = nt;
        int64_t *ncap = realloc(f->cap, nc * sizeof *ncap);
        if (ncap) f->cap = ncap;
        if (!nx || !nt || !ncap) return false;
        f->ce = nc;
    }
    int32_t e = (int32_t)f->ne;
    f->to[e] = v, f->cap[e] = c, f->next[e] = f->head[u], f->head[u] = e;
    f->to[e + 1] = u, f->cap[e + 1] = 0, f->next[e + 1] = f->head[v], f->head[v] = e + 1;
    f->ne += 2;
    return true;
}

static bool bfs(flow_t *f, int32_t s, int32_t t)
{
    for (int32_t v = 0; v < f->nv; v++) f->level[v] = -1;
    int32_t qh = 0, qt = 0;
    f->level[s] = 0;
    f->queue[qt++] = s;
    while (qh < qt) {
        int32_t u = f->queue[qh++];
        for (int32_t e = f->head[u]; e >= 0; e = f->next[e])
            if (f->cap[e] > 0 && f->level[f->to[e]] < 0) {
                f->level[f->to[e]] = f->level[u] + 1;
                f->queue[qt++] = f->to[e];
            }
    }
    return f->level[t] >= 0;
}

/* one blocking-flow path, iteratively (graphs of a whole model are deep) */
static int64_t augment(flow_t *f, int32_t s, int32_t t, int32_t *path)
{
    int32_t depth = 0, u = s;
    while (true) {
        if (u == t) {
            int64_t push = CAP_INF;
            for (int32_t i = 0; i < depth; i++)
                if (f->cap[path[i]] < push) push = f->cap[path[i]];
            for (int32_t i = 0; i < depth; i++) {
                f->cap[path[i]] -= push;
                f->cap[path[i] ^ 1] += push;
            }
            return push;
        }
        int32_t e;
        for (e = f->iter[u]; e >= 0; e = f->next[e])
            if (f->cap[e] > 0 && f->level[f->to[e]] == f->level[u] + 1) break;
        f->iter[u] = e;
        if (e >= 0) {
            path[depth++] = e;
            u = f->to[e];
            continue;
        }
        if (depth == 0) return 0;
        f->level[u] = -1; /* dead end */
        u = f->to[path[--depth] ^ 1];
        f->iter[u] = f->next[f->iter[u]];
    }
}

static void max_flow(flow_t *f, int32_t s, int32_t t, int32_t *path)
{
    while (bfs(f, s, t)) {
        memcpy(f->iter, f->head, (size_t)f->nv * sizeof *f->iter);
        while (augment(f, s, t, path) > 0) {}
    }
}

/* ------------------------------------------------------------ the partition */

static int64_t raw_bytes(const vc_build *b, int32_t t)
{
    int64_t e = vc_n_at(b->t[t].n, b->batch), r;
    if (e < 0 || __builtin_mul_overflow(e, (int64_t)vc_dtype_size((vc_dtype)b->t[t].dt), &r)) return INT64_MAX / 8;
    return r;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/* whether op k's IT_SAVE item i is saved (its condition met, docs/autograd.md §1.1) */
static bool save_on(const vc_build *b, int32_t k, const item_t *it)
{
    if (it->in < 0) return true;
    const item_t *its = &b->it[b->op[k].it0];
    int idx = 0;
    for (int32_t i = 0; i < b->op[k].nit; i++)
        if (its[i].type == IT_IN && idx++ == it->in) return its[i].diff && b->t[its[i].t].rg;
    return false;
}

typedef struct {
    vc_build *b;
    vc_compile *c;
    int32_t *bwd_n;     /* per tensor: backward users (ops saving it) */
    bool *bwd_nonfus;   /* per tensor: a backward user is not fusible */
    bool *fwd_nonfus;   /* per tensor: a forward user is not fusible (cat counts as fusible) */
    int32_t *fwd_n;     /* per tensor: forward users */
    int32_t *dist;      /* dist_from_bw */
    bool *saved;        /* per tensor: in the cut */
    bool *mat_bw;       /* per tensor: is_materialized_backwards */
    bool *mm_bw;        /* per tensor: saved by an mm or bmm (1.13's banned views) */
    bool *ban;          /* per tensor: joined to the source (a primal, or banned from recompute) */
    int32_t *stamp;     /* per tensor: the op whose saves are being collected */
    int32_t *stack;
} part_t_;

static bool is_primal(const vc_build *b, int32_t t) { return b->t[t].op < 0; }

/* is_materialized_backwards (partitioners.py): a backward user of t, or of a view
 * of it (following views), is not fusible; views come after their base, so one pass
 * from the last tensor carries a view's answer to its base */
static void mat_backward(part_t_ *P)
{
    const vc_build *b = P->b;
    for (size_t u = b->nt; u-- > 0;) {
        P->mat_bw[u] = P->mat_bw[u] || P->bwd_nonfus[u];
        int32_t r = b->t[u].base;
        if (P->mat_bw[u] && r >= 0 && b->t[u].op >= 0 && P->c->cls[b->t[u].op] == CL_VIEW) P->mat_bw[r] = true;
    }
}

static bool should_ban(const part_t_ *P, int32_t t)
{
    const vc_build *b = P->b;
    int c = P->c->cls[b->t[t].op];
    bool v113 = b->o.compile == VC_COMPILE_FUNCTORCH_113;
    if (c == CL_VIEW && !v113) return false; /* ban_recomputation_if_allowed: never a view */
    if (!recomputable(c)) return true;       /* ban_recompute_not_in_allowlist */
    if (!v113 && P->mat_bw[t]) return true; /* ban_recompute_materialized_backward */
    /* 1.13: aten's matmul reads an mm's (a Linear without bias on a 3-D input: Linear.cpp's
     * matmul path) and a bmm's saved operands through _reshape_alias, transpose and expand,
     * which 1.13's list lacks: the values those backwards read are banned */
    if (v113 && P->mm_bw[t]) return true;
    /* max_dist_from_bw: 4 under inductor in 1.13; 1000 (off: `dist < 1000 and dist > 1000`) in 2.x */
    if (v113 && P->dist[t] > 4) return true;
    /* ban_recompute_reductions: an output 4x smaller than its inputs */
    const op_t *op = &b->op[b->t[t].op];
    const item_t *its = &b->it[op->it0];
    int64_t in = 0;
    for (int32_t i = 0; i < op->nit; i++)
        if (its[i].type == IT_IN) in = sat_add(in, raw_bytes(b, its[i].t));
    return raw_bytes(b, t) * 4 < in;
}

static int64_t weight(const part_t_ *P, int32_t t)
{
    const vc_build *b = P->b;
    double d = P->dist[t] > 100 ? 100 : P->dist[t] < 1 ? 1 : P->dist[t];
    double w = (double)raw_bytes(b, t) * pow(1.1, d);
    /* is_materialized: a placeholder, or a user it cannot fuse with */
    bool mat = is_primal(b, t) || !fusible(P->c->cls[b->t[t].op]) || P->fwd_nonfus[t] || P->bwd_nonfus[t];
    const double cap = (double)(CAP_INF / 8); /* (past it: saturated, below the infinite edges) */
    return w >= cap ? (int64_t)cap : mat ? (int64_t)w : 2 * (int64_t)w;
}

/* The values op k's backward needs in place of eager's saved tensor t: t when it is
 * saved (or an input), else the saved values it is recomputed from. */
static bool collect(part_t_ *P, int32_t k, int32_t t, int32_t **out, size_t *n, size_t *cap)
{
    vc_build *b = P->b;
    int32_t sp = 0;
    if (P->stamp[t] == k) return true;
    P->stamp[t] = k; /* stamped when pushed: each tensor once per op, the stack within nt */
    P->stack[sp++] = t;
    while (sp > 0) {
        int32_t u = P->stack[--sp];
        if (P->saved[u] || is_primal(b, u)) {
            if (*n == *cap) {
                size_t nc = *cap ? 2 * *cap : 256;
                int32_t *no = realloc(*out, nc * sizeof *no);
                if (!no) return false;
                *out = no;
                *cap = nc;
            }
            (*out)[(*n)++] = u;
            continue;
        }
        const op_t *op = &b->op[b->t[u].op];
        const item_t *its = &b->it[op->it0];
        for (int32_t i = 0; i < op->nit; i++)
            if (its[i].type == IT_IN && P->stamp[its[i].t] != k) {
                P->stamp[its[i].t] = k;
                P->stack[sp++] = its[i].t;
            }
    }
    return true;
}

/* ------------------------------------------------ 2.x's two more bans (solve_min_cut) */

/* the forward users of each tensor: the outputs of the ops that read it (fx's node.users) */
typedef struct {
    int32_t *off, *u;
} users_t;

static bool users_build(const vc_build *b, users_t *U)
{
    size_t nt = b->nt, n = 0;
    U->off = calloc(nt + 2, sizeof *U->off);
    if (!U->off) return false;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < b->nop; k++) {
            const op_t *op = &b->op[k];
            const item_t *its = &b->it[op->it0];
            for (int32_t i = 0; i < op->nit; i++) {
                if (its[i].type != IT_IN) continue;
                for (int32_t j = 0; j < op->nit; j++) {
                    if (its[j].type != IT_OUT) continue;
                    if (pass == 0) U->off[its[i].t + 2]++;
                    else U->u[U->off[its[i].t + 1]++] = its[j].t;
                }
            }
        }
        if (pass == 0) {
            for (size_t t = 0; t < nt; t++) U->off[t + 2] += U->off[t + 1];
            n = (size_t)U->off[nt + 1];
            U->u = malloc((n + 1) * sizeof *U->u);
            if (!U->u) return false;
        }
    }
    return true; /* users of t: u[off[t] .. off[t + 1]) */
}

/* fx's node order in the joint graph: the producing op's (a primal's -1), then the tensor */
static int64_t order_of(const vc_build *b, int32_t t) { return b->t[t].op; }

/* is_fusible(a, b): both fusible ops, or b a cat */
static bool fuse_ab(const part_t_ *P, int32_t a, int32_t u)
{
    const vc_build *b = P->b;
    if (b->t[u].op >= 0 && P->c->cls[b->t[u].op] == CL_CAT) return true;
    return b->t[a].op >= 0 && b->t[u].op >= 0 && fusible(P->c->cls[b->t[a].op]) && fusible(P->c->cls[b->t[u].op]);
}

typedef struct {
    int64_t ord;
    int32_t t;
    bool fus;
} hent;

typedef struct {
    hent *h;
    size_t n, cap;
} heap_t;

static bool hless(const hent *a, const hent *b) { return a->ord != b->ord ? a->ord < b->ord : a->t < b->t; }

static bool hpush(heap_t *H, hent e)
{
    if (H->n == H->cap) {
        size_t nc = H->cap ? 2 * H->cap : 64;
        hent *nh = realloc(H->h, nc * sizeof *nh);
        if (!nh) return false;
        H->h = nh;
        H->cap = nc;
    }
    size_t i = H->n++;
    while (i > 0 && hless(&e, &H->h[(i - 1) / 2])) {
        H->h[i] = H->h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    H->h[i] = e;
    return true;
}

static hent hpop(heap_t *H)
{
    hent top = H->h[0], last = H->h[--H->n];
    size_t i = 0;
    while (2 * i + 1 < H->n) {
        size_t c = 2 * i + 1;
        if (c + 1 < H->n && hless(&H->h[c + 1], &H->h[c])) c++;
        if (!hless(&H->h[c], &last)) break;
        H->h[i] = H->h[c];
        i = c;
    }
    if (H->n) H->h[i] = last;
    return top;
}

/* ban_recomputation_if_allowed: never a view */
static void ban(part_t_ *P, int32_t t)
{
    if (P->b->t[t].op >= 0 && P->c->cls[P->b->t[t].op] != CL_VIEW) P->ban[t] = true;
}

/* the pops one search may make: past it the search stops where it is (a guard for a
 * pathological graph; the source's heap has none) */
#define HEAP_POPS 1000000

/* find_first_unfusible: from the users of a value, in forward order, the first user reached
 * through fusible edges that is itself reached by an unfusible one; max_range if none */
static int64_t first_unfusible(const part_t_ *P, const users_t *U, heap_t *H, int32_t t, int64_t max_range, bool *ok)
{
    H->n = 0;
    for (int32_t j = U->off[t]; j < U->off[t + 1]; j++)
        if (!hpush(H, (hent){order_of(P->b, U->u[j]), U->u[j], true})) return *ok = false, max_range;
    for (long pops = 0; H->n > 0 && pops < HEAP_POPS; pops++) {
        hent e = hpop(H);
        if (!e.fus) return e.ord;
        for (int32_t j = U->off[e.t]; j < U->off[e.t + 1]; j++) {
            int32_t u = U->u[j];
            if (order_of(P->b, u) > max_range) continue;
            if (!hpush(H, (hent){order_of(P->b, u), u, fuse_ab(P, e.t, u)})) return *ok = false, max_range;
        }
    }
    return max_range;
}

/* ban_recompute_used_far_apart and ban_recompute_long_fusible_chains (solve_min_cut @
 * c28ba8e5), over the forward tensors in order: a fusible user of a value that comes after
 * the first unfusible op reached from the value's users is banned (recomputing both near
 * and far users would not fuse); a chain of fusible users reaching more than 100 nodes past
 * its start, where the chain is the only thing left to visit, is cut by banning the node
 * reached there. The engine's ops stand for fx's nodes (its graph has fewer: no weight
 * transposes, views only where the layers record them). */
static bool far_and_chains(part_t_ *P)
{
    const vc_build *b = P->b;
    users_t U = {0};
    heap_t H = {0};
    bool ok = users_build(b, &U), *visited = calloc(b->nt + 1, sizeof *visited);
    ok = ok && visited;
    for (size_t t = 0; ok && t < b->nt; t++) { /* used far apart */
        if (b->t[t].op < 0 || U.off[t] == U.off[t + 1]) continue;
        int64_t max_order = -1;
        for (int32_t j = U.off[t]; j < U.off[t + 1]; j++)
            if (order_of(b, U.u[j]) > max_order) max_order = order_of(b, U.u[j]);
        int64_t first = first_unfusible(P, &U, &H, (int32_t)t, max_order, &ok);
        for (int32_t j = U.off[t]; ok && j < U.off[t + 1]; j++) {
            int32_t u = U.u[j];
            if (order_of(b, u) > first && fuse_ab(P, (int32_t)t, u) && !P->ban[u]) ban(P, u);
        }
    }
    for (size_t s = 0; ok && s < b->nt; s++) { /* long fusible chains */
        if (b->t[s].op < 0) continue;
        int64_t start = order_of(b, (int32_t)s);
        H.n = 0;
        ok = hpush(&H, (hent){start, (int32_t)s, true});
        while (ok && H.n > 0) {
            hent e = hpop(&H);
            if (visited[e.t]) continue;
            visited[e.t] = true;
            if (e.ord > start + 100 && H.n == 0) {
                ban(P, e.t);
                break;
            }
            for (int32_t j = U.off[e.t]; ok && j < U.off[e.t + 1]; j++) {
                int32_t u = U.u[j];
                if (fuse_ab(P, e.t, u) && !P->ban[u]) ok = hpush(&H, (hent){order_of(b, u), u, true});
            }
        }
    }
    free(U.off);
    free(U.u);
    free(H.h);
    free(visited);
    return ok;
}

void vc__compile_free(vc_compile *c)
{
    if (!c) return;
    free(c->cls);
    free(c->fused);
    free(c->gfused);
    free(c->sv_off);
    free(c->sv);
    free(c);
}

static int fail(vc_build *b, const char *why)
{
    b->why_opt = O("compile");
    snprintf(b->why, sizeof b->why, "%s", why);
    return b->st = VC_ERR_USAGE;
}

int vc__compile_plan(vc_build *b)
{
    if (!b->o.compile) return 0;
    if (b->o.compile != VC_COMPILE_INDUCTOR && b->o.compile != VC_COMPILE_FUNCTORCH_113) return fail(b, "invalid value");
    if (b->m->nregions > 0 && b->train)
        return fail(b, "with checkpointed layers (torch.utils.checkpoint inside a compiled graph) is not modelled");
    if (b->o.act_offload || b->o.parallel != VC_PARALLEL_NONE || b->m->stage.on || b->gen.on)
        return fail(b, "is modelled on one GPU, training or " OV("mode", "infer") ": not with a parallel layout, "
                       O("pp") ", " O("act_offload") " or generation");
    vc_batch_dependent(b); /* the cut depends on the sizes: this batch's only */
    size_t nt = b->nt, nop = b->nop;
    vc_compile *c = calloc(1, sizeof *c);
    part_t_ P = {0};
    flow_t f = {0};
    int32_t *path = NULL, *list = NULL;
    size_t nlist = 0, clist = 0;
    b->cmp = c;
    if (!c) return b->st = VC_ERR_NOMEM;
    c->cls = malloc((nop + 1) * sizeof *c->cls);
    c->fused = calloc(nt + 1, sizeof *c->fused);
    c->gfused = calloc(nt + 1, sizeof *c->gfused);
    c->sv_off = calloc(nop + 1, sizeof *c->sv_off);
    P.b = b;
    P.c = c;
    P.bwd_n = calloc(nt + 1, sizeof *P.bwd_n);
    P.fwd_n = calloc(nt + 1, sizeof *P.fwd_n);
    P.bwd_nonfus = calloc(nt + 1, sizeof *P.bwd_nonfus);
    P.fwd_nonfus = calloc(nt + 1, sizeof *P.fwd_nonfus);
    P.dist = malloc((nt + 1) * sizeof *P.dist);
    P.saved = calloc(nt + 1, sizeof *P.saved);
    P.mat_bw = calloc(nt + 1, sizeof *P.mat_bw);
    P.mm_bw = calloc(nt + 1, sizeof *P.mm_bw);
    P.ban = calloc(nt + 1, sizeof *P.ban);
    P.stamp = malloc((nt + 1) * sizeof *P.stamp);
    P.stack = malloc((nt + 1) * sizeof *P.stack);
    int32_t *gedges = calloc(nt + 1, sizeof *gedges);
    int32_t *guser = malloc((nt + 1) * sizeof *guser);
    bool *mat = calloc(nt + 1, sizeof *mat);
    int ok = c->cls && c->fused && c->gfused && c->sv_off && P.bwd_n && P.fwd_n && P.bwd_nonfus && P.fwd_nonfus &&
             P.dist && P.saved && P.mat_bw && P.mm_bw && P.ban && P.stamp && P.stack && gedges && guser && mat;
    if (!ok) goto nomem;
    for (size_t k = 0; k < nop; k++) c->cls[k] = (uint8_t)op_class(b, (int32_t)k);
    for (size_t t = 0; t < nt; t++) {
        P.dist[t] = 1000000000;
        P.stamp[t] = -1;
        guser[t] = -1;
    }
    /* users: forward (inputs) and backward (the ops whose saved tensors they are) */
    for (size_t k = 0; k < nop; k++) {
        const op_t *op = &b->op[k];
        const item_t *its = &b->it[op->it0];
        int cl = c->cls[k];
        for (int32_t i = 0; i < op->nit; i++) {
            const item_t *it = &its[i];
            if (it->type == IT_IN) {
                P.fwd_n[it->t]++;
                if (!fusible(cl) && cl != CL_CAT) P.fwd_nonfus[it->t] = true;
                if (op->rg && it->diff && it->how != VC_GRAD_NONE && it->how != VC_GRAD_UNDEF && b->t[it->t].rg) {
                    gedges[it->t]++;
                    guser[it->t] = (int32_t)k;
                }
            } else if (it->type == IT_SAVE && b->train && op->rg && save_on(b, (int32_t)k, it)) {
                P.bwd_n[it->t]++;
                if (!fusible(cl)) P.bwd_nonfus[it->t] = true;
                if (op->name && (!strcmp(op->name, "mm") || !strncmp(op->name, "bmm", 3))) P.mm_bw[it->t] = true;
                P.dist[it->t] = 1; /* a backward user: dist_from_bw 0, plus one */
            }
        }
    }
    int32_t out_t = b->val_t[b->m->output];
    if (b->loss_t >= 0) P.dist[b->loss_t] = 1; /* the graph's output node */
    if (out_t >= 0 && P.dist[out_t] > 1) P.dist[out_t] = 1;
    for (int32_t k = (int32_t)nop - 1; k >= 0; k--) { /* dist_from_bw, users before producers */
        const op_t *op = &b->op[k];
        const item_t *its = &b->it[op->it0];
        int32_t dmin = 1000000000;
        for (int32_t i = 0; i < op->nit; i++)
            if (its[i].type == IT_OUT && P.dist[its[i].t] < dmin) dmin = P.dist[its[i].t];
        for (int32_t i = 0; i < op->nit && dmin < 1000000000; i++)
            if (its[i].type == IT_IN && P.dist[its[i].t] > dmin + 1) P.dist[its[i].t] = dmin + 1;
    }

    mat_backward(&P);
    if (b->train) {
        for (size_t t = 0; t < nt; t++)
            P.ban[t] = is_primal(b, (int32_t)t) || should_ban(&P, (int32_t)t);
        if (b->o.compile == VC_COMPILE_INDUCTOR && !far_and_chains(&P)) goto nomem;
        /* the flow graph: source 0, sink 1, tensor t's in 2 + 2t, out 3 + 2t */
        f.nv = (int32_t)(2 + 2 * nt);
        f.head = malloc((size_t)f.nv * sizeof *f.head);
        f.level = malloc((size_t)f.nv * sizeof *f.level);
        f.iter = malloc((size_t)f.nv * sizeof *f.iter);
        f.queue = malloc((size_t)f.nv * sizeof *f.queue);
        path = malloc((size_t)f.nv * sizeof *path);
        if (!f.head || !f.level || !f.iter || !f.queue || !path) goto nomem;
        for (int32_t v = 0; v < f.nv; v++) f.head[v] = -1;
        for (size_t t = 0; t < nt; t++) {
            int32_t in = (int32_t)(2 + 2 * t), out = in + 1;
            bool primal = is_primal(b, (int32_t)t);
            if (!primal && P.fwd_n[t] == 0 && P.bwd_n[t] == 0 && (int32_t)t != b->loss_t && (int32_t)t != out_t) continue;
            if (P.bwd_n[t] && !edge(&f, out, 1, CAP_INF)) goto nomem;
            if (P.ban[t] && !edge(&f, 0, in, CAP_INF)) goto nomem;
            if (!edge(&f, in, out, weight(&P, (int32_t)t))) goto nomem;
        }
        for (size_t k = 0; k < nop; k++) {
            const op_t *op = &b->op[k];
            const item_t *its = &b->it[op->it0];
            for (int32_t i = 0; i < op->nit; i++) {
                if (its[i].type != IT_IN) continue;
                for (int32_t j = 0; j < op->nit; j++)
                    if (its[j].type == IT_OUT && !edge(&f, 3 + 2 * its[i].t, 2 + 2 * its[j].t, CAP_INF)) goto nomem;
            }
        }
        max_flow(&f, 0, 1, path);
        (void)bfs(&f, 0, 1); /* reachability from the source in the residual graph (level >= 0) */
        for (size_t t = 0; t < nt; t++)
            P.saved[t] = f.level[2 + 2 * t] >= 0 && f.level[3 + 2 * t] < 0;
        /* each op's saves: the cut values its eager saved tensors come from; ~t: op k's backward
         * (not fusible) materializes the recomputed t */
        for (size_t k = 0; k < nop; k++) {
            const op_t *op = &b->op[k];
            const item_t *its = &b->it[op->it0];
            c->sv_off[k] = (int32_t)nlist;
            if (!op->rg) continue;
            for (int32_t i = 0; i < op->nit; i++) {
                const item_t *it = &its[i];
                if (it->type != IT_SAVE || !save_on(b, (int32_t)k, it)) continue;
                if (!collect(&P, (int32_t)k, it->t, &list, &nlist, &clist)) goto nomem;
                if (!P.saved[it->t] && !is_primal(b, it->t) && !fusible(c->cls[k])) {
                    if (nlist == clist) {
                        size_t nc = 2 * clist + 16;
                        int32_t *no = realloc(list, nc * sizeof *no);
                        if (!no) goto nomem;
                        list = no;
                        clist = nc;
                    }
                    list[nlist++] = ~it->t;
                }
            }
        }
        c->sv_off[nop] = (int32_t)nlist;
        c->sv = list;
        list = NULL;
        /* the saved bytes both ways: the storages the saved tensors keep (a view's base),
         * each once, not the inputs' (parameters, the batch) nor their views'; the extras
         * (masks, statistics), saved both ways */
        bool *ke = calloc(nt + 1, sizeof *ke), *kc = calloc(nt + 1, sizeof *kc);
        if (!ke || !kc) {
            free(ke);
            free(kc);
            goto nomem;
        }
        for (size_t t = 0; t < nt; t++) {
            int32_t r = (int32_t)t;
            while (b->t[r].base >= 0) r = b->t[r].base;
            if (is_primal(b, r)) continue;
            ke[r] |= P.bwd_n[t] > 0;
            kc[r] |= P.saved[t];
        }
        for (size_t t = 0; t < nt; t++) {
            c->saved_eager = sat_add(c->saved_eager, ke[t] ? raw_bytes(b, (int32_t)t) : 0);
            c->saved_compiled = sat_add(c->saved_compiled, kc[t] ? raw_bytes(b, (int32_t)t) : 0);
        }
        free(ke);
        free(kc);
        for (size_t k = 0; k < nop; k++) {
            const op_t *op = &b->op[k];
            const item_t *its = &b->it[op->it0];
            for (int32_t i = 0; op->rg && i < op->nit; i++)
                if (its[i].type == IT_EXTRA) {
                    int64_t e = vc_n_at(its[i].n, b->batch), by;
                    if (e < 0 || __builtin_mul_overflow(e, (int64_t)vc_dtype_size((vc_dtype)its[i].dt), &by)) by = INT64_MAX;
                    c->saved_eager = sat_add(c->saved_eager, by);
                    c->saved_compiled = sat_add(c->saved_compiled, by);
                }
        }
    }

    /* inductor's fusion: a fusible op's output is allocated when it is saved, an output
     * of the graph, or read by an extern kernel (directly or through a view) */
    for (size_t t = 0; t < nt; t++) {
        int32_t r = (int32_t)t;
        while (b->t[r].base >= 0) r = b->t[r].base;
        const tens_t *T = &b->t[t];
        if (P.saved[t] || P.fwd_nonfus[t] || (int32_t)t == b->loss_t || (int32_t)t == out_t ||
            (int32_t)t == b->held_out_t || (int32_t)t == b->target_t || T->persistent || T->op < 0 ||
            !fusible(c->cls[T->op]) || (P.fwd_n[t] == 0 && !P.bwd_n[t]))
            mat[r] = true;
    }
    for (size_t t = 0; t < nt; t++) {
        const tens_t *T = &b->t[t];
        c->fused[t] = T->base < 0 && !mat[t];
        /* a gradient between two fusible backwards: t's single gradient edge from a fusible
         * user, into a fusible producer that is no view */
        c->gfused[t] = b->train && T->op >= 0 && T->param < 0 && gedges[t] == 1 && guser[t] >= 0 &&
                       fusible(c->cls[guser[t]]) && c->cls[T->op] != CL_VIEW && fusible(c->cls[T->op]);
    }
    free(P.bwd_n); free(P.fwd_n); free(P.bwd_nonfus); free(P.fwd_nonfus); free(P.dist); free(P.saved); free(P.mat_bw); free(P.mm_bw); free(P.ban);
    free(P.stamp); free(P.stack); free(gedges); free(guser); free(mat);
    free(f.head); free(f.next); free(f.to); free(f.cap); free(f.level); free(f.iter); free(f.queue); free(path);
    return 0;
nomem:
    free(P.bwd_n); free(P.fwd_n); free(P.bwd_nonfus); free(P.fwd_nonfus); free(P.dist); free(P.saved); free(P.mat_bw); free(P.mm_bw); free(P.ban);
    free(P.stamp); free(P.stack); free(gedges); free(guser); free(mat); free(list);
    free(f.head); free(f.next); free(f.to); free(f.cap); free(f.level); free(f.iter); free(f.queue); free(path);
    return b->st = VC_ERR_NOMEM;
}

bool vc__compile_fusible(const vc_build *b, int32_t k) { return b->cmp && fusible(b->cmp->cls[k]); }

void vc__plan_compile_saved(const vc_plan *p, int64_t *eager, int64_t *compiled)
{
    *eager = p->cmp ? p->cmp->saved_eager : 0;
    *compiled = p->cmp ? p->cmp->saved_compiled : 0;
}
