/* sc_crc32c.h — CRC32C (Castagnoli), used by checkpoints and wire messages. */
#ifndef SC_CRC32C_H
#define SC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extends crc (0 to start) over len bytes of buf; returns the new CRC. */
uint32_t sc_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
