/* sc_buf.h — a caller-owned, growable byte buffer that encoders append to. */
#ifndef SC_BUF_H
#define SC_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "sc_err.h"

/* data holds len valid bytes of cap allocated. A zeroed struct is an empty
 * buffer; the caller owns data and releases it with sc_buf_free(). */
typedef struct sc_buf {
        uint8_t *data;
        size_t len;
        size_t cap;
} sc_buf_t;

static inline void sc_buf_init(sc_buf_t *buf)
{
        buf->data = NULL;
        buf->len = 0;
        buf->cap = 0;
}

/* Frees the storage and empties buf. Accepts NULL. */
void sc_buf_free(sc_buf_t *buf);
/* Ensures room for extra more bytes after len. SC_ERR_NOMEM on failure (buf
 * unchanged). */
sc_err_t sc_buf_reserve(sc_buf_t *buf, size_t extra);
/* Appends n bytes (reserving as needed). */
sc_err_t sc_buf_append(sc_buf_t *buf, const void *src, size_t n);

#endif
