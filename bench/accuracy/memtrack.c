/*
 * memtrack.c -- LD_PRELOAD allocation tracker for the vramcalc accuracy harness.
 *
 * PyTorch's CPU allocator (c10::alloc_cpu in libc10.so) allocates every tensor
 * with posix_memalign(&p, 64, n) and releases it with free(p).  This library
 * interposes posix_memalign/free (and realloc, for safety), keeps a hash map
 * ptr -> rounded size for the blocks c10 allocates, and maintains the running
 * total and its high-water mark.  Each block is rounded like the CUDA caching
 * allocator's round_size(): below 512 bytes -> 512, else the next multiple
 * of 512.
 *
 * Only calls with alignment 64 whose caller lies in libc10.so are counted
 * (oneDNN, OpenBLAS and libstdc++ also call posix_memalign; they are not
 * tensors).  MEMTRACK_ANY_CALLER=1 drops the caller test (alignment 64 only).
 *
 * Exported C API (prefixed, because a preloaded library's symbols interpose
 * every other library's symbols of the same name):
 *   long long memtrack_current(void)      bytes live now (rounded)
 *   long long memtrack_peak(void)         high-water mark since the last reset
 *   void      memtrack_reset_peak(void)   peak := current
 *   long long memtrack_blocks(void)       live tracked blocks
 *   long long memtrack_raw_current(void)  bytes live now, unrounded
 *   long long memtrack_total_allocs(void) tracked allocations so far
 *   int       memtrack_active(void)       1 once libc10.so has been located
 *   long long memtrack_forget(void *p)    stop counting block p (still live);
 *                                         returns its rounded size, 0 if unknown
 *
 * Build: cc -O2 -fPIC -shared -o libmemtrack.so memtrack.c -ldl -lpthread
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ROUND 512u
#define TRACK_ALIGN 64u

typedef int (*pm_fn)(void **, size_t, size_t);
typedef void (*free_fn)(void *);
typedef void *(*realloc_fn)(void *, size_t);

extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);
extern void *__libc_realloc(void *, size_t);

static pm_fn real_pm;
static free_fn real_free;
static realloc_fn real_realloc;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- open-addressing hash map, keys are pointers, tombstones on delete ---- */
struct slot { uintptr_t key; uint64_t size; uint64_t raw; };
#define EMPTY ((uintptr_t)0)
#define TOMB ((uintptr_t)1)

static struct slot *tab;
static size_t cap;          /* power of two */
static size_t used;         /* live + tombstones */
static size_t live;

static long long cur, peak, raw_cur, nallocs;

/* libc10.so executable range */
static uintptr_t c10_lo, c10_hi;
static int any_caller = -1;

static size_t hash_ptr(uintptr_t p)
{
	uint64_t x = (uint64_t)p >> 6;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x;
}

static void *map_pages(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static int grow(void)
{
	size_t ncap = cap ? cap * 2 : (1u << 16);
	if (cap && live * 4 < cap)  /* mostly tombstones: rehash in place size */
		ncap = cap;
	struct slot *nt = map_pages(ncap * sizeof *nt);
	if (!nt)
		return -1;
	for (size_t i = 0; i < cap; i++) {
		if (tab[i].key > TOMB) {
			size_t j = hash_ptr(tab[i].key) & (ncap - 1);
			while (nt[j].key != EMPTY)
				j = (j + 1) & (ncap - 1);
			nt[j] = tab[i];
		}
	}
	if (tab)
		munmap(tab, cap * sizeof *tab);
	tab = nt;
	cap = ncap;
	used = live;
	return 0;
}

static void map_put(uintptr_t k, uint64_t size, uint64_t raw)
{
	if ((used + 1) * 4 >= cap * 3 && grow() != 0)
		return;
	size_t j = hash_ptr(k) & (cap - 1), tomb = (size_t)-1;
	for (;;) {
		if (tab[j].key == EMPTY)
			break;
		if (tab[j].key == TOMB) {
			if (tomb == (size_t)-1)
				tomb = j;
		} else if (tab[j].key == k) { /* stale entry (should not happen) */
			cur -= (long long)tab[j].size;
			raw_cur -= (long long)tab[j].raw;
			live--;
			tomb = j;
			used--;
			break;
		}
		j = (j + 1) & (cap - 1);
	}
	if (tomb != (size_t)-1)
		j = tomb;
	else
		used++;
	tab[j].key = k;
	tab[j].size = size;
	tab[j].raw = raw;
	live++;
}

/* returns 1 and the sizes if k was tracked (and removes it) */
static int map_take(uintptr_t k, uint64_t *size, uint64_t *raw)
{
	if (!cap)
		return 0;
	size_t j = hash_ptr(k) & (cap - 1);
	for (;;) {
		if (tab[j].key == EMPTY)
			return 0;
		if (tab[j].key == k) {
			*size = tab[j].size;
			*raw = tab[j].raw;
			tab[j].key = TOMB;
			live--;
			return 1;
		}
		j = (j + 1) & (cap - 1);
	}
}

/* ---- locating libc10.so ---- */
static int find_c10(struct dl_phdr_info *info, size_t sz, void *data)
{
	(void)sz;
	(void)data;
	const char *n = info->dlpi_name;
	if (!n || !strstr(n, "/libc10.so"))
		return 0;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (hi) {
		c10_lo = lo;
		c10_hi = hi;
		return 1;
	}
	return 0;
}

static void locate_c10(void)
{
	/* called without `mu` held: dl_iterate_phdr takes the loader lock */
	dl_iterate_phdr(find_c10, NULL);
}

static int from_c10(uintptr_t ra)
{
	if (any_caller < 0) {
		const char *e = getenv("MEMTRACK_ANY_CALLER");
		any_caller = (e && *e == '1') ? 1 : 0;
	}
	if (any_caller)
		return 1;
	if (!c10_hi)
		locate_c10();
	return c10_hi && ra >= c10_lo && ra < c10_hi;
}

static void resolve(void)
{
	if (!real_pm)
		real_pm = (pm_fn)dlsym(RTLD_NEXT, "posix_memalign");
	if (!real_free)
		real_free = (free_fn)dlsym(RTLD_NEXT, "free");
	if (!real_realloc)
		real_realloc = (realloc_fn)dlsym(RTLD_NEXT, "realloc");
}

__attribute__((constructor)) static void memtrack_init(void) { resolve(); }

static uint64_t round_size(size_t n)
{
	if (n < ROUND)
		return ROUND;
	return ((uint64_t)n + ROUND - 1) / ROUND * ROUND;
}

/* ---- interposed entry points ---- */
__attribute__((visibility("default"))) int posix_memalign(void **out, size_t align, size_t n)
{
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	int rc;
	if (real_pm) {
		rc = real_pm(out, align, n);
	} else {
		void *p = __libc_memalign(align, n);
		rc = p ? 0 : ENOMEM;
		if (p)
			*out = p;
	}
	if (rc != 0 || align != TRACK_ALIGN || *out == NULL || !from_c10(ra))
		return rc;
	pthread_mutex_lock(&mu);
	{
		uint64_t r = round_size(n);
		map_put((uintptr_t)*out, r, n);
		cur += (long long)r;
		raw_cur += (long long)n;
		nallocs++;
		if (cur > peak)
			peak = cur;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

static void untrack(void *p)
{
	uint64_t s, r;
	if (!p || !cap)
		return;
	pthread_mutex_lock(&mu);
	if (map_take((uintptr_t)p, &s, &r)) {
		cur -= (long long)s;
		raw_cur -= (long long)r;
	}
	pthread_mutex_unlock(&mu);
}

__attribute__((visibility("default"))) void free(void *p)
{
	untrack(p);
	if (real_free)
		real_free(p);
	else
		__libc_free(p);
}

__attribute__((visibility("default"))) void *realloc(void *p, size_t n)
{
	untrack(p);
	return real_realloc ? real_realloc(p, n) : __libc_realloc(p, n);
}

/* ---- query API ---- */
#define API __attribute__((visibility("default")))
API long long memtrack_current(void) { pthread_mutex_lock(&mu); long long v = cur; pthread_mutex_unlock(&mu); return v; }
API long long memtrack_peak(void) { pthread_mutex_lock(&mu); long long v = peak; pthread_mutex_unlock(&mu); return v; }
API void memtrack_reset_peak(void) { pthread_mutex_lock(&mu); peak = cur; pthread_mutex_unlock(&mu); }
API long long memtrack_blocks(void) { pthread_mutex_lock(&mu); long long v = (long long)live; pthread_mutex_unlock(&mu); return v; }
API long long memtrack_raw_current(void) { pthread_mutex_lock(&mu); long long v = raw_cur; pthread_mutex_unlock(&mu); return v; }
API long long memtrack_total_allocs(void) { pthread_mutex_lock(&mu); long long v = nallocs; pthread_mutex_unlock(&mu); return v; }
API long long memtrack_forget(void *p)
{
	uint64_t s = 0, r = 0;
	if (!p)
		return 0;
	pthread_mutex_lock(&mu);
	if (cap && map_take((uintptr_t)p, &s, &r)) {
		cur -= (long long)s;
		raw_cur -= (long long)r;
	}
	pthread_mutex_unlock(&mu);
	return (long long)s;
}
API int memtrack_active(void)
{
	if (!c10_hi)
		locate_c10();
	return c10_hi != 0 || any_caller == 1;
}
