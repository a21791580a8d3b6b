/* buf.c — growable byte buffers for encoders. */
#include "sc_buf.h"

#include "sc_alloc.h"

#include <stdlib.h>
#include <string.h>

void sc_buf_free(sc_buf_t *buf)
{
        if (!buf)
                return;
        sc_free(buf->data);
        sc_buf_init(buf);
}

sc_err_t sc_buf_reserve(sc_buf_t *buf, size_t extra)
{
        size_t cap;
        uint8_t *p;

        if (extra > SIZE_MAX - buf->len)
                return SC_ERR_NOMEM;
        if (buf->len + extra <= buf->cap)
                return SC_OK;
        cap = buf->cap ? buf->cap : 256;
        while (cap < buf->len + extra)
                cap = cap > SIZE_MAX / 2 ? buf->len + extra : cap * 2;
        p = sc_realloc(buf->data, cap);
        if (!p)
                return SC_ERR_NOMEM;
        buf->data = p;
        buf->cap = cap;
        return SC_OK;
}

sc_err_t sc_buf_append(sc_buf_t *buf, const void *src, size_t n)
{
        sc_err_t err = sc_buf_reserve(buf, n);

        if (err)
                return err;
        if (n)
                memcpy(buf->data + buf->len, src, n);
        buf->len += n;
        return SC_OK;
}
