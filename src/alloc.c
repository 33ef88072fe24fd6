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
 * The free blocks of a pool are kept by size class: a sorted array of the
 * distinct sizes that have a free block (a model has few: a 2,000-layer MLP
 * at most 5, ResNet-50 and BERT 20-30), each with a binary min-heap of its
 * blocks by address. Best fit is a binary search for the first size >= the
 * request and the top of its heap.
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

#define KB INT64_C(1024)
#define MB (KB * KB)
#define SMALL_SIZE MB          /* kSmallSize */
#define SMALL_BUFFER (2 * MB)  /* kSmallBuffer */
#define LARGE_BUFFER (20 * MB) /* kLargeBuffer */
#define MIN_LARGE_ALLOC (10 * MB)
#define ROUND_LARGE (2 * MB)

typedef struct {
    int64_t size, addr;
    int32_t prev, next; /* neighbours in the segment, -1 */
    int32_t cls, hpos;  /* while free: its size class and place in the class's heap */
    bool free, small;
} block;

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
    class_key *key[2]; /* per pool (0 large, 1 small): the classes with a free block, by size */
    int32_t nkey[2], capkey[2];
    size_class *cls; /* classes in use or spare; spare ones keep their heap arrays */
    int32_t ncls, capcls;
    int32_t *spare;
    int32_t nspare;
    int64_t reserved;
    /* the state after the first `prefix` events of a replay, for the next
     * replay that starts with the same events (0: none kept) */
    struct {
        size_t prefix, nb;
        block *b;
        int32_t *blk;
        int64_t reserved;
        class_key *key; /* both pools' keys, large then small */
        int32_t nkey[2];
        heap_ent *ent;  /* the classes' heaps, in key order */
        int32_t *nent;  /* per key */
    } snap;
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
        int32_t p = (i - 1) / 2;
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

/* the position of the first class of the pool with size >= size */
static int32_t key_lower_bound(const heap *h, int pool, int64_t size)
{
    const class_key *k = h->key[pool];
    int32_t lo = 0, hi = h->nkey[pool];
    while (hi - lo > 8) { /* a binary search down to a few keys, then a scan (most models have a handful) */
        int32_t mid = lo + (hi - lo) / 2;
        if (k[mid].size < size) lo = mid + 1;
        else hi = mid;
    }
    while (lo < hi && k[lo].size < size) lo++;
    return lo;
}

static bool push_free(heap *h, int32_t i)
{
    block *B = &h->b[i];
    int pool = B->small;
    int32_t at = key_lower_bound(h, pool, B->size);
    if (at == h->nkey[pool] || h->key[pool][at].size != B->size) { /* a new class */
        if (h->nkey[pool] == h->capkey[pool] && !grow((void **)&h->key[pool], &h->capkey[pool], sizeof(class_key)))
            return false;
        int32_t c;
        if (h->nspare) {
            c = h->spare[--h->nspare];
        } else {
            if (h->ncls == h->capcls) {
                if (!grow((void **)&h->cls, &h->capcls, sizeof(size_class))) return false;
                int32_t *ns = realloc(h->spare, (size_t)h->capcls * sizeof *ns);
                if (!ns) return false;
                h->spare = ns;
            }
            c = h->ncls++;
            h->cls[c] = (size_class){NULL, 0, 0};
        }
        class_key *k = h->key[pool];
        for (int32_t j = h->nkey[pool]; j > at; j--) k[j] = k[j - 1];
        k[at] = (class_key){B->size, c};
        h->nkey[pool]++;
    }
    size_class *c = &h->cls[h->key[pool][at].cls];
    if (c->n == c->cap && !grow((void **)&c->h, &c->cap, sizeof(heap_ent))) return false;
    B->free = true;
    B->cls = h->key[pool][at].cls;
    sift_up(h, c, c->n++, (heap_ent){B->addr, i});
    return true;
}

static void drop_free(heap *h, int32_t i)
{
    block *B = &h->b[i];
    size_class *c = &h->cls[B->cls];
    int32_t at = B->hpos;
    heap_ent last = c->h[--c->n];
    B->free = false;
    if (at < c->n) {
        if (at > 0 && c->h[(at - 1) / 2].addr > last.addr) sift_up(h, c, at, last);
        else sift_down(h, c, at, last);
    }
    if (c->n) return;
    /* the class is empty: its key goes, the class is kept for reuse */
    int pool = B->small;
    class_key *k = h->key[pool];
    for (int32_t j = key_lower_bound(h, pool, B->size) + 1; j < h->nkey[pool]; j++) k[j - 1] = k[j];
    h->nkey[pool]--;
    h->spare[h->nspare++] = B->cls;
}

static int32_t new_block(heap *h, int64_t size, int64_t addr, bool small)
{
    if (h->nb == h->capb) return -1; /* cannot happen: vc_alloc_replay sizes the array */
    h->b[h->nb] = (block){size, addr, -1, -1, -1, -1, false, small};
    return (int32_t)h->nb++;
}

static int32_t h_malloc(heap *h, int64_t size)
{
    bool small = size <= SMALL_SIZE;
    int32_t best = -1, at = key_lower_bound(h, small, size);
    if (at < h->nkey[small]) {
        best = h->cls[h->key[small][at].cls].h[0].blk;
        drop_free(h, best);
    } else {
        int64_t seg = small ? SMALL_BUFFER : size < MIN_LARGE_ALLOC ? LARGE_BUFFER
                                                                    : (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
        best = new_block(h, seg, h->reserved, small);
        if (best < 0) return -1;
        h->reserved += seg;
    }
    int64_t rem = h->b[best].size - size;
    if (small ? rem >= 512 : rem > SMALL_SIZE) {
        int32_t r = new_block(h, rem, h->b[best].addr + size, small);
        if (r < 0) return -1;
        block *B = &h->b[best];
        B->size = size;
        h->b[r].prev = best;
        h->b[r].next = B->next;
        if (B->next >= 0) h->b[B->next].prev = r;
        B->next = r;
        if (!push_free(h, r)) return -1;
    }
    return best;
}

static bool h_free(heap *h, int32_t i)
{
    block *B = &h->b[i];
    int32_t n = B->next, p = B->prev;
    if (n >= 0 && h->b[n].free) { /* absorb the next block */
        drop_free(h, n);
        B->size += h->b[n].size;
        B->next = h->b[n].next;
        if (B->next >= 0) h->b[B->next].prev = i;
    }
    if (p >= 0 && h->b[p].free) { /* the previous block absorbs this one */
        drop_free(h, p);
        h->b[p].size += B->size;
        h->b[p].next = B->next;
        if (B->next >= 0) h->b[B->next].prev = p;
        return push_free(h, p);
    }
    return push_free(h, i);
}

static void reset(heap *h)
{
    h->nb = 0;
    h->nkey[0] = h->nkey[1] = 0;
    for (int32_t c = 0; c < h->ncls; c++) {
        h->cls[c].n = 0;
        h->spare[c] = h->ncls - 1 - c;
    }
    h->nspare = h->ncls;
    h->reserved = 0;
}

static void drop_snapshot(heap *h)
{
    free(h->snap.b);
    free(h->snap.blk);
    free(h->snap.key);
    free(h->snap.ent);
    free(h->snap.nent);
    memset(&h->snap, 0, sizeof h->snap);
}

/* keeps the state after `prefix` events; on failure keeps none (replays are then only slower) */
static void save_snapshot(heap *h, size_t prefix)
{
    drop_snapshot(h);
    int32_t nk = h->nkey[0] + h->nkey[1], ne = 0;
    for (int p = 0; p < 2; p++)
        for (int32_t k = 0; k < h->nkey[p]; k++) ne += h->cls[h->key[p][k].cls].n;
    h->snap.b = malloc((h->nb + 1) * sizeof *h->snap.b);
    h->snap.blk = malloc((prefix + 1) * sizeof *h->snap.blk);
    h->snap.key = malloc(((size_t)nk + 1) * sizeof *h->snap.key);
    h->snap.ent = malloc(((size_t)ne + 1) * sizeof *h->snap.ent);
    h->snap.nent = malloc(((size_t)nk + 1) * sizeof *h->snap.nent);
    if (!h->snap.b || !h->snap.blk || !h->snap.key || !h->snap.ent || !h->snap.nent) {
        drop_snapshot(h);
        return;
    }
    memcpy(h->snap.b, h->b, h->nb * sizeof *h->b);
    memcpy(h->snap.blk, h->blk, prefix * sizeof *h->blk);
    int32_t i = 0;
    heap_ent *e = h->snap.ent;
    for (int p = 0; p < 2; p++)
        for (int32_t k = 0; k < h->nkey[p]; k++, i++) {
            const size_class *c = &h->cls[h->key[p][k].cls];
            h->snap.key[i] = h->key[p][k];
            h->snap.nent[i] = c->n;
            memcpy(e, c->h, (size_t)c->n * sizeof *e);
            e += c->n;
        }
    h->snap.nkey[0] = h->nkey[0];
    h->snap.nkey[1] = h->nkey[1];
    h->snap.nb = h->nb;
    h->snap.reserved = h->reserved;
    h->snap.prefix = prefix;
}

/* the state saved by save_snapshot; false when out of memory */
static bool restore_snapshot(heap *h)
{
    reset(h);
    memcpy(h->b, h->snap.b, h->snap.nb * sizeof *h->b);
    memcpy(h->blk, h->snap.blk, h->snap.prefix * sizeof *h->blk);
    h->nb = h->snap.nb;
    h->reserved = h->snap.reserved;
    /* the classes keep their numbers (blocks name them): those in the snapshot are not spare */
    const heap_ent *e = h->snap.ent;
    int32_t i = 0;
    h->nspare = 0;
    for (int p = 0; p < 2; p++) {
        for (int32_t k = 0; k < h->snap.nkey[p]; k++, i++) {
            size_class *c = &h->cls[h->snap.key[i].cls];
            while (c->cap < h->snap.nent[i])
                if (!grow((void **)&c->h, &c->cap, sizeof(heap_ent))) return false;
            memcpy(c->h, e, (size_t)h->snap.nent[i] * sizeof *e);
            c->n = h->snap.nent[i];
            e += c->n;
            h->key[p][k] = h->snap.key[i];
        }
        h->nkey[p] = h->snap.nkey[p];
    }
    for (int32_t c = h->ncls - 1; c >= 0; c--)
        if (!h->cls[c].n) h->spare[h->nspare++] = c;
    return true;
}

int64_t vc_alloc_replay(const vc_alloc_event *ev, size_t n, size_t prefix, vc_alloc_scratch *sc)
{
    if (!sc->st && !(sc->st = calloc(1, sizeof *sc->st))) return -1;
    heap *h = sc->st;
    /* each malloc makes at most two blocks (a segment and a remainder): size
     * the arrays once, and keep them for the next replay */
    size_t nm = 0;
    for (size_t i = 0; i < n; i++) nm += ev[i].block < 0;
    if (h->capb < 2 * nm + 1) {
        block *nb = realloc(h->b, (2 * nm + 1) * sizeof *nb);
        if (!nb) return -1;
        h->b = nb;
        h->capb = 2 * nm + 1;
    }
    if (h->capblk < n + 1) {
        int32_t *nk = realloc(h->blk, (n + 1) * sizeof *nk);
        if (!nk) return -1;
        h->blk = nk;
        h->capblk = n + 1;
    }
    if (prefix > n) prefix = n;
    size_t start = 0;
    if (prefix && h->snap.prefix == prefix) {
        if (!restore_snapshot(h)) return -1;
        start = prefix;
    } else {
        reset(h);
    }
    int32_t *blk = h->blk;
    for (size_t i = start; i < n; i++) {
        if (i == prefix && prefix && h->snap.prefix != prefix) save_snapshot(h, prefix);
        if (ev[i].size > (INT64_C(1) << 61)) return -1; /* beyond any device: the caller reports overflow */
        if (ev[i].block < 0) {
            if ((blk[i] = h_malloc(h, ev[i].size)) < 0) return -1;
        } else if (!h_free(h, blk[ev[i].block])) {
            return -1;
        }
    }
    return h->reserved;
}

void vc_alloc_scratch_free(vc_alloc_scratch *sc)
{
    heap *h = sc->st;
    if (!h) return;
    drop_snapshot(h);
    for (int32_t c = 0; c < h->ncls; c++) free(h->cls[c].h);
    free(h->cls);
    free(h->spare);
    free(h->key[0]);
    free(h->key[1]);
    free(h->b);
    free(h->blk);
    free(h);
    sc->st = NULL;
}
