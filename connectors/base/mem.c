/* mem.c — handing freed memory back to the system (sc_mem.h). */
#include "sc_mem.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

void sc_mem_give_back(uint64_t freed, uint64_t *seen)
{
        if (freed == *seen)
                return;
        *seen = freed;
#ifdef __GLIBC__
        malloc_trim(0);
#endif
}
