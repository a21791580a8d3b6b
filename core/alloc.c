/* alloc.c — the allocator of sc_alloc.h; compiled with SC_ALLOC_HOOK (into
 * the unit tests only) it counts allocations and fails the one it is told. */
#include "sc_alloc.h"

#include <stdlib.h>
#include <string.h>

#ifdef SC_ALLOC_HOOK
#include <stdatomic.h>

static _Atomic uint64_t sc_alloc_n;      /* allocations attempted */
static _Atomic uint64_t sc_alloc_fail_n; /* the one to fail; 0 = none */
static _Atomic int sc_alloc_fail_hit;

uint64_t sc_alloc_count(void)
{
        return atomic_load(&sc_alloc_n);
}

void sc_alloc_fail_after(uint64_t n)
{
        atomic_store(&sc_alloc_fail_hit, 0);
        atomic_store(&sc_alloc_fail_n, n ? atomic_load(&sc_alloc_n) + n : 0);
}

int sc_alloc_failed(void)
{
        return atomic_load(&sc_alloc_fail_hit);
}

/* 1 if this allocation is to fail. */
static int sc_alloc_next(void)
{
        uint64_t k = atomic_fetch_add(&sc_alloc_n, 1) + 1;
        if (k != atomic_load(&sc_alloc_fail_n))
                return 0;
        atomic_store(&sc_alloc_fail_hit, 1);
        return 1;
}
#else
static int sc_alloc_next(void)
{
        return 0;
}
#endif

void *sc_malloc(size_t size)
{
        return sc_alloc_next() ? NULL : malloc(size);
}

void *sc_calloc(size_t n, size_t size)
{
        return sc_alloc_next() ? NULL : calloc(n, size);
}

void *sc_realloc(void *p, size_t size)
{
        return sc_alloc_next() ? NULL : realloc(p, size);
}

char *sc_strdup(const char *s)
{
        return sc_alloc_next() ? NULL : strdup(s);
}

void sc_free(void *p)
{
        free(p);
}

int sc_memalign(void **p, size_t align, size_t size)
{
        return sc_alloc_next() ? -1 : posix_memalign(p, align, size);
}
