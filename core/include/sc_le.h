/* sc_le.h — little-endian loads and stores: the one byte order of wire
 * messages, codec payloads, checkpoints, shard snapshots and raw float32
 * records, whatever the host's. */
#ifndef SC_LE_H
#define SC_LE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The IEEE-754 bits of a float or double, and back. */
static inline uint32_t sc_f32_bits(float f)
{
        uint32_t u;
        memcpy(&u, &f, 4);
        return u;
}

static inline float sc_f32_from_bits(uint32_t u)
{
        float f;
        memcpy(&f, &u, 4);
        return f;
}

static inline uint64_t sc_f64_bits(double d)
{
        uint64_t u;
        memcpy(&u, &d, 8);
        return u;
}

static inline double sc_f64_from_bits(uint64_t u)
{
        double d;
        memcpy(&d, &u, 8);
        return d;
}

static inline void sc_le_put16(uint8_t *p, uint16_t v)
{
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
}

static inline void sc_le_put32(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
        p[2] = (uint8_t)(v >> 16);
        p[3] = (uint8_t)(v >> 24);
}

static inline void sc_le_put64(uint8_t *p, uint64_t v)
{
        sc_le_put32(p, (uint32_t)v);
        sc_le_put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t sc_le_get16(const uint8_t *p)
{
        return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t sc_le_get32(const uint8_t *p)
{
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t sc_le_get64(const uint8_t *p)
{
        return (uint64_t)sc_le_get32(p) | (uint64_t)sc_le_get32(p + 4) << 32;
}

static inline void sc_le_putf32(uint8_t *p, float f)
{
        sc_le_put32(p, sc_f32_bits(f));
}

static inline float sc_le_getf32(const uint8_t *p)
{
        return sc_f32_from_bits(sc_le_get32(p));
}

static inline void sc_le_putf64(uint8_t *p, double d)
{
        sc_le_put64(p, sc_f64_bits(d));
}

static inline double sc_le_getf64(const uint8_t *p)
{
        return sc_f64_from_bits(sc_le_get64(p));
}

/* n halves to 2 * n little-endian bytes at dst, and back; n floats to 4 * n
 * bytes, and back (one memcpy each on a little-endian host). */
static inline void sc_le_put16s(uint8_t *dst, const uint16_t *src, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (n)
                memcpy(dst, src, 2 * n);
#else
        for (size_t i = 0; i < n; i++)
                sc_le_put16(dst + 2 * i, src[i]);
#endif
}

static inline void sc_le_get16s(uint16_t *dst, const uint8_t *src, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (n)
                memcpy(dst, src, 2 * n);
#else
        for (size_t i = 0; i < n; i++)
                dst[i] = sc_le_get16(src + 2 * i);
#endif
}

static inline void sc_le_putf32s(uint8_t *dst, const float *src, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (n)
                memcpy(dst, src, 4 * n);
#else
        for (size_t i = 0; i < n; i++)
                sc_le_putf32(dst + 4 * i, src[i]);
#endif
}

static inline void sc_le_getf32s(float *dst, const uint8_t *src, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        if (n)
                memcpy(dst, src, 4 * n);
#else
        for (size_t i = 0; i < n; i++)
                dst[i] = sc_le_getf32(src + 4 * i);
#endif
}

/* The one writer of the little-endian formats (wire messages, checkpoints,
 * shard snapshots): a cursor over space the caller reserved, each call
 * storing one field and moving past it. */
typedef struct sc_le_w {
        uint8_t *p;
} sc_le_w_t;

static inline void sc_lew_u8(sc_le_w_t *w, uint8_t v)
{
        *w->p++ = v;
}

static inline void sc_lew_u16(sc_le_w_t *w, uint16_t v)
{
        sc_le_put16(w->p, v);
        w->p += 2;
}

static inline void sc_lew_u32(sc_le_w_t *w, uint32_t v)
{
        sc_le_put32(w->p, v);
        w->p += 4;
}

static inline void sc_lew_u64(sc_le_w_t *w, uint64_t v)
{
        sc_le_put64(w->p, v);
        w->p += 8;
}

static inline void sc_lew_f32(sc_le_w_t *w, float f)
{
        sc_le_putf32(w->p, f);
        w->p += 4;
}

static inline void sc_lew_f64(sc_le_w_t *w, double d)
{
        sc_le_putf64(w->p, d);
        w->p += 8;
}

static inline void sc_lew_f32s(sc_le_w_t *w, const float *src, size_t n)
{
        sc_le_putf32s(w->p, src, n);
        w->p += 4 * n;
}

static inline void sc_lew_bytes(sc_le_w_t *w, const void *src, size_t n)
{
        if (n)
                memcpy(w->p, src, n);
        w->p += n;
}

#endif
