/* sc_mem.h — handing freed memory back to the system. */
#ifndef SC_MEM_H
#define SC_MEM_H

#include <stdint.h>

/* Seconds between looks, and between trims when no rows were freed. */
#define SC_MEM_LOOK_S 5.0
#define SC_MEM_TRIM_S 60.0

/* A process's trimming state; zero-initialised. */
typedef struct sc_mem_trim {
        uint64_t freed_seen; /* the streams' chunks_freed at the last trim */
        double t_look;       /* the last look */
        double t_trim;       /* the last trim */
        uint64_t trims;      /* trims due (the first look is one) */
} sc_mem_trim_t;

/* Call it on every turn of a loop, with now (seconds, monotonic) and freed
 * (a running count of chunks of rows freed: the streams' chunks_freed; 0
 * for a process without streams). Every SC_MEM_LOOK_S it asks the
 * allocator to hand the free memory of its heaps back to the system
 * (glibc keeps freed memory resident until trimmed, in each thread's arena:
 * librdkafka's buffers after a reconnect or a rebalance, a drained
 * backlog's rows) when chunks were freed since the last trim, or when
 * SC_MEM_TRIM_S passed since it. Returns 1 when it trimmed (glibc; with
 * another C library there is no trim to ask for, and it returns 0). */
int sc_mem_give_back(sc_mem_trim_t *m, uint64_t freed, double now);

/* 1 when sc_mem_give_back would look now: a caller whose freed count
 * costs something to gather asks first. */
int sc_mem_look_due(const sc_mem_trim_t *m, double now);

/* The heap as the allocator counts it, over every thread's arena: bytes
 * handed out to the process's code and not freed yet (in_use: small blocks
 * and blocks mapped on their own), and bytes held free in the arenas
 * (free: resident until trimmed, except the pages a trim gave back).
 * Returns 0 on success; -1 where the allocator does not say (a C library
 * other than glibc 2.33 or later, or a sanitizer's allocator in its place,
 * which answers zeros). RSS minus in_use is memory the heap's users do not
 * hold: code, stacks, free heap pages, mappings made without malloc. */
int sc_mem_heap(uint64_t *in_use, uint64_t *free_bytes);

/* Sets glibc's allocator for a long-running process (the command line's
 * processes call it at start; a library leaves its host's allocator as it
 * is): blocks of SC_MEM_MMAP_MIN bytes or more that no free heap memory
 * serves are mapped on their own and unmapped when freed, at a threshold
 * that stays put (glibc raises it to the size of each such block freed,
 * after which they are carved from the top of the heap and fragment it),
 * and at most SC_MEM_ARENAS arenas (glibc makes up to 8 per core, one per
 * thread that allocates: librdkafka's, OpenBLAS's, each keeping its own
 * free memory). Leaves the allocator alone when the
 * environment sets it (GLIBC_TUNABLES with glibc.malloc., MALLOC_ARENA_MAX,
 * MALLOC_MMAP_THRESHOLD_). Returns 1 when it set it, 0 when it did not
 * (such an environment, or a C library other than glibc). */
#define SC_MEM_MMAP_MIN (128 * 1024)
#define SC_MEM_ARENAS 2
int sc_mem_tune(void);

#endif
