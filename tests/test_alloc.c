/*
 * test_alloc.c — the caching allocator model (src/engine/alloc.c) on hand-made
 * request streams. Expected values follow the rules of PyTorch's
 * c10/cuda/CUDACachingAllocator.cpp (default settings), worked out by hand
 * in the comments: requests <= 1 MiB use the small pool (2 MiB segments,
 * split when >= 512 B remain); larger ones the large pool (a 20 MiB segment
 * below 10 MiB, else the request rounded up to 2 MiB; split when > 1 MiB
 * remains); best fit by size; freed blocks merge with free neighbours;
 * segments are kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine.h"

#define MiB (INT64_C(1) << 20)

typedef struct {
    vc_alloc_event ev[8192];
    size_t n;
} stream;

/* a malloc; returns its event index, for the free */
static int32_t M(stream *s, int64_t size)
{
    s->ev[s->n] = (vc_alloc_event){size, -1};
    return (int32_t)s->n++;
}

static void F(stream *s, int32_t m) { s->ev[s->n++] = (vc_alloc_event){s->ev[m].size, m}; }

static int64_t replay(const stream *s)
{
    vc_alloc_scratch sc = {0};
    int64_t r = vc_alloc_replay(s->ev, s->n, 0, &sc);
    vc_alloc_scratch_free(&sc);
    return r;
}

static void test_small_pool(void **state)
{
    (void)state;
    static stream s;
    s.n = 0;
    M(&s, 512); /* one 2 MiB small segment */
    assert_int_equal(replay(&s), 2 * MiB);
    /* 4096 blocks of 512 B fill it exactly (the last takes the whole remainder) */
    for (int i = 1; i < 4096; i++) M(&s, 512);
    assert_int_equal(replay(&s), 2 * MiB);
    M(&s, 512); /* the 4097th needs a second segment */
    assert_int_equal(replay(&s), 4 * MiB);
}

static void test_large_pool(void **state)
{
    (void)state;
    static stream s;
    s.n = 0;
    /* 2 MiB requests (large pool, under 10 MiB): 20 MiB segments, split while more than 1 MiB remains: ten per segment */
    for (int i = 0; i < 10; i++) M(&s, 2 * MiB);
    assert_int_equal(replay(&s), 20 * MiB);
    M(&s, 2 * MiB);
    assert_int_equal(replay(&s), 40 * MiB);
    /* 11 MiB: its own segment, rounded up to 12 MiB; the 1 MiB left is not split off */
    s.n = 0;
    int32_t a = M(&s, 11 * MiB);
    assert_int_equal(replay(&s), 12 * MiB);
    /* 1 MiB is a small-pool request: the freed 12 MiB large block does not serve it, a new 2 MiB segment does */
    F(&s, a);
    M(&s, 1 * MiB);
    assert_int_equal(replay(&s), 14 * MiB);
}

static void test_best_fit(void **state)
{
    (void)state;
    static stream s;
    s.n = 0;
    int32_t a = M(&s, 12 * MiB); /* segment 12 MiB */
    int32_t b = M(&s, 16 * MiB); /* segment 16 MiB: 28 reserved */
    F(&s, b);
    F(&s, a);
    /* 11.5 MiB (rounded to 512 B): the 12 MiB block is the best fit, not the 16 MiB one */
    M(&s, 11 * MiB + MiB / 2);
    M(&s, 15 * MiB); /* takes the 16 MiB block */
    assert_int_equal(replay(&s), 28 * MiB);
    M(&s, 11 * MiB); /* nothing free: a new 12 MiB segment */
    assert_int_equal(replay(&s), 40 * MiB);
    /* (first fit would have given the 16 MiB block to the first request and a new segment to the second) */
}

static void test_merge_and_pools(void **state)
{
    (void)state;
    static stream s;
    s.n = 0;
    int32_t x = M(&s, 1 * MiB), y = M(&s, 1 * MiB); /* both small: one 2 MiB segment */
    assert_int_equal(replay(&s), 2 * MiB);
    F(&s, x);
    F(&s, y); /* merged back into one free 2 MiB small block */
    M(&s, 2 * MiB); /* 2 MiB is a large-pool request: small blocks never serve it -> a 20 MiB segment */
    assert_int_equal(replay(&s), 22 * MiB);
    M(&s, 1 * MiB);
    M(&s, 1 * MiB); /* both fit the merged small block */
    assert_int_equal(replay(&s), 22 * MiB);
    /* large pool: free two neighbours in either order, they merge and serve a request of their sum */
    s.n = 0;
    int32_t p = M(&s, 4 * MiB), q = M(&s, 4 * MiB), r = M(&s, 4 * MiB); /* one 20 MiB segment, 8 MiB left */
    (void)r;
    F(&s, q);
    F(&s, p);
    M(&s, 8 * MiB); /* p+q merged (8 MiB, lower address) or the 8 MiB tail: either way no new segment */
    M(&s, 8 * MiB);
    assert_int_equal(replay(&s), 20 * MiB);
    M(&s, 4 * MiB);
    assert_int_equal(replay(&s), 40 * MiB);
}

/* A replay reuses its scratch: the same stream gives the same answer after a different one.
 * s1: 300 small requests of k * 49,664 B (k = i % 7 + 1, at most 347,648 B: small pool), each
 *   freed at once unless i % 3 == 0. A block freed before the next request merges back into
 *   its segment's free tail, so only the 100 kept blocks occupy space, packed best-fit into
 *   2 MiB segments: k cycles 1, 4, 7, 3, 6, 2, 5 over the kept ones (28 units per 7), 14 cycles
 *   + (1 + 4) = 397 units = 19,716,608 B = 18.8 MiB, which needs at least 10 segments; best
 *   fit fills them that tightly: 20 MiB.
 * s2: 50 large requests of 3, 6, 9, 12, 15 MiB in turn, none freed. Per round of five:
 *   3 MiB opens a 20 MiB segment (< 10 MiB requests), split, 17 MiB left; 6 MiB takes it
 *   (11 left), 9 MiB too (2 left, too small for any later request); 12 MiB gets a segment
 *   of its own size (>= 10 MiB: rounded up to 2 MiB); 15 MiB a 16 MiB segment, not split
 *   (the 1 MiB remainder is not > 1 MiB). 48 MiB a round, 10 rounds: 480 MiB. */
static void test_scratch_reuse(void **state)
{
    (void)state;
    static stream s1, s2;
    s1.n = s2.n = 0;
    for (int i = 0; i < 300; i++) {
        int32_t a = M(&s1, (i % 7 + 1) * 512 * 97);
        if (i % 3) F(&s1, a);
    }
    for (int i = 0; i < 50; i++) M(&s2, (i % 5 + 1) * 3 * MiB);
    vc_alloc_scratch sc = {0};
    int64_t r1 = vc_alloc_replay(s1.ev, s1.n, 0, &sc);
    int64_t r2 = vc_alloc_replay(s2.ev, s2.n, 0, &sc);
    assert_int_equal(vc_alloc_replay(s1.ev, s1.n, 0, &sc), r1);
    assert_int_equal(vc_alloc_replay(s2.ev, s2.n, 0, &sc), r2);
    vc_alloc_scratch_free(&sc);
    assert_int_equal(replay(&s1), r1);
    assert_int_equal(replay(&s2), r2);
    assert_int_equal(r1, 20 * MiB);
    assert_int_equal(r2, 480 * MiB);
}

/* Replays that share their first events start from the state kept after
 * them: every answer must equal a replay from scratch. The tails free blocks
 * malloc'ed in the prefix, so the kept block numbers are used. */
static void test_prefix_snapshot(void **state)
{
    (void)state;
    static stream pre, s;
    pre.n = 0;
    int32_t keep[40];
    for (int i = 0; i < 40; i++) keep[i] = M(&pre, (i % 4 == 0 ? 3 * MiB : 4096 * (i % 3 + 1)));
    F(&pre, keep[5]);
    F(&pre, keep[8]); /* free blocks of both pools in the kept state */
    vc_alloc_scratch sc = {0};
    for (int round = 0; round < 2; round++)
        for (int b = 1; b <= 64; b *= 2) {
            s = pre;
            for (int i = 0; i < 40; i++)
                if (i != 5 && i != 8 && i % 3 == 0) F(&s, keep[i]);
            int32_t a[20];
            for (int i = 0; i < 20; i++) a[i] = M(&s, (int64_t)b * 512 * (i + 1));
            for (int i = 0; i < 20; i += 2) F(&s, a[i]);
            for (int i = 0; i < 10; i++) M(&s, (int64_t)b * 1024 * (i + 3));
            int64_t fresh = replay(&s);
            /* segments are never given back, so the reserve cannot fall below the prefix's */
            assert_true(fresh >= replay(&pre));
            assert_int_equal(vc_alloc_replay(s.ev, s.n, pre.n, &sc), fresh);
        }
    /* another prefix length replaces the kept state */
    assert_int_equal(vc_alloc_replay(s.ev, s.n, 3, &sc), replay(&s));
    assert_int_equal(vc_alloc_replay(s.ev, s.n, 3, &sc), replay(&s));
    /* a prefix longer than the stream is the whole stream */
    assert_int_equal(vc_alloc_replay(pre.ev, pre.n, pre.n + 100, &sc), replay(&pre));
    vc_alloc_scratch_free(&sc);
}

/* The two pools never share a block, so the engine replays each on its own
 * requests (engine.c, replay_reserved): on a mixed stream, the reserve of
 * the whole equals the sum of each pool's replay. */
static void test_pools_independent(void **state)
{
    (void)state;
    static stream all, pool[2];
    all.n = pool[0].n = pool[1].n = 0;
    int32_t live[64], map[8192];
    int nlive = 0;
    uint32_t x = 12345;
    for (int i = 0; i < 3000; i++) {
        x = x * 1664525u + 1013904223u;
        if (nlive && (x >> 28) < 6) { /* free a random live block */
            int k = (int)((x >> 8) % (uint32_t)nlive);
            int32_t m = live[k];
            live[k] = live[--nlive];
            stream *p = &pool[vc_alloc_small(all.ev[m].size)];
            p->ev[p->n++] = (vc_alloc_event){all.ev[m].size, map[m]};
            F(&all, m);
        } else if (nlive < 64) { /* 512 B .. 3 MiB, both pools */
            int64_t size = (int64_t)((x >> 4) % 6144 + 1) * 512;
            stream *p = &pool[vc_alloc_small(size)];
            map[all.n] = (int32_t)p->n;
            p->ev[p->n++] = (vc_alloc_event){size, -1};
            live[nlive++] = M(&all, size);
        }
    }
    int64_t r = replay(&all);
    assert_true(r > 0 && pool[0].n > 100 && pool[1].n > 100);
    assert_int_equal(r, replay(&pool[0]) + replay(&pool[1]));
}

/* The small pool's classes are found through a bitmap of 64-bit words: a
 * request must find a free block in a later word (a whole free 2 MiB
 * segment is the last class of the last word), and sizes that are not
 * multiples of 512 (the engine rounds every size) are refused. */
static void test_small_class_edges(void **state)
{
    (void)state;
    static stream s;
    s.n = 0;
    int32_t a = M(&s, 1 * MiB), b = M(&s, 1 * MiB); /* fill one 2 MiB segment */
    F(&s, a);
    F(&s, b);                       /* one free 2 MiB block: class 4095, word 63 */
    M(&s, 512);                     /* class 0, word 0: found in word 63, split */
    M(&s, 1 * MiB);                 /* the rest (2 MiB - 512) still serves 1 MiB */
    assert_int_equal(replay(&s), 2 * MiB);
    M(&s, 1 * MiB);                 /* 1 MiB - 512 is left: too small */
    assert_int_equal(replay(&s), 4 * MiB);
    s.n = 0;
    M(&s, 1000);
    assert_int_equal(replay(&s), -1);
    s.n = 0;
    M(&s, 0);
    assert_int_equal(replay(&s), -1);
}

/* A reference allocator written plainly from PyTorch's rules
 * (c10/cuda/CUDACachingAllocator.cpp at pytorch/pytorch@eb42ad6eca0ce61e7c581212b4bf32f991425571,
 * the commit alloc.c follows): get_free_block takes the first block of the
 * pool at or after the request in BlockComparatorSize's order (size, then
 * address), refused when oversized under max_split_size; alloc_block's
 * segment is get_allocation_size's (2 MiB small, 20 MiB below 10 MiB, else
 * rounded up to 2 MiB) at the next address; should_split splits a small
 * block when >= 512 B remain, a large one when more than 1 MiB remains and
 * the request is below max_split_size; free_block merges with free
 * neighbours (try_merge_blocks). Every free block is scanned for the best
 * fit (no classes, no heaps, no snapshot), so random streams replayed by
 * both must give the same reserve. */
typedef struct {
    int64_t size, addr;
    int32_t prev, next;
    bool free, small;
} rblock;

static int64_t reference(const vc_alloc_event *ev, size_t n, int64_t max_split)
{
    static rblock b[2 * 8192 + 1];
    static int32_t at[8192];
    int32_t nb = 0;
    int64_t reserved = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t size = ev[i].size;
        if (ev[i].block >= 0) { /* free_block */
            int32_t k = at[ev[i].block], nx = b[k].next, pv = b[k].prev;
            b[k].free = true;
            if (nx >= 0 && b[nx].free) {
                b[k].size += b[nx].size;
                b[k].next = b[nx].next;
                if (b[k].next >= 0) b[b[k].next].prev = k;
                b[nx].free = false;
                b[nx].size = -1; /* gone */
            }
            if (pv >= 0 && b[pv].free) {
                b[pv].size += b[k].size;
                b[pv].next = b[k].next;
                if (b[pv].next >= 0) b[b[pv].next].prev = pv;
                b[k].free = false;
                b[k].size = -1;
            }
            continue;
        }
        bool small = size <= MiB;
        int32_t best = -1;
        for (int32_t k = 0; k < nb; k++) /* lower_bound in (size, address) order */
            if (b[k].free && b[k].small == small && b[k].size >= size &&
                (best < 0 || b[k].size < b[best].size || (b[k].size == b[best].size && b[k].addr < b[best].addr)))
                best = k;
        if (best >= 0 && max_split > 0 &&
            ((size < max_split && b[best].size >= max_split) || (size >= max_split && b[best].size >= size + 20 * MiB)))
            best = -1; /* "Do not return an oversized block" */
        if (best < 0) { /* alloc_block */
            int64_t seg = small ? 2 * MiB : size < 10 * MiB ? 20 * MiB : (size + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
            b[nb] = (rblock){seg, reserved, -1, -1, true, small};
            best = nb++;
            reserved += seg;
        }
        b[best].free = false;
        int64_t rem = b[best].size - size;
        if (small ? rem >= 512 : rem > MiB && (max_split <= 0 || size < max_split)) { /* should_split */
            b[nb] = (rblock){rem, b[best].addr + size, best, b[best].next, true, small};
            if (b[best].next >= 0) b[b[best].next].prev = nb;
            b[best].next = nb++;
            b[best].size = size;
        }
        at[i] = best;
    }
    return reserved;
}

/* random events appended to s up to n (at most 96 live blocks, freeing only
 * its own): sizes from 512 B to `top` bytes, mostly small, many repeated (as
 * a model's are) */
static void random_stream(stream *s, size_t n, uint32_t seed, int64_t top)
{
    static const int64_t common[] = {512, 2048, 131072, 1048576, 2097152, 3145728, 20971520, 41943040};
    int32_t live[96];
    int nlive = 0;
    uint32_t x = seed;
    while (s->n < n) {
        x = x * 1664525u + 1013904223u;
        if (nlive && ((x >> 28) < 7 || nlive == 96)) {
            int k = (int)((x >> 8) % (uint32_t)nlive);
            F(s, live[k]);
            live[k] = live[--nlive];
            continue;
        }
        uint32_t r = (x >> 12) & 15;
        int64_t size = r < 6 ? common[(x >> 4) % 8]
                     : r < 11 ? (int64_t)((x >> 4) % 2048 + 1) * 512
                              : (int64_t)((x >> 4) % (uint32_t)(top / 512) + 1) * 512;
        if (size > top) size = top;
        live[nlive++] = M(s, size);
    }
}

/* stream s with each malloc's size replaced by its index into bytes[] (replay.c's streams name a
 * storage, vc_alloc_scratch.sizes holds the bytes): into w and bytes */
static void indexed(const stream *s, stream *w, int64_t *bytes)
{
    w->n = s->n;
    for (size_t i = 0; i < s->n; i++) {
        bytes[i] = s->ev[i].block < 0 ? s->ev[i].size : -1; /* a free's entry is never read */
        w->ev[i] = (vc_alloc_event){(int64_t)i, s->ev[i].block};
    }
}

/* s's requests of each pool into pool[0] (large) and pool[1] (small), the frees naming their mallocs there */
static void split_pools(const stream *s, stream pool[2])
{
    int32_t map[8192];
    pool[0].n = pool[1].n = 0;
    for (size_t i = 0; i < s->n; i++) {
        const vc_alloc_event *e = &s->ev[i];
        stream *p = &pool[vc_alloc_small(e->size)];
        if (e->block < 0) map[i] = (int32_t)p->n;
        p->ev[p->n++] = (vc_alloc_event){e->size, e->block < 0 ? -1 : map[e->block]};
    }
}

/* alloc.c's classes, heaps, pool-specialised loops and kept prefix state
 * against the reference, on random streams: mixed pools, one pool's
 * requests under sc.pool, max_split_size_mb, and a shared prefix; the
 * sizes in the events and read through vc_alloc_scratch.sizes */
static void test_reference(void **state)
{
    (void)state;
    static stream s, t, pool[2];
    for (uint32_t seed = 1; seed <= 24; seed++) {
        s.n = 0;
        random_stream(&s, 3000, seed, seed % 3 ? 48 * MiB : 400 * MiB);
        int64_t want = reference(s.ev, s.n, 0);
        assert_true(want > 0);
        assert_int_equal(replay(&s), want);
        /* each pool alone, replayed with the pool named */
        split_pools(&s, pool);
        int64_t sum = 0;
        for (int q = 0; q < 2; q++) {
            vc_alloc_scratch sc = {0};
            sc.pool = q ? VC_POOL_SMALL : VC_POOL_LARGE;
            int64_t r = vc_alloc_replay(pool[q].ev, pool[q].n, 0, &sc);
            vc_alloc_scratch_free(&sc);
            assert_int_equal(r, reference(pool[q].ev, pool[q].n, 0));
            sum += r;
            static stream w;
            static int64_t bytes[8192];
            indexed(&pool[q], &w, bytes);
            sc.sizes = bytes;
            assert_int_equal(vc_alloc_replay(w.ev, w.n, 0, &sc), r);
            vc_alloc_scratch_free(&sc);
        }
        assert_int_equal(sum, want);
        /* max_split_size_mb: 24 MiB and 200 MiB */
        for (int k = 0; k < 2; k++) {
            int64_t ms = k ? 200 * MiB : 24 * MiB;
            vc_alloc_scratch sc = {0};
            sc.max_split = ms;
            int64_t r = vc_alloc_replay(s.ev, s.n, 0, &sc);
            vc_alloc_scratch_free(&sc);
            assert_int_equal(r, reference(s.ev, s.n, ms));
            static stream w;
            static int64_t bytes[8192];
            indexed(&s, &w, bytes);
            sc.sizes = bytes;
            assert_int_equal(vc_alloc_replay(w.ev, w.n, 0, &sc), r);
            vc_alloc_scratch_free(&sc);
        }
        /* a prefix shared with another stream: the kept state serves both */
        size_t pre = 1000;
        memcpy(t.ev, s.ev, pre * sizeof *t.ev);
        t.n = pre;
        random_stream(&t, 3000, seed + 1000, 48 * MiB);
        vc_alloc_scratch sc = {0};
        for (int round = 0; round < 2; round++) {
            assert_int_equal(vc_alloc_replay(s.ev, s.n, pre, &sc), want);
            assert_int_equal(vc_alloc_replay(t.ev, t.n, pre, &sc), reference(t.ev, t.n, 0));
        }
        vc_alloc_scratch_free(&sc);
        /* fixed_frees (replay.c's streams): streams after the same prefix that free the same of its
         * blocks, every other one live at its end, each after its own random events; the kept state
         * leaves out the others (compact_snapshot, from the second replay on) */
        static stream u[3];
        bool live[8192] = {false};
        for (size_t i = 0; i < pre; i++) {
            if (s.ev[i].block < 0) live[i] = true;
            else live[s.ev[i].block] = false;
        }
        int32_t freed[512];
        int nf = 0, k = 0;
        for (size_t i = 0; i < pre && nf < 512; i++)
            if (live[i] && k++ % 2 == 0) freed[nf++] = (int32_t)i;
        assert_true(nf > 1);
        for (int j = 0; j < 3; j++) {
            memcpy(u[j].ev, s.ev, pre * sizeof *u[j].ev);
            u[j].n = pre;
            for (int f = 0; f < nf; f++) {
                random_stream(&u[j], u[j].n + 1 + (size_t)((seed * 7 + (uint32_t)j * 13 + (uint32_t)f) % 60),
                              seed * 100 + (uint32_t)j * 10000 + (uint32_t)f, seed % 2 ? 48 * MiB : 2 * MiB);
                F(&u[j], freed[f]);
            }
        }
        vc_alloc_scratch fx = {0};
        fx.fixed_frees = true;
        for (int round = 0; round < 2; round++)
            for (int j = 0; j < 3; j++) assert_int_equal(vc_alloc_replay(u[j].ev, u[j].n, pre, &fx), reference(u[j].ev, u[j].n, 0));
        vc_alloc_scratch_free(&fx);
        /* the same through sizes[], as replay.c replays its pools: a different array at each replay */
        static stream w[3];
        static int64_t bytes[3][8192];
        for (int j = 0; j < 3; j++) indexed(&u[j], &w[j], bytes[j]);
        fx.fixed_frees = true;
        for (int round = 0; round < 2; round++)
            for (int j = 0; j < 3; j++) {
                fx.sizes = bytes[j];
                assert_int_equal(vc_alloc_replay(w[j].ev, w[j].n, pre, &fx), reference(u[j].ev, u[j].n, 0));
            }
        vc_alloc_scratch_free(&fx);
    }
}

/* alloc.c bounded: a replay given vc_alloc_scratch.limit returns the reserve
 * the reference gives, or -3 only where that reserve is at most the limit;
 * each pool's requests alone (random events with large-pool requests up
 * to 8 MiB, where the bound applies, or to 48 MiB, where a later request of
 * 10 MiB or more refuses it, then a pass that holds 800 blocks and frees
 * them), limits from half the reserve to 4 times it, without and with a
 * kept prefix (replayed twice: the state and the counts kept). It fails
 * with live_bounds' counts divided by 4 (an unsound bound). */
static void test_bounded(void **state)
{
    (void)state;
    static stream s, pool[2];
    int stopped[2] = {0, 0}, exact_under[2] = {0, 0}, bounds[2] = {0, 0};
    for (uint32_t seed = 1; seed <= 16; seed++) {
        s.n = 0;
        random_stream(&s, 3000, seed, seed % 2 ? 8 * MiB : 48 * MiB);
        /* then a forward and backward pass: up to 800 blocks held (segments opened late), freed in reverse */
        int32_t held[800];
        int nh = 0;
        uint32_t x = seed;
        while (nh < 800) {
            x = x * 1664525u + 1013904223u;
            int32_t m = M(&s, (int64_t)((x >> 8) % 2048 + 1) * (seed % 2 ? 2048 : 512));
            if ((x >> 29) == 0) F(&s, m);
            else held[nh++] = m;
        }
        while (nh) F(&s, held[--nh]);
        split_pools(&s, pool);
        for (int q = 0; q < 2; q++) {
            int64_t want = reference(pool[q].ev, pool[q].n, 0);
            assert_true(pool[q].n >= 1000 && want > 0);
            /* vc_alloc_bound (no prefix: no state needed): none, or at least the reserve */
            vc_alloc_scratch sb = {0};
            sb.pool = q ? VC_POOL_SMALL : VC_POOL_LARGE;
            sb.gen = 1;
            int64_t ub = vc_alloc_bound(pool[q].ev, pool[q].n, 0, &sb);
            assert_true(ub == -1 || ub >= want);
            bounds[q] += ub >= 0;
            vc_alloc_scratch_free(&sb);
            const int64_t lim[] = {want / 2,          want - 64 * MiB, want - 4 * MiB, want - 2 * MiB, want - 512,
                                   want,              want + 2 * MiB,  want + 64 * MiB, 4 * want};
            for (size_t l = 0; l < sizeof lim / sizeof *lim; l++)
                for (size_t pre = 0; pre <= 400; pre += 400) {
                    vc_alloc_scratch sc = {0};
                    sc.pool = q ? VC_POOL_SMALL : VC_POOL_LARGE;
                    sc.limit = lim[l];
                    sc.gen = 1;
                    for (int round = 0; round < 2; round++) {
                        int64_t r = vc_alloc_replay(pool[q].ev, pool[q].n, pre, &sc);
                        if (r == -3) {
                            assert_true(want <= lim[l]); /* fails where the bound is not one */
                            stopped[q]++;
                        } else {
                            assert_int_equal(r, want);
                            exact_under[q] += want <= lim[l];
                        }
                    }
                    vc_alloc_scratch_free(&sc);
                }
        }
    }
    /* both pools stop somewhere, and not everywhere */
    assert_true(stopped[0] > 0 && stopped[1] > 0);
    /* the large pool also runs to the end under its limit; the small pool's windows (window_bounds) end
     * these streams with no malloc left, which opens no segment: every small-pool replay under its limit stops */
    assert_true(exact_under[0] > 0);
    assert_true(bounds[0] > 0 && bounds[1] > 0); /* the large pool's: the streams of requests up to 8 MiB */
}

/* alloc.c window_bounds on a fragmented small pool: 1,024 blocks of 64 KiB
 * (32 segments), every other one freed (holes of 64 KiB between live
 * blocks), then 512 of 128 KiB, none of which fits a hole: 32 more
 * segments, with 32 MiB of the first blocks and 64 MiB of the second live.
 * A bound from the live bytes alone ((V + 0 x F) / (2 MiB - x + 512): 52
 * segments) is under the 64 the reference opens: a -3 at a limit under the
 * reserve fails here. The same bound with the holes (the frees F) stops at
 * twice the reserve, where live_bounds' count (about 1,000 live blocks)
 * does not; with a kept prefix too (the frees of its blocks are not F).
 * vc_alloc_bound's bound of it, and of the same holes in the large pool.
 * Then the bound kept for a stream's later replays (alloc.c within_kept). */
static void test_bounded_holes(void **state)
{
    (void)state;
    static stream s;
    s.n = 0;
    int32_t a[1024];
    for (int i = 0; i < 1024; i++) a[i] = M(&s, 64 * 1024);
    for (int i = 0; i < 1024; i += 2) F(&s, a[i]);
    for (int i = 0; i < 512; i++) M(&s, 128 * 1024);
    int64_t want = reference(s.ev, s.n, 0);
    assert_int_equal(want, 64 * 2 * MiB); /* 32 segments for each phase */
    vc_alloc_scratch sb = {0};
    sb.pool = VC_POOL_SMALL;
    sb.gen = 1;
    int64_t ub = vc_alloc_bound(s.ev, s.n, 0, &sb); /* 85 segments: at least the 64, and under live_bounds' count */
    assert_true(ub >= want && ub < 2 * want);
    vc_alloc_scratch_free(&sb);
    /* the large pool's: 400 blocks of 2 MiB (40 segments of 20 MiB), every other one freed, then 200 of 4 MiB (40
     * more); the live bytes alone bound 76 segments */
    static stream g;
    g.n = 0;
    int32_t b2[400];
    for (int i = 0; i < 400; i++) b2[i] = M(&g, 2 * MiB);
    for (int i = 0; i < 400; i += 2) F(&g, b2[i]);
    for (int i = 0; i < 200; i++) M(&g, 4 * MiB);
    int64_t want_g = reference(g.ev, g.n, 0);
    assert_int_equal(want_g, 80 * 20 * MiB);
    sb.pool = VC_POOL_LARGE;
    sb.gen = 1;
    ub = vc_alloc_bound(g.ev, g.n, 0, &sb);
    assert_true(ub >= want_g && ub < 2 * want_g);
    vc_alloc_scratch_free(&sb);
    const int64_t lim[] = {want - 2 * MiB, want - 512, want + 2 * MiB, 2 * want};
    for (size_t pre = 0; pre <= 400; pre += 400)
        for (size_t l = 0; l < sizeof lim / sizeof *lim; l++) {
            vc_alloc_scratch sc = {0};
            sc.pool = VC_POOL_SMALL;
            sc.limit = lim[l];
            sc.gen = 1;
            int64_t r = vc_alloc_replay(s.ev, s.n, pre, &sc);
            if (lim[l] < want) assert_int_equal(r, want);
            if (lim[l] == 2 * want) assert_int_equal(r, -3);
            assert_true(r == -3 || r == want);
            vc_alloc_scratch_free(&sc);
        }
    /* the bound kept from one replay serves a later one of the same stream only with no larger request (alloc.c
     * within_kept): the same holes with 256 blocks of 256 KiB then 128 requests, at 384 KiB (stopped at twice
     * its reserve, its bound kept), then at 1 MiB just under its reserve (exact; the kept bound, made for 384 KiB,
     * would stop it), then at 256 KiB (fit the holes: sound either way) */
    s.n = 0;
    for (int i = 0; i < 256; i++) a[i] = M(&s, 256 * 1024);
    for (int i = 0; i < 256; i += 2) F(&s, a[i]);
    for (int i = 0; i < 128; i++) M(&s, 384 * 1024);
    static stream w;
    static int64_t bytes[8192];
    indexed(&s, &w, bytes);
    const int64_t second[] = {384 * 1024, MiB, 256 * 1024}, lim2[] = {2, 0, 2};
    vc_alloc_scratch sc = {0};
    sc.pool = VC_POOL_SMALL;
    sc.gen = 1;
    sc.sizes = bytes;
    for (int v = 0; v < 3; v++) {
        for (size_t i = 256 + 128; i < s.n; i++) bytes[i] = second[v], s.ev[i].size = second[v];
        want = reference(s.ev, s.n, 0);
        sc.limit = lim2[v] ? lim2[v] * want : want - 2 * MiB;
        int64_t r = vc_alloc_replay(w.ev, w.n, 0, &sc);
        if (v == 0) assert_int_equal(r, -3);
        else if (v == 1) assert_int_equal(r, want);
        else assert_true(r == -3 || r == want);
    }
    vc_alloc_scratch_free(&sc);
}

static void test_too_large(void **state)
{
    (void)state;
    static stream s;
    s.n = 0;
    M(&s, (INT64_C(1) << 61) + 512); /* past any device */
    assert_int_equal(replay(&s), -2);
    /* each request is allowed, but their segments add up past 2^63 */
    s.n = 0;
    for (int i = 0; i < 5; i++) M(&s, INT64_C(1) << 61);
    assert_int_equal(replay(&s), -2);
    s.n = 0;
    for (int i = 0; i < 3; i++) M(&s, INT64_C(1) << 61);
    assert_int_equal(replay(&s), 3 * (INT64_C(1) << 61)); /* 2^61 is a multiple of 2 MiB: segments of exactly that */
}

/* vc__plan_release_replay (replay.c; sweep.c lets go of the plans it no longer replays): the plan's
 * reserve at each batch afterwards is the one it had kept state for, and a fresh plan's. Twenty
 * Linear(512, 512) then twenty GELU on [512, 512] fp32 inputs: 1 MiB of activation per sample, the
 * small pool's at batch 1 and the large pool's from batch 2 (kSmallSize, 1 MiB), so both pools'
 * streams are let go and rebuilt. */
static void test_release_replay(void **state)
{
    (void)state;
    static const char json[] = "{\"input\":[512,512],\"layers\":[{\"type\":\"Linear\",\"in_features\":512,"
                               "\"out_features\":512,\"repeat\":20},{\"type\":\"GELU\",\"repeat\":20}]}";
    vc_model *m = NULL;
    vc_error err;
    assert_int_equal(vc_model_load_string(json, strlen(json), "release.json", &m, &err), VC_OK);
    vc_options o;
    vc_options_init(&o);
    for (int64_t batch = 1; batch <= 3; batch++) {
        o.batch = batch;
        vc_plan *p = NULL, *q = NULL;
        assert_int_equal(vc_plan_build(m, &o, &p, &err), VC_OK);
        assert_int_equal(vc_plan_build(m, &o, &q, &err), VC_OK);
        vc_sim a, b, c;
        vc_grid *g = vc_grid_new(), *h = vc_grid_new();
        assert_non_null(g);
        assert_non_null(h);
        assert_int_equal(vc_plan_simulate(p, batch, &a, NULL, &err), VC_OK);
        vc__plan_release_replay(p);
        vc__plan_release_replay(p); /* twice: nothing left to let go */
        vc_plan_use_grid(p, g);      /* a grid of its own: the grid batches replayed again, from nothing */
        assert_int_equal(vc_plan_simulate(p, batch, &b, NULL, &err), VC_OK);
        vc_plan_use_grid(q, h);
        assert_int_equal(vc_plan_simulate(q, batch, &c, NULL, &err), VC_OK);
        assert_true(a.reserved > 0);
        assert_int_equal(b.reserved, a.reserved);
        assert_int_equal(c.reserved, a.reserved);
        assert_int_equal(b.peak, a.peak);
        vc_plan_free(p);
        vc_plan_free(q);
        vc_grid_free(g);
        vc_grid_free(h);
    }
    vc_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_pool),      cmocka_unit_test(test_large_pool),    cmocka_unit_test(test_best_fit),
        cmocka_unit_test(test_merge_and_pools), cmocka_unit_test(test_scratch_reuse), cmocka_unit_test(test_prefix_snapshot), cmocka_unit_test(test_small_class_edges),
        cmocka_unit_test(test_pools_independent),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_reference),
        cmocka_unit_test(test_bounded),
        cmocka_unit_test(test_bounded_holes),
        cmocka_unit_test(test_release_replay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
