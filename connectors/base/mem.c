/* mem.c — handing freed memory back to the system (sc_mem.h). */
#include "sc_mem.h"

#include <stdlib.h>
#include <string.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

int sc_mem_look_due(const sc_mem_trim_t *m, double now)
{
        return !m->trims || now - m->t_look >= SC_MEM_LOOK_S;
}

int sc_mem_give_back(sc_mem_trim_t *m, uint64_t freed, double now)
{
        if (!sc_mem_look_due(m, now))
                return 0;
        m->t_look = now;
        if (m->trims && freed == m->freed_seen && now - m->t_trim < SC_MEM_TRIM_S)
                return 0;
        m->freed_seen = freed;
        m->t_trim = now;
        m->trims++;
#ifdef __GLIBC__
        malloc_trim(0);
        return 1;
#else
        return 0; /* no allocator call to make: counted as a look */
#endif
}

int sc_mem_heap(uint64_t *in_use, uint64_t *free_bytes)
{
        *in_use = *free_bytes = 0;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
        struct mallinfo2 mi = mallinfo2();
        *in_use = (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
        *free_bytes = (uint64_t)mi.fordblks;
        /* A replaced allocator (a sanitizer's) leaves glibc's arenas
         * unused: nothing in use at all is no answer. */
        return *in_use ? 0 : -1;
#else
        return -1;
#endif
}

int sc_mem_tune(void)
{
#ifdef __GLIBC__
        const char *t = getenv("GLIBC_TUNABLES");
        if ((t && strstr(t, "glibc.malloc.")) || getenv("MALLOC_ARENA_MAX") ||
            getenv("MALLOC_MMAP_THRESHOLD_"))
                return 0;
        /* each returns 1 on success */
        int ok = mallopt(M_MMAP_THRESHOLD, SC_MEM_MMAP_MIN);
#ifdef M_ARENA_MAX
        ok = ok && mallopt(M_ARENA_MAX, SC_MEM_ARENAS);
#endif
        return ok;
#else
        return 0;
#endif
}
