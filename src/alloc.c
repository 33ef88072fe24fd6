/*
 * alloc.c — a model of PyTorch's CUDA caching allocator, for `reserved`.
 *
 * Follows c10/cuda/CUDACachingAllocator.cpp with default settings: requests
 * of at most 1 MiB come from the small pool (2 MiB segments), larger ones
 * from the large pool (20 MiB segments for requests under 10 MiB, else the
 * request rounded up to 2 MiB); best fit among cached free blocks of the
 * pool; a block is split when the remainder is >= 512 B (small pool) or
 * > 1 MiB (large pool); freed blocks merge with free neighbours; segments
 * are never returned (no empty_cache, no OOM retry). One stream.
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
    int64_t size;
    int32_t prev, next; /* neighbours in the segment, -1 */
    bool free, small;
} block;

typedef struct {
    block *b;
    size_t n, cap;
    int32_t *freelist; /* indices of free blocks (unordered) */
    size_t nfree, capfree;
    int64_t reserved;
} heap;

static int32_t new_block(heap *h, int64_t size, bool small)
{
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 256;
        block *nb = realloc(h->b, nc * sizeof *nb);
        if (!nb) return -1;
        h->b = nb;
        h->cap = nc;
    }
    h->b[h->n] = (block){size, -1, -1, false, small};
    return (int32_t)h->n++;
}

static int push_free(heap *h, int32_t i)
{
    if (h->nfree == h->capfree) {
        size_t nc = h->capfree ? h->capfree * 2 : 256;
        int32_t *nf = realloc(h->freelist, nc * sizeof *nf);
        if (!nf) return -1;
        h->freelist = nf;
        h->capfree = nc;
    }
    h->freelist[h->nfree++] = i;
    h->b[i].free = true;
    return 0;
}

static void drop_free(heap *h, int32_t i)
{
    for (size_t k = 0; k < h->nfree; k++)
        if (h->freelist[k] == i) {
            h->freelist[k] = h->freelist[--h->nfree];
            break;
        }
    h->b[i].free = false;
}

static int32_t h_malloc(heap *h, int64_t size)
{
    bool small = size <= SMALL_SIZE;
    int32_t best = -1;
    for (size_t k = 0; k < h->nfree; k++) {
        int32_t i = h->freelist[k];
        if (h->b[i].small != small || h->b[i].size < size) continue;
        if (best < 0 || h->b[i].size < h->b[best].size) best = i;
    }
    if (best >= 0) {
        drop_free(h, best);
    } else {
        int64_t seg = small ? SMALL_BUFFER : size < MIN_LARGE_ALLOC ? LARGE_BUFFER
                                                                    : (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
        best = new_block(h, seg, small);
        if (best < 0) return -1;
        h->reserved += seg;
    }
    int64_t rem = h->b[best].size - size;
    if (small ? rem >= 512 : rem > SMALL_SIZE) {
        int32_t r = new_block(h, rem, small);
        if (r < 0) return -1;
        block *B = &h->b[best];
        B->size = size;
        h->b[r].prev = best;
        h->b[r].next = B->next;
        if (B->next >= 0) h->b[B->next].prev = r;
        B->next = r;
        if (push_free(h, r)) return -1;
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
        h->b[p].size += B->size;
        h->b[p].next = B->next;
        if (B->next >= 0) h->b[B->next].prev = p;
        return;
    }
    push_free(h, i);
}

int64_t vc_alloc_replay(const vc_alloc_event *ev, size_t n)
{
    heap h = {0};
    int32_t *blk = malloc((n + 1) * sizeof *blk);
    int64_t peak = -1;
    if (!blk) return -1;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].block < 0) {
            blk[i] = h_malloc(&h, ev[i].size);
            if (blk[i] < 0) goto out;
        } else {
            h_free(&h, blk[ev[i].block]);
        }
    }
    peak = h.reserved;
out:
    free(blk);
    free(h.b);
    free(h.freelist);
    return peak;
}
