/* sc_alloc.h — the allocator the worker's code paths use: libc's, or, in a
 * build with SC_ALLOC_HOOK (the unit tests'), one that counts allocations
 * and can be told to fail the n-th (out-of-memory tests). */
#ifndef SC_ALLOC_H
#define SC_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/* As malloc, calloc, realloc, strdup and free. */
void *sc_malloc(size_t size);
void *sc_calloc(size_t n, size_t size);
void *sc_realloc(void *p, size_t size);
char *sc_strdup(const char *s);
void sc_free(void *p);
/* As posix_memalign: 0 on success. Freed with sc_free. */
int sc_memalign(void **p, size_t align, size_t size);

#ifdef SC_ALLOC_HOOK
/* Allocations (sc_malloc, sc_calloc, sc_realloc, sc_strdup, sc_memalign)
 * attempted since the program started. */
uint64_t sc_alloc_count(void);
/* Makes the allocation numbered count + n (1 = the next one) fail, and
 * none after it; n = 0 fails none. */
void sc_alloc_fail_after(uint64_t n);
/* 1 once the allocation set by sc_alloc_fail_after has failed. */
int sc_alloc_failed(void);
#endif

#endif
