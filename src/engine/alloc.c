/*
 * alloc.c — a model of PyTorch's CUDA caching allocator, for `reserved`.
 *
 * Follows c10/cuda/CUDACachingAllocator.cpp with default settings: requests
 * of at most 1 MiB come from the small pool (2 MiB segments), larger ones
 * from the large pool (20 MiB segments for requests under 10 MiB, else the
 * request rounded up to 2 MiB); best fit among cached free blocks of the
 * pool; a block is split when the remainder is >= 512 B (small pool) or
 * > 1 MiB (large pool); freed blocks merge with free neighbours; segments
 * are never returned (no empty_cache, no OOM retry). One stream. Free
 * blocks are ordered as BlockComparatorSize orders them: by size, then by
 * address; a segment's address is the bytes reserved before it (cudaMalloc's
 * real addresses are not known), a block's its segment's plus its offset.
 *
 * The free blocks are kept by size class, each class a binary min-heap of
 * its blocks by address, so best fit is "the first class with a free block
 * of at least the size, the top of its heap":
 *  - small pool: sizes are multiples of 512 up to 2 MiB, so there are 4,096
 *    classes at fixed places, found through a two-level bitmap;
 *  - large pool: a sorted array of the sizes that have a free block (a model
 *    has a handful: at most 5 for a 2,000-layer MLP, 20-30 for ResNet-50 or
 *    BERT, small and large pools together), searched, each with its class;
 *    a size whose last free block goes keeps its key for a while, empty
 *    (best fit passes over it), as the same sizes come and go all the time.
 *
 * --alloc-conf (src/engine/alloc_conf.c) changes two things, as
 * c10/cuda/CUDACachingAllocator.cpp at pytorch/pytorch@eb42ad6eca0ce61e7c581212b4bf32f991425571
 * does (e_malloc, e_free and h_malloc's max_split lines):
 *  - max_split_size_mb (h_malloc): get_free_block does not hand a block of at
 *    least max_split to a request below it, nor one of request + kLargeBuffer
 *    or more to a request of at least max_split ("Do not return an oversized
 *    block"), and should_split does not split a large-pool block for a
 *    request of at least max_split;
 *  - expandable_segments:True (e_malloc, e_free): one segment per pool (and
 *    stream) that grows (alloc_block -> try_allocate_expandable_block): a
 *    request no free block fits maps the pages it lacks after the segment's
 *    end, merged with the free block there; pages are 2 MiB in the small pool
 *    and 20 MiB in the large one (Note [Expandable Segments]: "we use 2MiB
 *    pages for our small pool and 20MiB pages for our large pool");
 *    should_split splits whenever kMinBlockSize (512 B) remains; best fit
 *    (get_free_block) takes a free block inside the segment before the free
 *    block at its end, whose size counts with the unmapped space after it.
 *    Pages are never unmapped (that happens on OOM or empty_cache).
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#define KB INT64_C(1024)
#define MB (KB * KB)
#define SMALL_SIZE VC_ALLOC_SMALL_SIZE /* kSmallSize, 1 MiB */
#define SMALL_BUFFER (2 * MB)  /* kSmallBuffer */
#define LARGE_BUFFER (20 * MB) /* kLargeBuffer */
#define MIN_LARGE_ALLOC (10 * MB)
#define ROUND_LARGE (2 * MB)
#define NSMALL (int32_t)(SMALL_BUFFER / 512) /* small-pool classes: 512 B, 1 KiB, ..., 2 MiB */

/* 32 bytes: a block's index is a shift. cls says whether it is free and,
 * in use, its pool: a free block's class (>= 0; the small pool's below
 * NSMALL), or one of these */
typedef struct {
    int64_t size, addr;
    int32_t prev, next; /* neighbours in the segment, -1 */
    int32_t cls, hpos;  /* while free: its size class and place in the class's heap; in use: IN_SMALL or IN_LARGE */
} block;
#define IN_LARGE (-1) /* in use, of the large pool (every block of expandable segments) */
#define END_FREE (-2) /* expandable segments: the free block at the segment's end, in no class */
#define IN_SMALL (-3) /* in use, of the small pool */
_Static_assert(sizeof(block) == 32, "a block is 32 bytes");

typedef struct {
    int64_t addr;
    int32_t blk;
} heap_ent;

typedef struct {
    heap_ent *h; /* the class's free blocks, a min-heap by address */
    int32_t n, cap;
} size_class;

typedef struct {
    int64_t size;
    int32_t cls;
} class_key;

/* everything a replay needs, kept from one replay to the next */
struct vc_alloc_state {
    block *b;
    size_t nb, capb;
    int32_t *blk; /* per event: the block its malloc returned */
    size_t capblk;
    /* classes 0..NSMALL-1: the small pool's, class i for blocks of (i + 1) * 512 bytes;
     * the others the large pool's, in use or spare (spare ones keep their heap arrays) */
    size_class *cls;
    int32_t ncls, capcls;
    /* small classes with a free block; a superset of the words of bits that are not 0 (a word's bit is
     * set with its first class, cleared by small_next when it finds the word empty) */
    uint64_t bits[NSMALL / 64], summary;
    uint64_t held[NSMALL / 64];          /* small classes whose heap array is allocated (vc_alloc_scratch_free) */
    /* the large pool's classes by size: every class with a free block, and classes that have lost their
     * last one (kept, so a size that comes back finds its key without a shift of the array; nempty of
     * them; removed together when they outnumber the others, compact_keys) */
    class_key *key;
    int32_t nkey, capkey, nempty;
    int32_t *spare;
    int32_t nspare;
    int64_t reserved;
    int expandable;    /* --alloc-conf expandable_segments:True */
    int64_t max_split; /* --alloc-conf max_split_size_mb, bytes; 0: unlimited */
    int32_t last;      /* expandable: the segment's last block (-1 none); free, it is in no class (cls END_FREE) */
    /* the state after the first `prefix` events of a replay, for the next
     * replay that starts with the same events (0: none kept) */
    struct {
        bool compact; /* without the prefix's blocks never freed (compact_snapshot) */
        size_t prefix, nb;
        block *b;
        int32_t *blk;
        int32_t *keep; /* compact: the prefix's events whose blocks a later event frees, (event, block) pairs */
        size_t nkeep;
        int64_t reserved;
        class_key *key;
        int32_t nkey;
        int32_t *cls;  /* the classes with a free block */
        int32_t ncls;
        int32_t *nent; /* per such class: its heap's entries, stored in turn in ent */
        heap_ent *ent;
    } snap;
    /* bounded(): per checkpoint of the stream (gen, n, prefix) its count, -1 not counted yet */
    struct {
        int32_t *lam;
        size_t nlam, n, prefix, step;
        uint64_t gen;
        void *win; /* window_bounds' arrays, for nwin intervals */
        size_t nwin;
        /* the windows' bound from the prefix on, best0, made with the requests' sizes: xs[] holds nxs pairs (a
         * malloc's size field after the prefix, its bytes), for the stream (xgen, xn, xpre) */
        int64_t *xs, best0;
        size_t nxs, xn, xpre;
        uint64_t xgen;
        bool xok;
    } bnd;
};

typedef struct vc_alloc_state heap;

static bool grow(void **p, int32_t *cap, size_t elem)
{
    int32_t nc = *cap ? 2 * *cap : 16;
    void *np = realloc(*p, (size_t)nc * elem);
    if (!np) return false;
    *p = np;
    *cap = nc;
    return true;
}

static void put(heap *h, size_class *c, int32_t i, heap_ent e)
{
    c->h[i] = e;
    h->b[e.blk].hpos = i;
}

static void sift_up(heap *h, size_class *c, int32_t i, heap_ent e)
{
    while (i > 0) {
        int32_t p = (int32_t)((uint32_t)(i - 1) >> 1); /* i > 0: a shift */
        if (c->h[p].addr <= e.addr) break;
        put(h, c, i, c->h[p]);
        i = p;
    }
    put(h, c, i, e);
}

static void sift_down(heap *h, size_class *c, int32_t i, heap_ent e)
{
    for (;;) {
        int32_t l = 2 * i + 1, m = l;
        if (l >= c->n) break;
        if (l + 1 < c->n && c->h[l + 1].addr < c->h[l].addr) m = l + 1;
        if (c->h[m].addr >= e.addr) break;
        put(h, c, i, c->h[m]);
        i = m;
    }
    put(h, c, i, e);
}

/* a block's size is a positive multiple of 512: a shift, not a signed division */
static int32_t small_class(int64_t size) { return (int32_t)(size >> 9) - 1; }

static void set_bit(heap *h, int32_t c)
{
    h->bits[c >> 6] |= UINT64_C(1) << (c & 63);
    h->summary |= UINT64_C(1) << (c >> 6);
}

/* the summary's bit stays (small_next clears it if the word is then empty) */
static void clear_bit(heap *h, int32_t c) { h->bits[c >> 6] &= ~(UINT64_C(1) << (c & 63)); }

/* the first small class >= c with a free block, -1 none */
static int32_t small_next(heap *h, int32_t c)
{
    int32_t w = c >> 6;
    uint64_t m = h->bits[w] & (~UINT64_C(0) << (c & 63));
    if (m) return (w << 6) + __builtin_ctzll(m);
    for (uint64_t s = w == 63 ? 0 : h->summary & (~UINT64_C(0) << (w + 1)); s; s &= s - 1) {
        w = __builtin_ctzll(s);
        if (h->bits[w]) return (w << 6) + __builtin_ctzll(h->bits[w]);
        h->summary &= ~(UINT64_C(1) << w); /* an empty word's bit, left by clear_bit */
    }
    return -1;
}

/* the position of the first large class with size >= size */
static int32_t key_lower_bound(const heap *h, int64_t size)
{
    const class_key *k = h->key;
    int32_t lo = 0, hi = h->nkey;
    while (hi - lo > 8) { /* a binary search down to a few keys, then a scan */
        int32_t mid = lo + (hi - lo) / 2;
        if (k[mid].size < size) lo = mid + 1;
        else hi = mid;
    }
    while (lo < hi && k[lo].size < size) lo++;
    return lo;
}

/* best fit's large class: the first key of at least size whose class has a free block, -1 none */
static inline __attribute__((always_inline)) int32_t large_fit(const heap *h, int64_t size)
{
    int32_t at = key_lower_bound(h, size);
    while (at < h->nkey && !h->cls[h->key[at].cls].n) at++; /* empty keys (usually none or one) */
    return at < h->nkey ? h->key[at].cls : -1;
}

/* the empty keys removed, their classes spare again (the keys' order kept) */
static void compact_keys(heap *h)
{
    int32_t m = 0;
    for (int32_t j = 0; j < h->nkey; j++)
        if (h->cls[h->key[j].cls].n) h->key[m++] = h->key[j];
        else h->spare[h->nspare++] = h->key[j].cls;
    h->nkey = m;
    h->nempty = 0;
}

/* a new key for size at place at, with an empty class: -1 out of memory */
static int32_t new_key(heap *h, int32_t at, int64_t size)
{
    if (h->nkey == h->capkey && !grow((void **)&h->key, &h->capkey, sizeof(class_key))) return -1;
    int32_t c;
    if (h->nspare) {
        c = h->spare[--h->nspare];
    } else {
        if (h->ncls == h->capcls) {
            if (!grow((void **)&h->cls, &h->capcls, sizeof(size_class))) return -1;
            int32_t *ns = realloc(h->spare, (size_t)h->capcls * sizeof *ns);
            if (!ns) return -1;
            h->spare = ns;
        }
        c = h->ncls++;
        h->cls[c] = (size_class){NULL, 0, 0};
    }
    for (int32_t j = h->nkey; j > at; j--) h->key[j] = h->key[j - 1];
    h->key[at] = (class_key){size, c};
    h->nkey++;
    h->nempty++; /* until push_free gives it its block */
    return c;
}

/* the class for a new free block of the large pool of this size: found (perhaps empty), or made (empty) */
static inline __attribute__((always_inline)) int32_t large_class(heap *h, int64_t size)
{
    int32_t at = key_lower_bound(h, size);
    if (at < h->nkey && h->key[at].size == size) return h->key[at].cls;
    return new_key(h, at, size);
}

/* The hot functions take the pool as a constant K (POOL_*: the replay's
 * requests are all of one pool, the model's case, or of either), so each
 * pool's replay loop is compiled without the other pool's branches. */
enum { POOL_LARGE = VC_POOL_LARGE, POOL_SMALL = VC_POOL_SMALL, POOL_EITHER = VC_POOL_EITHER };
/* block B, in use, of the small pool */
#define IS_SMALL(K, B) ((K) == POOL_EITHER ? (B)->cls == IN_SMALL : (K) == POOL_SMALL)
/* the in-use mark of a block leaving class ci */
#define IN_USE(K, ci) (((K) == POOL_EITHER ? (ci) < NSMALL : (K) == POOL_SMALL) ? IN_SMALL : IN_LARGE)

static inline __attribute__((always_inline)) bool push_free(heap *h, int32_t i, const int K)
{
    block *B = &h->b[i];
    bool small = IS_SMALL(K, B);
    int32_t ci = small ? small_class(B->size) : large_class(h, B->size);
    if (ci < 0) return false;
    size_class *c = &h->cls[ci];
    if (c->n == c->cap) {
        if (!grow((void **)&c->h, &c->cap, sizeof(heap_ent))) return false;
        if (small) h->held[ci >> 6] |= UINT64_C(1) << (ci & 63);
    }
    B->cls = ci;
    if (!c->n) { /* the class's only free block (most pushes): no heap to mend */
        if (small) set_bit(h, ci);
        else h->nempty--; /* its key was empty */
        c->h[0] = (heap_ent){B->addr, i};
        B->hpos = 0;
        c->n = 1;
        return true;
    }
    sift_up(h, c, c->n++, (heap_ent){B->addr, i});
    return true;
}

/* class ci, of block B's pool, has just lost its last free block */
static inline __attribute__((always_inline)) void emptied(heap *h, int32_t ci, const int K)
{
    if (K == POOL_EITHER ? ci < NSMALL : K == POOL_SMALL) {
        clear_bit(h, ci);
        return;
    }
    /* a large class's key stays, empty, until the empty keys outnumber the others (and a few) */
    if (++h->nempty > 8 && 2 * h->nempty > h->nkey) compact_keys(h);
}

static inline __attribute__((always_inline)) void drop_free(heap *h, int32_t i, const int K)
{
    block *B = &h->b[i];
    int32_t ci = B->cls;
    size_class *c = &h->cls[ci];
    B->cls = IN_USE(K, ci);
    if (c->n == 1) { /* the class's only free block (most drops): no heap to mend */
        c->n = 0;
        emptied(h, ci, K);
        return;
    }
    int32_t at = B->hpos;
    heap_ent last = c->h[--c->n];
    if (at < c->n) {
        if (at > 0 && c->h[(at - 1) / 2].addr > last.addr) sift_up(h, c, at, last);
        else sift_down(h, c, at, last);
    }
}

/* best fit's block, the top of class ci's heap, taken out (drop_free at place 0) */
static inline __attribute__((always_inline)) int32_t pop_top(heap *h, int32_t ci, const int K)
{
    size_class *c = &h->cls[ci];
    int32_t i = c->h[0].blk;
    h->b[i].cls = IN_USE(K, ci);
    if (c->n == 1) {
        c->n = 0;
        emptied(h, ci, K);
    } else {
        c->n--;
        sift_down(h, c, 0, c->h[c->n]);
    }
    return i;
}

/* A block made by a malloc, with its neighbours. No capacity check: a malloc
 * makes at most two blocks (a segment and a remainder), and vc_alloc_replay
 * sizes b[] to 2 n + 1 for n events (a kept prefix state has at most the
 * blocks its own events made). */
static inline __attribute__((always_inline)) int32_t new_block(heap *h, int64_t size, int64_t addr, int32_t prev,
                                                               int32_t next, bool small)
{
    block *B = &h->b[h->nb]; /* hpos is written when it is freed (push_free) */
    B->size = size;
    B->addr = addr;
    B->prev = prev;
    B->next = next;
    B->cls = small ? IN_SMALL : IN_LARGE;
    return (int32_t)h->nb++;
}

static inline __attribute__((always_inline)) int32_t h_malloc(heap *h, int64_t size, const int K, const bool M)
{
    bool small = K == POOL_EITHER ? size <= SMALL_SIZE : K == POOL_SMALL;
    int32_t best = -1, c = -1;
    if (small) {
        c = small_next(h, small_class(size));
    } else {
        c = large_fit(h, size);
    }
    if (c >= 0) {
        if (M) {
            best = h->cls[c].h[0].blk;
            int64_t ms = h->max_split, bs = h->b[best].size;
            if ((size < ms && bs >= ms) || (size >= ms && bs >= size + LARGE_BUFFER)) best = c = -1; /* oversize */
            else drop_free(h, best, K);
        } else {
            best = pop_top(h, c, K);
        }
    }
    if (c < 0) {
        int64_t seg = small ? SMALL_BUFFER : size < MIN_LARGE_ALLOC ? LARGE_BUFFER
                                                                    : (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
        best = new_block(h, seg, h->reserved, -1, -1, small);
        if (__builtin_add_overflow(h->reserved, seg, &h->reserved)) return -2;
    }
    int64_t rem = h->b[best].size - size;
    if (small ? rem >= 512 : rem > SMALL_SIZE && (!M || size < h->max_split)) {
        int32_t next = h->b[best].next, r = new_block(h, rem, h->b[best].addr + size, best, next, small);
        block *B = &h->b[best];
        B->size = size;
        if (next >= 0) h->b[next].prev = r;
        B->next = r;
        if (!push_free(h, r, K)) return -1;
    }
    return best;
}

static inline __attribute__((always_inline)) bool h_free(heap *h, int32_t i, const int K)
{
    block *B = &h->b[i];
    int32_t n = B->next, p = B->prev;
    if (n >= 0 && h->b[n].cls >= 0) { /* absorb the next block (free: in a class) */
        drop_free(h, n, K);
        B->size += h->b[n].size;
        B->next = h->b[n].next;
        if (B->next >= 0) h->b[B->next].prev = i;
    }
    if (p >= 0 && h->b[p].cls >= 0) { /* the previous block absorbs this one */
        drop_free(h, p, K);
        h->b[p].size += B->size;
        h->b[p].next = B->next;
        if (B->next >= 0) h->b[B->next].prev = p;
        return push_free(h, p, K);
    }
    return push_free(h, i, K);
}

/* expandable_segments:True (see the top): page 2 MiB (small pool) or 20 MiB (large) */
static int32_t e_malloc(heap *h, int64_t size, int64_t page)
{
    int32_t best = -1, t = h->last, c = large_fit(h, size);
    if (c >= 0) { /* a free block inside the segment */
        best = h->cls[c].h[0].blk;
        drop_free(h, best, POOL_LARGE);
    } else if (t >= 0 && h->b[t].cls != IN_LARGE) { /* the free block at the end, grown by the pages it lacks */
        int64_t lack = size - h->b[t].size, map = lack > 0 ? (lack + page - 1) / page * page : 0;
        if (__builtin_add_overflow(h->reserved, map, &h->reserved)) return -2;
        h->b[t].size += map;
        h->b[t].cls = IN_LARGE;
        best = t;
    } else { /* the segment ends in use (or is empty): new pages after it */
        int64_t map = (size + page - 1) / page * page;
        best = new_block(h, map, h->reserved, t, -1, false);
        if (__builtin_add_overflow(h->reserved, map, &h->reserved)) return -2;
        if (t >= 0) h->b[t].next = best;
        h->last = best;
    }
    int64_t rem = h->b[best].size - size;
    if (rem >= 512) { /* should_split: kMinBlockSize */
        int32_t next = h->b[best].next, r = new_block(h, rem, h->b[best].addr + size, best, next, false);
        block *B = &h->b[best];
        B->size = size;
        if (next >= 0) h->b[next].prev = r;
        B->next = r;
        if (h->last == best) {
            h->last = r;
            h->b[r].cls = END_FREE;
        } else if (!push_free(h, r, POOL_LARGE)) {
            return -1;
        }
    }
    return best;
}

static bool e_free(heap *h, int32_t i)
{
    block *B = &h->b[i];
    int32_t n = B->next, p = B->prev;
    if (n >= 0 && h->b[n].cls != IN_LARGE) { /* absorb the next block (the end's is in no class) */
        if (h->b[n].cls >= 0) drop_free(h, n, POOL_LARGE);
        B->size += h->b[n].size;
        B->next = h->b[n].next;
        if (B->next >= 0) h->b[B->next].prev = i;
        if (h->last == n) h->last = i;
    }
    if (p >= 0 && h->b[p].cls != IN_LARGE) { /* the previous block absorbs this one */
        drop_free(h, p, POOL_LARGE);
        h->b[p].size += B->size;
        h->b[p].next = B->next;
        if (B->next >= 0) h->b[B->next].prev = p;
        if (h->last == i) h->last = p;
        i = p;
    }
    if (h->last == i) {
        h->b[i].cls = END_FREE;
        return true;
    }
    return push_free(h, i, POOL_LARGE);
}

/* empty; false when out of memory (the first time: the small classes) */
static bool reset(heap *h)
{
    if (!h->cls) {
        if (!(h->cls = calloc((size_t)NSMALL + 16, sizeof *h->cls)) || !(h->spare = malloc(((size_t)NSMALL + 16) * sizeof *h->spare)))
            return false;
        h->ncls = NSMALL;
        h->capcls = NSMALL + 16;
    }
    h->nb = 0;
    h->nkey = 0;
    h->nempty = 0;
    /* the small classes with a free block are the bits' (push_free and drop_free keep them so) */
    for (int w = 0; w < NSMALL / 64; w++)
        for (uint64_t m = h->bits[w]; m; m &= m - 1) h->cls[(w << 6) + __builtin_ctzll(m)].n = 0;
    memset(h->bits, 0, sizeof h->bits);
    h->summary = 0;
    h->nspare = 0;
    for (int32_t c = NSMALL; c < h->ncls; c++) h->cls[c].n = 0;
    for (int32_t c = h->ncls - 1; c >= NSMALL; c--) h->spare[h->nspare++] = c;
    h->reserved = 0;
    h->last = -1;
    return true;
}

static void drop_snapshot(heap *h)
{
    free(h->snap.b);
    free(h->snap.blk);
    free(h->snap.keep);
    free(h->snap.key);
    free(h->snap.cls);
    free(h->snap.nent);
    free(h->snap.ent);
    memset(&h->snap, 0, sizeof h->snap);
}

/* keeps the state after `prefix` events; on failure keeps none (replays are then only slower) */
static void save_snapshot(heap *h, size_t prefix)
{
    drop_snapshot(h);
    compact_keys(h); /* the kept keys are those with a free block: restore_snapshot's spare classes are the others */
    int32_t nc = 0, ne = 0;
    for (int32_t c = 0; c < h->ncls; c++)
        if (h->cls[c].n) nc++, ne += h->cls[c].n;
    h->snap.b = malloc((h->nb + 1) * sizeof *h->snap.b);
    h->snap.blk = malloc((prefix + 1) * sizeof *h->snap.blk);
    h->snap.key = malloc(((size_t)h->nkey + 1) * sizeof *h->snap.key);
    h->snap.cls = malloc(((size_t)nc + 1) * sizeof *h->snap.cls);
    h->snap.nent = malloc(((size_t)nc + 1) * sizeof *h->snap.nent);
    h->snap.ent = malloc(((size_t)ne + 1) * sizeof *h->snap.ent);
    if (!h->snap.b || !h->snap.blk || !h->snap.key || !h->snap.cls || !h->snap.nent || !h->snap.ent) {
        drop_snapshot(h);
        return;
    }
    memcpy(h->snap.b, h->b, h->nb * sizeof *h->b);
    memcpy(h->snap.blk, h->blk, prefix * sizeof *h->blk);
    if (h->nkey) memcpy(h->snap.key, h->key, (size_t)h->nkey * sizeof *h->key);
    heap_ent *e = h->snap.ent;
    for (int32_t c = 0; c < h->ncls; c++) {
        if (!h->cls[c].n) continue;
        h->snap.cls[h->snap.ncls] = c;
        h->snap.nent[h->snap.ncls++] = h->cls[c].n;
        memcpy(e, h->cls[c].h, (size_t)h->cls[c].n * sizeof *e);
        e += h->cls[c].n;
    }
    h->snap.nkey = h->nkey;
    h->snap.nb = h->nb;
    h->snap.reserved = h->reserved;
    h->snap.prefix = prefix;
}

/* The kept state without the prefix's blocks that are never freed, when a
 * second replay starts from it (the first pays nothing for it) and the
 * caller says every replay frees the same blocks of the prefix
 * (vc_alloc_scratch.fixed_frees). A block a malloc of the prefix made that
 * no event of ev[0..n) frees never changes and is never merged (a free
 * merges only with free neighbours): to the others it is as no neighbour
 * at all. It is left out, the links to it -1, the other blocks renumbered
 * (best fit reads sizes and addresses, not numbers), so each replay copies
 * the free blocks and the live ones freed later, not every parameter's
 * (the 2,000-layer MLP's small pool: 2 of its 6,002 blocks). On failure the
 * state stays whole. */
static void compact_snapshot(heap *h, const vc_alloc_event *ev, size_t n)
{
    size_t prefix = h->snap.prefix;
    uint8_t *freed = calloc(prefix + 1, 1);
    int32_t *map = calloc(h->snap.nb + 1, sizeof *map);
    if (!freed || !map) {
        free(freed);
        free(map);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (ev[i].block >= 0 && (size_t)ev[i].block < prefix) freed[ev[i].block] = 1;
    size_t nkeep = 0;
    for (size_t e = 0; e < prefix; e++)
        if (ev[e].block < 0 && !freed[e]) map[h->snap.blk[e]] = -1; /* never freed: left out */
        else nkeep += ev[e].block < 0;
    free(freed);
    /* a replay reads blk[] of the prefix only where a later event frees: those entries are restored, not all */
    int32_t *keep = malloc((2 * nkeep + 1) * sizeof *keep);
    if (!keep) {
        free(map);
        return;
    }
    int32_t nk = 0;
    for (size_t i = 0; i < h->snap.nb; i++)
        if (!map[i]) map[i] = nk++;
    for (size_t i = 0; i < h->snap.nb; i++) { /* in place: a block moves to a place no later than its own */
        if (map[i] < 0) continue;
        block B = h->snap.b[i];
        B.prev = B.prev >= 0 ? map[B.prev] : -1;
        B.next = B.next >= 0 ? map[B.next] : -1;
        h->snap.b[map[i]] = B;
    }
    nkeep = 0;
    for (size_t e = 0; e < prefix; e++)
        if ((h->snap.blk[e] = ev[e].block < 0 ? map[h->snap.blk[e]] : -1) >= 0) {
            keep[2 * nkeep] = (int32_t)e;
            keep[2 * nkeep++ + 1] = h->snap.blk[e];
        }
    h->snap.keep = keep;
    h->snap.nkeep = nkeep;
    int32_t ne = 0;
    for (int32_t i = 0; i < h->snap.ncls; i++) ne += h->snap.nent[i];
    for (int32_t k = 0; k < ne; k++) h->snap.ent[k].blk = map[h->snap.ent[k].blk];
    free(map);
    h->snap.nb = (size_t)nk;
    h->snap.compact = true;
}

/* the state saved by save_snapshot (into the same, possibly larger, state); false when out of memory */
static bool restore_snapshot(heap *h)
{
    if (!reset(h)) return false;
    memcpy(h->b, h->snap.b, h->snap.nb * sizeof *h->b);
    if (h->snap.compact)
        for (size_t k = 0; k < h->snap.nkeep; k++) h->blk[h->snap.keep[2 * k]] = h->snap.keep[2 * k + 1];
    else
        memcpy(h->blk, h->snap.blk, h->snap.prefix * sizeof *h->blk);
    if (h->snap.nkey) memcpy(h->key, h->snap.key, (size_t)h->snap.nkey * sizeof *h->key);
    h->nkey = h->snap.nkey;
    h->nempty = 0;
    h->nb = h->snap.nb;
    h->reserved = h->snap.reserved;
    /* classes keep their numbers (blocks name them) */
    const heap_ent *e = h->snap.ent;
    for (int32_t i = 0; i < h->snap.ncls; i++) {
        int32_t ci = h->snap.cls[i];
        size_class *c = &h->cls[ci];
        while (c->cap < h->snap.nent[i]) {
            if (!grow((void **)&c->h, &c->cap, sizeof(heap_ent))) return false;
            if (ci < NSMALL) h->held[ci >> 6] |= UINT64_C(1) << (ci & 63);
        }
        memcpy(c->h, e, (size_t)h->snap.nent[i] * sizeof *e);
        c->n = h->snap.nent[i];
        e += c->n;
        if (ci < NSMALL) set_bit(h, ci);
    }
    h->nspare = 0;
    for (int32_t c = h->ncls - 1; c >= NSMALL; c--)
        if (!h->cls[c].n) h->spare[h->nspare++] = c;
    return true;
}

/* events [from, to) of one replay, the pool mode K a constant in each copy: 0, or a negative status */
static inline __attribute__((always_inline)) int64_t run_k(heap *h, const vc_alloc_event *ev, size_t from, size_t to,
                                                          const int K, const bool E, const bool M, int64_t page,
                                                          const int64_t *sz)
{
    int32_t *blk = h->blk;
    for (size_t i = from; i < to; i++) {
        if (ev[i].block < 0) {
            /* sizes are multiples of 512 (the small classes rely on it), up to 2^61 (beyond any device: the caller reports overflow) */
            int64_t v = sz ? sz[ev[i].size] : ev[i].size;
            if ((uint64_t)v - 1 >= (UINT64_C(1) << 61) || (v & 511)) return v > 0 && !(v & 511) ? -2 : -1; /* one test each */
            if ((blk[i] = E ? e_malloc(h, v, page) : h_malloc(h, v, K, M)) < 0) return blk[i];
        } else if (!(E ? e_free(h, blk[ev[i].block]) : h_free(h, blk[ev[i].block], K))) {
            return -1;
        }
    }
    return 0;
}

/* one copy per pool mode without max_split_size_mb (the default), one with it (M: h->max_split > 0), one for
 * expandable segments (e_malloc and e_free take neither) */
static int64_t run(heap *h, const vc_alloc_event *ev, size_t from, size_t to, int K, int64_t page, const int64_t *sz)
{
    if (h->expandable) return run_k(h, ev, from, to, POOL_EITHER, true, false, page, sz);
    if (h->max_split > 0) return run_k(h, ev, from, to, POOL_EITHER, false, true, page, sz);
    /* the default: a copy with the sizes read through sizes[] (replay.c's streams), one with them in the events */
    if (sz) {
        if (K == POOL_SMALL) return run_k(h, ev, from, to, POOL_SMALL, false, false, page, sz);
        if (K == POOL_LARGE) return run_k(h, ev, from, to, POOL_LARGE, false, false, page, sz);
        return run_k(h, ev, from, to, POOL_EITHER, false, false, page, sz);
    }
    if (K == POOL_SMALL) return run_k(h, ev, from, to, POOL_SMALL, false, false, page, NULL);
    if (K == POOL_LARGE) return run_k(h, ev, from, to, POOL_LARGE, false, false, page, NULL);
    return run_k(h, ev, from, to, POOL_EITHER, false, false, page, NULL);
}

/* Upper bounds of live_after(t) for t = prefix + k x step, k = 0, 1, ...
 * (the most blocks allocated at or after event t that are live at once just
 * before a malloc of ev[t..n); a malloc's block stays live until the free
 * that names it), into lam[k], in one pass: with the events after the
 * prefix cut into intervals of `step`, c_j the live blocks allocated in
 * interval j, the count just before a malloc u of interval i is the sum of
 * c_j(u) over j = k..i; within interval i the older intervals' counts only
 * fall, so it is at most their sum where interval i starts plus interval
 * i's own most before a malloc. false when out of memory. */
static bool live_bounds(const vc_alloc_event *ev, size_t n, size_t prefix, size_t step, size_t nint, int32_t *lam)
{
    int32_t *c = calloc(nint * (nint + 2), sizeof *c); /* c[nint], peak[nint], base[i][j] (j < i) */
    if (!c) return false;
    int32_t *peak = c + nint, *base = c + 2 * nint;
    for (size_t i = 0; i < nint; i++) {
        size_t from = prefix + i * step, to = from + step < n ? from + step : n;
        memcpy(base + i * nint, c, i * sizeof *c); /* the older intervals' counts where interval i starts */
        int32_t ci = 0, most = 0;
        for (size_t u = from; u < to; u++) {
            int32_t a = ev[u].block;
            if (a < 0) {
                if (ci > most) most = ci;
                ci++;
            } else if ((size_t)a >= from) {
                ci--;
            } else if ((size_t)a >= prefix) {
                c[((size_t)a - prefix) / step]--;
            }
        }
        c[i] = ci;
        peak[i] = most;
    }
    /* lam[k]: the most over i >= k of peak[i] + the sum of base[i][j] over j = k..i-1 */
    for (size_t k = 0; k < nint; k++) lam[k] = 0;
    for (size_t i = 0; i < nint; i++) {
        int32_t v = peak[i];
        for (size_t k = i + 1; k-- > 0;) {
            if (v > lam[k]) lam[k] = v;
            if (k) v += base[i * nint + k - 1];
        }
    }
    free(c);
    return true;
}

/* A sharper bound, for one replay's sizes: best[k] >= the bytes of the
 * segments opened from checkpoint t_k = prefix + k x step to the end
 * (best[nint] = 0), with the default settings and one pool's requests.
 * Small pool (requests of at most 1 MiB, 2 MiB segments): a block is its
 * request's size (a remainder, a multiple of 512, is split off when it is
 * not 0). Large pool (requests over 1 MiB and, from t on, under 10 MiB: 20
 * MiB segments): a block is its request's size plus a slack of at most
 * 1 MiB (a remainder of at most 1 MiB is not split off, h_malloc). A
 * segment opened at event v >= t has one piece when opened, its free tail
 * (over 1 MiB: split); taking a free block's front keeps the pieces, taking
 * it whole turns it into the slack of the block that takes it, a free adds
 * at most one (the freed block and its slack merge). So when a segment is
 * opened at malloc u for x bytes (no free block of x or more anywhere), each
 * of the S segments opened in [t, u) holds only blocks allocated since t and
 * at most 1 + the frees of its blocks since t pieces (free blocks and
 * slacks), each at most x - 512 (a free block is under x, a slack at most
 * 1 MiB, under x in the large pool):
 *     S x segment <= V + (S + F) (x - 512),
 * V the requests' bytes of the blocks allocated in [t, u) live at u, F the
 * frees in [t, u) of blocks allocated since t; and S <= L, those blocks'
 * count (each segment holds one: a segment with none is one free block that
 * fits x). A window of events [t, t') opens at most 1 + max over its mallocs
 * u of min(L, (V + F (x - 512)) / (segment - x + 512)) segments (none
 * without a malloc), and a replay's segments from t_k on are at most the sum
 * over any cut of [t_k, end) into windows at the checkpoints: best[] is the
 * least such sum (one window from t_k is live_bounds' count at most: V and F
 * only lower it). Per interval i (events [t_i, t_i+1)) and window start
 * k <= i, over the mallocs of interval i: L and V at most the older
 * intervals' counts and bytes where interval i starts (they only fall within
 * it) plus interval i's own most before a malloc, F at most their frees by
 * the end of interval i, x at most interval i's largest request (the bound
 * grows with x). false when out of memory or a request is out of the pool's
 * range. */
static inline __attribute__((always_inline)) bool window_pass(heap *h, const vc_alloc_event *ev, size_t n,
                                                               size_t prefix, size_t step, size_t nint,
                                                               const int64_t *sz, int64_t *best, int64_t *xs,
                                                               size_t *nxs, const int K)
{
    /* the pool's segment, and its requests' range: at most 1 MiB, or over 1 MiB and under 10 MiB */
    const int64_t seg = K == POOL_SMALL ? SMALL_BUFFER : LARGE_BUFFER, lo = K == POOL_SMALL ? 0 : SMALL_SIZE,
                  hi = K == POOL_SMALL ? SMALL_SIZE + 1 : MIN_LARGE_ALLOC;
    size_t nx = 0;
    size_t q = nint * nint;
    /* per older interval j: live bytes v, live count c, frees f; at each interval i's start (vb, cb: j < i) and end (fb:
     * j <= i); only the rows' entries written are read */
    if (h->bnd.nwin != nint) {
        void *w = realloc(h->bnd.win, (4 * nint + 2 * q) * sizeof(int64_t) + (3 * nint + 2 * q) * sizeof(int32_t));
        if (!w) return false;
        h->bnd.win = w;
        h->bnd.nwin = nint;
    }
    int64_t *v = h->bnd.win, *vmost = v + nint, *xmax = v + 2 * nint, *vb = v + 4 * nint, *bd = vb + q;
    int32_t *c = (int32_t *)(bd + q), *f = c + nint, *most = c + 2 * nint, *cb = c + 3 * nint, *fb = cb + q;
    memset(v, 0, nint * sizeof *v);
    memset(c, 0, 2 * nint * sizeof *c);
    for (size_t i = 0; i < nint; i++) {
        size_t from = prefix + i * step, to = from + step < n ? from + step : n;
        memcpy(cb + i * nint, c, i * sizeof *c);
        memcpy(vb + i * nint, v, i * sizeof *v);
        int32_t ci = 0, mi = 0, fi = 0;
        int64_t vi = 0, vm = 0, xm = 0;
        for (size_t u = from; u < to; u++) {
            int32_t a = ev[u].block;
            if (a < 0) {
                int64_t x = sz ? sz[ev[u].size] : ev[u].size;
                if (x <= lo || x >= hi) return false; /* out of the argument's range */
                if (xs) {
                    xs[2 * nx] = ev[u].size;
                    xs[2 * nx++ + 1] = x;
                }
                if (ci > mi) mi = ci;
                if (vi > vm) vm = vi;
                if (x > xm) xm = x;
                ci++;
                vi += x;
                continue;
            }
            int64_t x = sz ? sz[ev[a].size] : ev[a].size;
            if ((size_t)a >= from) {
                ci--;
                vi -= x;
                fi++;
            } else if ((size_t)a >= prefix) {
                size_t j = ((size_t)a - prefix) / step;
                c[j]--;
                v[j] -= x;
                f[j]++;
            }
        }
        c[i] = ci;
        v[i] = vi;
        f[i] = fi;
        most[i] = mi;
        vmost[i] = vm;
        xmax[i] = xm;
        memcpy(fb + i * nint, f, (i + 1) * sizeof *f);
    }
    /* bd[k][i]: the window from k's most segments opened before a malloc of interval i (-1: i has none) */
    for (size_t i = 0; i < nint; i++) {
        int64_t x = xmax[i], L = most[i], V = vmost[i], F = fb[i * nint + i];
        for (size_t k = i + 1; k-- > 0;) {
            int64_t b = L, w = (V + F * (x - 512)) / (seg - x + 512); /* V, F x: under 2^56 */
            if (!x) b = -1;
            else if (w < b) b = w;
            bd[k * nint + i] = b;
            if (k) {
                L += cb[i * nint + k - 1];
                V += vb[i * nint + k - 1];
                F += fb[i * nint + k - 1];
            }
        }
    }
    best[nint] = 0;
    for (size_t k = nint; k-- > 0;) {
        int64_t mx = -1, b = INT64_MAX;
        for (size_t m = k + 1; m <= nint; m++) {
            if (bd[k * nint + m - 1] > mx) mx = bd[k * nint + m - 1];
            int64_t w = (mx < 0 ? 0 : seg * (mx + 1)) + best[m]; /* under 2^62 */
            if (w < b) b = w;
        }
        best[k] = b;
    }
    *nxs = nx;
    return true;
}

/* window_bounds with the sizes in sz[] (replay.c's streams), or in the events; xs (2 (n - prefix) entries, or
 * NULL) gets each request's size field and bytes, *nxs of them */
static bool window_bounds(heap *h, const vc_alloc_event *ev, size_t n, size_t prefix, size_t step, size_t nint,
                          const int64_t *sz, int64_t *best, int64_t *xs, size_t *nxs, int K)
{
    if (K == POOL_SMALL)
        return sz ? window_pass(h, ev, n, prefix, step, nint, sz, best, xs, nxs, POOL_SMALL)
                  : window_pass(h, ev, n, prefix, step, nint, NULL, best, xs, nxs, POOL_SMALL);
    return sz ? window_pass(h, ev, n, prefix, step, nint, sz, best, xs, nxs, POOL_LARGE)
              : window_pass(h, ev, n, prefix, step, nint, NULL, best, xs, nxs, POOL_LARGE);
}

/* true when no request of the stream after its prefix is larger than when its kept bound was made (h->bnd.xs): the
 * windows' bound from the prefix is then at most that one (V and x only grow with the sizes; L and F are the
 * stream's) */
static bool within_kept(const heap *h, const int64_t *sz)
{
    const int64_t *xs = h->bnd.xs;
    size_t n = h->bnd.nxs;
    if (!sz) return false; /* the sizes in the events: not kept (the stream's gen names its blocks, not its sizes) */
    for (size_t i = 0; i < n; i++)
        if (sz[xs[2 * i]] > xs[2 * i + 1]) return false;
    return true;
}

/* window_bounds from the prefix (best[0..nint]), kept with the requests' sizes for the stream's next replays
 * (within_kept); false as window_bounds */
static bool kept_bounds(heap *h, const vc_alloc_event *ev, size_t n, size_t prefix, size_t step, size_t nint,
                        const vc_alloc_scratch *sc, int K, int64_t *best)
{
    int64_t *xs = realloc(h->bnd.xs, (2 * (n - prefix) + 1) * sizeof *xs);
    size_t nx;
    h->bnd.xok = false;
    if (!xs) return window_bounds(h, ev, n, prefix, step, nint, sc->sizes, best, NULL, &nx, K);
    h->bnd.xs = xs;
    if (!window_bounds(h, ev, n, prefix, step, nint, sc->sizes, best, xs, &h->bnd.nxs, K)) return false;
    h->bnd.xok = true;
    h->bnd.best0 = best[0];
    h->bnd.xgen = sc->gen;
    h->bnd.xn = n;
    h->bnd.xpre = prefix;
    return true;
}

__extension__ typedef __int128 i128;

/* A replay that may stop before the end (vc_alloc_scratch.limit): with the
 * default settings a segment is opened only when no free block fits the
 * request (h_malloc), and a segment all of whose blocks are free is one free
 * block (h_free merges a freed block with its free neighbours) that fits any
 * request of its pool: 2 MiB against small requests of at most 1 MiB, and,
 * in the large pool, 20 MiB (a segment opened for a request under 10 MiB)
 * against requests under 10 MiB. So when a segment is opened at event u,
 * each segment opened since event t holds a live block allocated since t,
 * and the segments opened from t on are at most live_after(t) + 1: the
 * reserve at the end is at most reserve(t) + segment x (live_after(t) + 1).
 * At checkpoints every `step` events from the prefix on, once that bound
 * (with live_bounds' bound of live_after) is at most the limit the replay
 * stops: -3. The counts depend on the stream, not on the sizes: made once
 * per stream (sc->gen, n, prefix) and kept. Returns -3 or a negative status
 * of the replay; -4 when the bound did not hold (the caller runs the rest
 * from *start). */
static int64_t bounded(heap *h, const vc_alloc_event *ev, size_t n, size_t prefix, const vc_alloc_scratch *sc, int K,
                       int64_t page, size_t *start)
{
    if (h->bnd.gen != sc->gen || h->bnd.n != n || h->bnd.prefix != prefix || !h->bnd.lam) {
        size_t step = (n - prefix) / 64 > 128 ? (n - prefix) / 64 : 128, nint = (n - prefix + step - 1) / step;
        int32_t *lam = realloc(h->bnd.lam, nint * sizeof *lam);
        if (!lam) return -4; /* no bound: the replay runs to the end */
        h->bnd.lam = lam;
        h->bnd.gen = sc->gen - 1; /* not valid until made */
        if (!live_bounds(ev, n, prefix, step, nint, lam)) return -4;
        h->bnd.nlam = nint;
        h->bnd.step = step;
        h->bnd.gen = sc->gen;
        h->bnd.n = n;
        h->bnd.prefix = prefix;
    }
    const int64_t *sz = sc->sizes, seg = K == POOL_SMALL ? SMALL_BUFFER : LARGE_BUFFER;
    /* window_bounds' sharper bound for these sizes (none when out of memory or out of its range) */
    int64_t *best = NULL;
    bool tried = false;
    for (size_t k = 0; k < h->bnd.nlam; k++) {
        size_t t = prefix + k * h->bnd.step;
        int64_t r = run(h, ev, *start, t, K, page, sz);
        if (r < 0) {
            free(best);
            return r;
        }
        *start = t;
        i128 most = (i128)h->reserved + (i128)seg * (h->bnd.lam[k] + 1);
        /* made once the counts' bound is within 3 times the room left (a pass over the rest of the stream: where
         * the counts are far off, the windows seldom stop the replay much sooner) */
        if (most > sc->limit && !tried && most - h->reserved <= 3 * ((i128)sc->limit - h->reserved)) {
            tried = true;
            /* a bound at least as large, kept: it may do */
            if (!k && h->bnd.xok && h->bnd.xgen == sc->gen && h->bnd.xn == n && h->bnd.xpre == prefix &&
                within_kept(h, sz) && (i128)h->reserved + h->bnd.best0 <= sc->limit)
                return -3;
            /* from checkpoint k on: the windows that start there (the events before t are as a prefix); from the
             * prefix, kept with its sizes for the stream's next replays */
            size_t nx;
            if ((best = malloc((h->bnd.nlam + 1) * sizeof *best)) &&
                !(k ? window_bounds(h, ev, n, t, h->bnd.step, h->bnd.nlam - k, sz, best + k, NULL, &nx, K)
                    : kept_bounds(h, ev, n, prefix, h->bnd.step, h->bnd.nlam, sc, K, best))) {
                free(best);
                best = NULL;
            }
        }
        if (best && (i128)h->reserved + best[k] < most) most = (i128)h->reserved + best[k];
        if (most > sc->limit) continue;
        free(best);
        if (K == POOL_LARGE) /* every later request under 10 MiB, so every later segment 20 MiB */
            for (size_t u = t; u < n; u++)
                if (ev[u].block < 0 && (sz ? sz[ev[u].size] : ev[u].size) >= MIN_LARGE_ALLOC) return -4;
        return -3;
    }
    free(best);
    return -4;
}

int64_t vc_alloc_replay(const vc_alloc_event *ev, size_t n, size_t prefix, vc_alloc_scratch *sc)
{
    if (!sc->st && !(sc->st = calloc(1, sizeof *sc->st))) return -1;
    heap *h = sc->st;
    /* each malloc makes at most two blocks (a segment and a remainder): size
     * the arrays once (pages not used are not touched), and keep them for
     * the next replay */
    if (h->capb < 2 * n + 1) { /* their contents are not kept (reset or the snapshot writes them): no copy */
        free(h->b);
        h->capb = 0;
        if (!(h->b = malloc((2 * n + 1) * sizeof *h->b))) return -1;
        h->capb = 2 * n + 1;
    }
    if (h->capblk < n + 1) {
        free(h->blk);
        h->capblk = 0;
        if (!(h->blk = malloc((n + 1) * sizeof *h->blk))) return -1;
        h->capblk = n + 1;
    }
    if (prefix > n) prefix = n;
    if (h->expandable != sc->expandable || h->max_split != sc->max_split) drop_snapshot(h); /* another --alloc-conf */
    h->expandable = sc->expandable;
    h->max_split = sc->max_split;
    if (h->expandable) prefix = 0; /* the snapshot does not keep the segment's end */
    const int64_t *sz = sc->sizes;
    int64_t page = n && (sz ? sz[ev[0].size] : ev[0].size) <= SMALL_SIZE ? SMALL_BUFFER : LARGE_BUFFER; /* one pool's requests */
    size_t start = 0;
    if (prefix && h->snap.prefix == prefix && (!h->snap.compact || sc->fixed_frees)) {
        if (sc->fixed_frees && !h->snap.compact) compact_snapshot(h, ev, n);
        if (!restore_snapshot(h)) return -1;
        start = prefix;
    } else if (!reset(h)) {
        return -1;
    }
    /* the requests' pool, as the caller says (replay.c: one per stream); expandable segments keep no small blocks */
    int K = sc->pool == VC_POOL_SMALL || sc->pool == VC_POOL_LARGE ? sc->pool : POOL_EITHER;
    int64_t r;
    if (start < prefix) { /* up to the prefix, then the state is kept */
        if ((r = run(h, ev, start, prefix, K, page, sz)) < 0) return r;
        if (prefix < n && h->snap.prefix != prefix) save_snapshot(h, prefix); /* as before: kept when events follow */
        start = prefix;
    }
    if (sc->limit > 0 && !h->expandable && !h->max_split && (K == POOL_SMALL || K == POOL_LARGE) && start == prefix &&
        n - prefix >= 512 &&
        (r = bounded(h, ev, n, prefix, sc, K, page, &start)) != -4)
        return r; /* -3, or a failure */
    if ((r = run(h, ev, start, n, K, page, sz)) < 0) return r;
    return h->reserved;
}

int64_t vc_alloc_bound(const vc_alloc_event *ev, size_t n, size_t prefix, vc_alloc_scratch *sc)
{
    heap *h = sc->st;
    int K = sc->pool == VC_POOL_SMALL || sc->pool == VC_POOL_LARGE ? sc->pool : POOL_EITHER;
    if (prefix > n) prefix = n;
    /* the default settings, one pool's requests, and the state after the prefix known: kept, or none (0 bytes) */
    if (sc->expandable || sc->max_split || K == POOL_EITHER || n - prefix < 512 ||
        (prefix && (!h || h->expandable || h->max_split || h->snap.prefix != prefix)))
        return -1;
    if (!h && !(h = sc->st = calloc(1, sizeof *sc->st))) return -1;
    int64_t base = prefix ? h->snap.reserved : 0;
    if (h->bnd.xok && h->bnd.xgen == sc->gen && h->bnd.xn == n && h->bnd.xpre == prefix && within_kept(h, sc->sizes))
        return base + h->bnd.best0;
    size_t step = (n - prefix) / 64 > 128 ? (n - prefix) / 64 : 128, nint = (n - prefix + step - 1) / step;
    int64_t *best = malloc((nint + 1) * sizeof *best);
    int64_t u = best && kept_bounds(h, ev, n, prefix, step, nint, sc, K, best) ? base + best[0] : -1; /* and kept */
    free(best);
    return u;
}

void vc_alloc_scratch_free(vc_alloc_scratch *sc)
{
    heap *h = sc->st;
    if (!h) return;
    drop_snapshot(h);
    free(h->bnd.lam);
    free(h->bnd.win);
    free(h->bnd.xs);
    for (int w = 0; w < NSMALL / 64; w++) /* the small classes' heaps that were allocated */
        for (uint64_t m = h->held[w]; m; m &= m - 1) free(h->cls[(w << 6) + __builtin_ctzll(m)].h);
    for (int32_t c = NSMALL; c < h->ncls; c++) free(h->cls[c].h);
    free(h->cls);
    free(h->spare);
    free(h->key);
    free(h->b);
    free(h->blk);
    free(h);
    sc->st = NULL;
}
