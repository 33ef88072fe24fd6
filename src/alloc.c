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
 */
#include <stdlib.h>

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
    bool free, small;
    /* free blocks: a treap node ordered by (small, size, addr), so that best
     * fit is a lower-bound search */
    int32_t l, r;
    uint32_t pri;
} block;

typedef struct {
    block *b;
    size_t n, cap;
    int32_t root;      /* treap of free blocks */
    uint32_t seed;
    int64_t reserved;
} heap;

static int key_cmp(const block *a, const block *b)
{
    if (a->small != b->small) return a->small < b->small ? -1 : 1;
    if (a->size != b->size) return a->size < b->size ? -1 : 1;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* split t into keys < k and keys >= k */
static void t_split(heap *h, int32_t t, const block *k, int32_t *a, int32_t *c)
{
    if (t < 0) {
        *a = *c = -1;
        return;
    }
    if (key_cmp(&h->b[t], k) < 0) {
        t_split(h, h->b[t].r, k, &h->b[t].r, c);
        *a = t;
    } else {
        t_split(h, h->b[t].l, k, a, &h->b[t].l);
        *c = t;
    }
}

static int32_t t_merge(heap *h, int32_t a, int32_t c)
{
    if (a < 0) return c;
    if (c < 0) return a;
    if (h->b[a].pri > h->b[c].pri) {
        h->b[a].r = t_merge(h, h->b[a].r, c);
        return a;
    }
    h->b[c].l = t_merge(h, a, h->b[c].l);
    return c;
}

static void t_insert(heap *h, int32_t i)
{
    h->seed = h->seed * 1664525u + 1013904223u;
    h->b[i].pri = h->seed;
    h->b[i].l = h->b[i].r = -1;
    int32_t a, c;
    t_split(h, h->root, &h->b[i], &a, &c);
    h->root = t_merge(h, t_merge(h, a, i), c);
}

static void t_erase(heap *h, int32_t i)
{
    int32_t *link = &h->root;
    while (*link >= 0 && *link != i) {
        int c = key_cmp(&h->b[i], &h->b[*link]);
        link = c < 0 ? &h->b[*link].l : &h->b[*link].r;
    }
    if (*link == i) *link = t_merge(h, h->b[i].l, h->b[i].r);
}

/* the first free block of the pool with size >= size, lowest address among equals */
static int32_t t_lower_bound(const heap *h, bool small, int64_t size)
{
    block k = {size, -1, -1, -1, true, small, -1, -1, 0};
    int32_t t = h->root, best = -1;
    while (t >= 0) {
        if (key_cmp(&h->b[t], &k) >= 0) {
            best = t;
            t = h->b[t].l;
        } else {
            t = h->b[t].r;
        }
    }
    return best >= 0 && h->b[best].small == small ? best : -1;
}

static int32_t new_block(heap *h, int64_t size, int64_t addr, bool small)
{
    if (h->n == h->cap) return -1; /* cannot happen: vc_alloc_replay sizes the array */
    h->b[h->n] = (block){size, addr, -1, -1, false, small, -1, -1, 0};
    return (int32_t)h->n++;
}

static void push_free(heap *h, int32_t i)
{
    h->b[i].free = true;
    t_insert(h, i);
}

static void drop_free(heap *h, int32_t i)
{
    t_erase(h, i);
    h->b[i].free = false;
}

static int32_t h_malloc(heap *h, int64_t size)
{
    bool small = size <= SMALL_SIZE;
    int32_t best = t_lower_bound(h, small, size);
    if (best >= 0) {
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
        push_free(h, r);
    }
    return best;
}

static void h_free(heap *h, int32_t i)
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
        t_erase(h, p);
        h->b[p].size += B->size;
        h->b[p].next = B->next;
        if (B->next >= 0) h->b[B->next].prev = p;
        t_insert(h, p);
        return;
    }
    push_free(h, i);
}

int64_t vc_alloc_replay(const vc_alloc_event *ev, size_t n, vc_alloc_scratch *sc)
{
    /* each malloc makes at most two blocks (a segment and a remainder): size
     * the arrays once, and keep them in sc for the next replay */
    size_t nm = 0;
    for (size_t i = 0; i < n; i++) nm += ev[i].block < 0;
    if (sc->cap < 2 * nm + 1) {
        block *nb = realloc(sc->blocks, (2 * nm + 1) * sizeof *nb);
        if (!nb) return -1;
        sc->blocks = nb;
        sc->cap = 2 * nm + 1;
    }
    if (sc->nblk < n + 1) {
        int32_t *nk = realloc(sc->blk, (n + 1) * sizeof *nk);
        if (!nk) return -1;
        sc->blk = nk;
        sc->nblk = n + 1;
    }
    heap h = {sc->blocks, 0, sc->cap, -1, 12345u, 0};
    int32_t *blk = sc->blk;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].size > (INT64_C(1) << 61)) return -1; /* beyond any device: the caller reports overflow */
        if (ev[i].block < 0) {
            if ((blk[i] = h_malloc(&h, ev[i].size)) < 0) return -1;
        } else {
            h_free(&h, blk[ev[i].block]);
        }
    }
    return h.reserved;
}

void vc_alloc_scratch_free(vc_alloc_scratch *sc)
{
    free(sc->blocks);
    free(sc->blk);
    *sc = (vc_alloc_scratch){0};
}
