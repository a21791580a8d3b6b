/* mem.c — handing freed memory back to the system (sc_mem.h). */
#include "sc_mem.h"

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
