/* pb.c — protocol-buffers wire-format writer into growable buffers. */
#include "sc_pb.h"

#include <string.h>

#include "sc_le.h"

void sc_pb_init(sc_pb_t *pb, sc_buf_t *buf)
{
        pb->buf = buf;
        pb->err = SC_OK;
}

sc_err_t sc_pb_err(const sc_pb_t *pb)
{
        return pb->err;
}

static void sc_pb_put(sc_pb_t *pb, const void *src, size_t n)
{
        if (!pb->err)
                pb->err = sc_buf_append(pb->buf, src, n);
}

/* Writes the varint of v into out (10 bytes at most); returns its size. */
static size_t sc_pb_varint_enc(uint64_t v, uint8_t out[10])
{
        size_t n = 0;
        while (v >= 0x80) {
                out[n++] = (uint8_t)(v | 0x80);
                v >>= 7;
        }
        out[n++] = (uint8_t)v;
        return n;
}

void sc_pb_varint(sc_pb_t *pb, uint64_t v)
{
        uint8_t b[10];
        sc_pb_put(pb, b, sc_pb_varint_enc(v, b));
}

void sc_pb_tag(sc_pb_t *pb, uint32_t field, int wt)
{
        sc_pb_varint(pb, (uint64_t)field << 3 | (uint64_t)(wt & 7));
}

void sc_pb_int(sc_pb_t *pb, uint32_t field, int64_t v)
{
        sc_pb_tag(pb, field, SC_PB_VARINT);
        sc_pb_varint(pb, (uint64_t)v);
}

static void sc_pb_fixed32(sc_pb_t *pb, float v)
{
        uint8_t b[4];
        sc_le_putf32(b, v);
        sc_pb_put(pb, b, 4);
}

void sc_pb_float(sc_pb_t *pb, uint32_t field, float v)
{
        sc_pb_tag(pb, field, SC_PB_FIXED32);
        sc_pb_fixed32(pb, v);
}

/* The key and length of a length-delimited field of n bytes. */
static void sc_pb_len_prefix(sc_pb_t *pb, uint32_t field, size_t n)
{
        if (!pb->err && n > SC_PB_MAX_LEN)
                pb->err = SC_ERR_INVAL;
        sc_pb_tag(pb, field, SC_PB_LEN);
        sc_pb_varint(pb, (uint64_t)n);
}

void sc_pb_bytes(sc_pb_t *pb, uint32_t field, const void *data, size_t n)
{
        sc_pb_len_prefix(pb, field, n);
        if (n)
                sc_pb_put(pb, data, n);
}

void sc_pb_string(sc_pb_t *pb, uint32_t field, const char *s)
{
        sc_pb_bytes(pb, field, s, strlen(s));
}

void sc_pb_floats(sc_pb_t *pb, uint32_t field, const float *v, size_t n)
{
        if (!pb->err && n > SC_PB_MAX_LEN / 4) {
                pb->err = SC_ERR_INVAL;
                return;
        }
        sc_pb_len_prefix(pb, field, 4 * n);
        if (!pb->err)
                pb->err = sc_buf_reserve(pb->buf, 4 * n);
        for (size_t i = 0; i < n && !pb->err; i++)
                sc_pb_fixed32(pb, v[i]);
}

void sc_pb_int64s(sc_pb_t *pb, uint32_t field, const int64_t *v, size_t n)
{
        uint8_t b[10];
        size_t len = 0;
        for (size_t i = 0; i < n; i++)
                len += sc_pb_varint_enc((uint64_t)v[i], b);
        sc_pb_len_prefix(pb, field, len);
        for (size_t i = 0; i < n; i++)
                sc_pb_varint(pb, (uint64_t)v[i]);
}

size_t sc_pb_begin(sc_pb_t *pb, uint32_t field)
{
        sc_pb_tag(pb, field, SC_PB_LEN);
        return pb->buf->len;
}

void sc_pb_end(sc_pb_t *pb, size_t mark)
{
        uint8_t b[10];
        if (pb->err)
                return;
        if (mark > pb->buf->len) {
                pb->err = SC_ERR_INVAL;
                return;
        }
        size_t body = pb->buf->len - mark;
        if (body > SC_PB_MAX_LEN) {
                pb->err = SC_ERR_INVAL;
                return;
        }
        size_t k = sc_pb_varint_enc((uint64_t)body, b);
        if ((pb->err = sc_buf_reserve(pb->buf, k)))
                return;
        uint8_t *p = pb->buf->data + mark;
        memmove(p + k, p, body);
        memcpy(p, b, k);
        pb->buf->len += k;
}
