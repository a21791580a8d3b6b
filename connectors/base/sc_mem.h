/* sc_mem.h — handing freed memory back to the system. */
#ifndef SC_MEM_H
#define SC_MEM_H

#include <stdint.h>

/* When freed (a running count of chunks freed: the streams' chunks_freed)
 * has grown since *seen, asks the allocator to hand the free memory of its
 * heap back to the system (glibc keeps memory freed inside its heap
 * resident until trimmed) and updates *seen. Call it every few seconds. */
void sc_mem_give_back(uint64_t freed, uint64_t *seen);

#endif
