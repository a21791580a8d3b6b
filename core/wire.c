/* wire.c — encoding and strict decoding of the job's wire messages (update,
 * model shard, injected samples, control, model broadcast) with CRC32C
 * framing. */
#include "sc_wire.h"

#include <string.h>

#include "sc_codec.h"
#include "sc_crc32c.h"
#include "sc_le.h"

#define SC_UPDATE_FIXED (SC_WIRE_UPDATE_OVERHEAD - SC_WIRE_HDR_SIZE)
#define SC_MODEL_FIXED 56
#define SC_SAMPLES_FIXED 32
#define SC_CONTROL_FIXED 24
#define SC_BCAST_FIXED 56
/* Broadcast body flags: a u64 generation follows the fixed bytes; an f64
 * rate sum follows (after any generation). */
#define SC_BCAST_GEN 0x1
#define SC_BCAST_RATE 0x2
#define SC_APPLIED_SIZE 12
#define SC_FIELD_SIZE 12

static const char *const sc_wire_type_names[SC_WIRE__TYPE_END] = {
    [SC_WIRE_UPDATE] = "update",   [SC_WIRE_MODEL] = "model",     [SC_WIRE_SAMPLES] = "samples",
    [SC_WIRE_CONTROL] = "control", [SC_WIRE_BCAST] = "broadcast",
};

const char *sc_wire_type_name(sc_wire_type_t type)
{
        if ((int)type <= 0 || type >= SC_WIRE__TYPE_END)
                return "?";
        return sc_wire_type_names[type];
}

static void sc_wr_applied(sc_le_w_t *w, const sc_wire_applied_t *a, uint32_t n)
{
        for (uint32_t i = 0; i < n; i++) {
                sc_lew_u32(w, a[i].worker);
                sc_lew_u64(w, a[i].seq);
        }
}

/* Reserves room for a message of body_len bytes, writes the header and
 * returns a writer at the body. */
static sc_err_t sc_wire_begin(sc_buf_t *buf, sc_wire_type_t type, uint64_t body_len, sc_le_w_t *w,
                              char *errstr, size_t errstr_size)
{
        w->p = NULL;
        if (body_len > UINT32_MAX)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "wire %s: body of %llu bytes is over the 4 GiB limit",
                               sc_wire_type_name(type), (unsigned long long)body_len);
        if (sc_buf_reserve(buf, SC_WIRE_HDR_SIZE + (size_t)body_len))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "wire %s: out of memory for %llu bytes", sc_wire_type_name(type),
                               (unsigned long long)body_len);
        w->p = buf->data + buf->len;
        sc_lew_bytes(w, SC_WIRE_MAGIC, 4);
        sc_lew_u8(w, SC_WIRE_VERSION);
        sc_lew_u8(w, (uint8_t)type);
        sc_lew_u16(w, 0);
        sc_lew_u32(w, (uint32_t)body_len);
        sc_lew_u32(w, 0); /* CRC, filled by sc_wire_end */
        return SC_OK;
}

static void sc_wire_end(sc_buf_t *buf, const sc_le_w_t *w)
{
        uint8_t *m = buf->data + buf->len;
        size_t total = (size_t)(w->p - m);
        uint32_t crc = sc_crc32c(0, m, 12);

        crc = sc_crc32c(crc, m + SC_WIRE_HDR_SIZE, total - SC_WIRE_HDR_SIZE);
        sc_le_put32(m + 12, crc);
        buf->len += total;
}

/* ---- encoders ------------------------------------------------------------ */

sc_err_t sc_wire_encode_update(sc_buf_t *buf, const sc_wire_update_t *m, char *errstr,
                               size_t errstr_size)
{
        sc_le_w_t w;
        sc_err_t err;

        if ((unsigned)m->kind > SC_WIRE_FULL_MODEL)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "wire update: bad kind %d",
                               (int)m->kind);
        if (m->payload_len < 1 || !m->payload || m->payload[0] != m->codec ||
            m->payload_len > UINT32_MAX)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "wire update: payload (%zu bytes) is empty, too large or not of "
                               "codec %u",
                               m->payload_len, m->codec);
        err = sc_wire_begin(buf, SC_WIRE_UPDATE, SC_UPDATE_FIXED + (uint64_t)m->payload_len, &w,
                            errstr, errstr_size);
        if (err)
                return err;
        sc_lew_u32(&w, m->worker);
        sc_lew_u32(&w, m->shard);
        sc_lew_u64(&w, m->seq);
        sc_lew_u64(&w, m->t_read);
        sc_lew_u32(&w, m->samples);
        sc_lew_u8(&w, (uint8_t)m->kind);
        sc_lew_u8(&w, m->codec);
        sc_lew_u16(&w, 0);
        sc_lew_u32(&w, (uint32_t)m->payload_len);
        sc_lew_bytes(&w, m->payload, m->payload_len);
        sc_wire_end(buf, &w);
        return SC_OK;
}

sc_err_t sc_wire_encode_model(sc_buf_t *buf, const sc_wire_model_t *m, char *errstr,
                              size_t errstr_size)
{
        uint64_t nparams = m->params_in_state ? 0 : m->count;
        uint64_t body =
            SC_MODEL_FIXED + 4 * nparams + SC_APPLIED_SIZE * (uint64_t)m->napplied + m->state_len;
        sc_le_w_t w;
        sc_err_t err;

        if (m->params_in_state && !m->state_len)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "wire model: parameters in the state, but no state");
        if ((nparams && !m->params) || (m->napplied && !m->applied) || (m->state_len && !m->state))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "wire model: an array with a non-zero count is NULL");
        if (m->begin > UINT64_MAX - m->count)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "wire model: range begin %llu + count %u overflows",
                               (unsigned long long)m->begin, m->count);
        err = sc_wire_begin(buf, SC_WIRE_MODEL, body, &w, errstr, errstr_size);
        if (err)
                return err;
        sc_lew_u32(&w, m->shard);
        sc_lew_u32(&w, m->params_in_state ? SC_WIRE_MODEL_PARAMS_IN_STATE : 0);
        sc_lew_u64(&w, m->version);
        sc_lew_u64(&w, m->begin);
        sc_lew_u32(&w, m->count);
        sc_lew_u32(&w, 0);
        sc_lew_u64(&w, (uint64_t)m->grad_offset);
        sc_lew_u32(&w, m->napplied);
        sc_lew_u32(&w, 0);
        sc_lew_u32(&w, m->state_len);
        sc_lew_u32(&w, 0);
        sc_lew_f32s(&w, m->params, (size_t)nparams);
        sc_wr_applied(&w, m->applied, m->napplied);
        sc_lew_bytes(&w, m->state, m->state_len);
        sc_wire_end(buf, &w);
        return SC_OK;
}

/* numel = c*h*w and total data floats count*numel, or 0 past 2^62. */
static uint64_t sc_wire_sample_floats(uint32_t count, uint32_t c, uint32_t h, uint32_t w)
{
        uint64_t numel = (uint64_t)c * h;

        if (numel > (1ull << 62) / (w ? w : 1))
                return 0;
        numel *= w;
        if (count && numel > (1ull << 62) / count)
                return 0;
        return numel * count;
}

sc_err_t sc_wire_encode_samples(sc_buf_t *buf, const sc_wire_samples_t *m, char *errstr,
                                size_t errstr_size)
{
        uint64_t floats = sc_wire_sample_floats(m->count, m->c, m->h, m->w);
        sc_le_w_t w;
        sc_err_t err;

        if (!m->c || !m->h || !m->w || (m->count && (!floats || !m->data)))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "wire samples: shape (%u, %u, %u) x %u is empty or too large", m->c,
                               m->h, m->w, m->count);
        if (floats > (UINT32_MAX - SC_SAMPLES_FIXED) / 4)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "wire samples: %llu floats do not fit one message",
                               (unsigned long long)floats);
        err =
            sc_wire_begin(buf, SC_WIRE_SAMPLES,
                          SC_SAMPLES_FIXED + (m->labels ? 4 * (uint64_t)m->count : 0) + 4 * floats,
                          &w, errstr, errstr_size);
        if (err)
                return err;
        sc_lew_u32(&w, m->worker);
        sc_lew_u32(&w, m->count);
        sc_lew_u32(&w, m->c);
        sc_lew_u32(&w, m->h);
        sc_lew_u32(&w, m->w);
        sc_lew_u32(&w, m->labels ? SC_WIRE_SAMPLES_LABELS : 0);
        sc_lew_u64(&w, m->seq);
        for (uint32_t i = 0; m->labels && i < m->count; i++)
                sc_lew_u32(&w, (uint32_t)m->labels[i]);
        sc_lew_f32s(&w, m->data, (size_t)floats);
        sc_wire_end(buf, &w);
        return SC_OK;
}

sc_err_t sc_wire_encode_control(sc_buf_t *buf, const sc_wire_control_t *m, char *errstr,
                                size_t errstr_size)
{
        sc_le_w_t w;
        sc_err_t err;

        if ((int)m->kind < SC_WIRE_CTL_JOIN || m->kind >= SC_WIRE__CTL_END)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "wire control: bad kind %d",
                               (int)m->kind);
        if (m->nfields > SC_WIRE_CTL_MAX_FIELDS)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "wire control: %u fields (at most %d)", m->nfields,
                               SC_WIRE_CTL_MAX_FIELDS);
        err = sc_wire_begin(buf, SC_WIRE_CONTROL,
                            SC_CONTROL_FIXED + SC_FIELD_SIZE * (uint64_t)m->nfields, &w, errstr,
                            errstr_size);
        if (err)
                return err;
        sc_lew_u8(&w, (uint8_t)m->kind);
        sc_lew_u8(&w, 0);
        sc_lew_u16(&w, 0);
        sc_lew_u32(&w, m->worker);
        sc_lew_u64(&w, (uint64_t)m->timestamp);
        sc_lew_u32(&w, m->nfields);
        sc_lew_u32(&w, 0);
        for (uint32_t i = 0; i < m->nfields; i++) {
                sc_lew_u32(&w, m->fields[i].key);
                sc_lew_f64(&w, m->fields[i].value);
        }
        sc_wire_end(buf, &w);
        return SC_OK;
}

/* The broadcast payload rules shared by encoder and decoder: a codec payload
 * of count floats whose first byte is the codec; a keyframe is dense none. */
static sc_err_t sc_wire_bcast_payload_check(const sc_wire_bcast_t *m, char *errstr,
                                            size_t errstr_size)
{
        sc_codec_info_t info;
        char why[256];

        if (m->kind != SC_WIRE_BCAST_KEY && m->kind != SC_WIRE_BCAST_DELTA)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire broadcast: unknown kind %d", (int)m->kind);
        if (m->kind == SC_WIRE_BCAST_KEY ? m->base != 0 || m->key_offset != -1
                                         : m->key_offset < 0 || m->base >= m->version)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire broadcast: %s with base %llu, version %llu, keyframe "
                               "offset %lld (a keyframe has base 0 and offset -1, a delta a base "
                               "below its version and an offset >= 0)",
                               m->kind == SC_WIRE_BCAST_KEY ? "keyframe" : "delta",
                               (unsigned long long)m->base, (unsigned long long)m->version,
                               (long long)m->key_offset);
        if (m->begin > UINT64_MAX - m->count)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire broadcast: range begin %llu + count %u overflows",
                               (unsigned long long)m->begin, m->count);
        if (!m->payload ||
            sc_codec_payload_info(m->payload, m->payload_len, &info, why, sizeof(why)))
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size, "wire broadcast: payload: %s",
                               m->payload ? why : "missing");
        if (info.n != m->count)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire broadcast: payload of %u floats for a shard of %u", info.n,
                               m->count);
        if (m->kind == SC_WIRE_BCAST_KEY &&
            (info.codec != SC_CODEC_NONE || info.format != SC_CODEC_FMT_DENSE))
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire broadcast: a keyframe must be dense float32 (codec none), "
                               "not codec %s",
                               sc_codec_name(info.codec));
        return SC_OK;
}

sc_err_t sc_wire_encode_bcast(sc_buf_t *buf, const sc_wire_bcast_t *m, char *errstr,
                              size_t errstr_size)
{
        sc_le_w_t w;
        sc_err_t err;

        if (m->napplied && !m->applied)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "wire broadcast: %u applied entries and no array", m->napplied);
        uint32_t fixed = SC_BCAST_FIXED + (m->generation ? 8 : 0) + (m->rate_sum != 0 ? 8 : 0);

        if (m->rate_sum != 0 && !(m->rate_sum > 0 && m->rate_sum <= SC_WIRE_RATE_MAX))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "wire broadcast: rate sum %g outside (0, %g]", m->rate_sum,
                               SC_WIRE_RATE_MAX);

        if (m->payload_len > UINT32_MAX - fixed - SC_APPLIED_SIZE * (uint64_t)m->napplied)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "wire broadcast: payload of %zu bytes is too large", m->payload_len);
        if (sc_wire_bcast_payload_check(m, errstr, errstr_size))
                return SC_ERR_INVAL; /* errstr names the field */
        err = sc_wire_begin(buf, SC_WIRE_BCAST,
                            fixed + SC_APPLIED_SIZE * (uint64_t)m->napplied + m->payload_len, &w,
                            errstr, errstr_size);
        if (err)
                return err;
        sc_lew_u32(&w, m->shard);
        sc_lew_u8(&w, (uint8_t)m->kind);
        sc_lew_u8(&w, m->payload[0]);
        sc_lew_u16(&w, (m->generation ? SC_BCAST_GEN : 0) | (m->rate_sum != 0 ? SC_BCAST_RATE : 0));
        sc_lew_u64(&w, m->version);
        sc_lew_u64(&w, m->base);
        sc_lew_u64(&w, (uint64_t)m->key_offset);
        sc_lew_u64(&w, m->begin);
        sc_lew_u32(&w, m->count);
        sc_lew_u32(&w, m->napplied);
        sc_lew_u32(&w, (uint32_t)m->payload_len);
        sc_lew_u32(&w, 0);
        if (m->generation)
                sc_lew_u64(&w, m->generation);
        if (m->rate_sum != 0)
                sc_lew_f64(&w, m->rate_sum);
        sc_wr_applied(&w, m->applied, m->napplied);
        sc_lew_bytes(&w, m->payload, m->payload_len);
        sc_wire_end(buf, &w);
        return SC_OK;
}

/* ---- decoding ------------------------------------------------------------ */

sc_err_t sc_wire_check(const void *data, size_t len, sc_wire_type_t *typep, char *errstr,
                       size_t errstr_size)
{
        const uint8_t *p = data;
        uint32_t body, crc, want;

        if (!p || len < SC_WIRE_HDR_SIZE)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire: %zu bytes, shorter than the %d-byte header", len,
                               SC_WIRE_HDR_SIZE);
        if (memcmp(p, SC_WIRE_MAGIC, 4))
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire: bad magic %02x%02x%02x%02x (not a scadles message)", p[0],
                               p[1], p[2], p[3]);
        if (p[4] != SC_WIRE_VERSION)
                return sc_errf(SC_ERR_VERSION, errstr, errstr_size,
                               "wire: format version %u, this build reads version %d", p[4],
                               SC_WIRE_VERSION);
        body = sc_le_get32(p + 8);
        if ((uint64_t)body != (uint64_t)len - SC_WIRE_HDR_SIZE)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire: header says %u body bytes, message has %zu", body,
                               len - SC_WIRE_HDR_SIZE);
        crc = sc_le_get32(p + 12);
        want = sc_crc32c(sc_crc32c(0, p, 12), p + SC_WIRE_HDR_SIZE, body);
        if (crc != want)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire: CRC32C mismatch (stored %08x, computed %08x)", crc, want);
        if (p[5] == 0 || p[5] >= SC_WIRE__TYPE_END)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size, "wire: unknown type %u", p[5]);
        if (sc_le_get16(p + 6) & ~SC_WIRE_FLAG_HMAC)
                return sc_errf(SC_ERR_UNSUPPORTED, errstr, errstr_size,
                               "wire %s: flags 0x%04x are not supported", sc_wire_type_names[p[5]],
                               sc_le_get16(p + 6));
        if ((sc_le_get16(p + 6) & SC_WIRE_FLAG_HMAC) && body < SC_WIRE_TAG_SIZE)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire %s: signed, but %u body bytes cannot hold the tag",
                               sc_wire_type_names[p[5]], body);
        if (typep)
                *typep = (sc_wire_type_t)p[5];
        return SC_OK;
}

static sc_err_t sc_wire_decode_update(const uint8_t *b, uint32_t len, sc_wire_update_t *m,
                                      char *errstr, size_t errstr_size)
{
        uint32_t plen;

        if (len < SC_UPDATE_FIXED)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire update: body of %u bytes, shorter than its %d fixed bytes",
                               len, SC_UPDATE_FIXED);
        m->worker = sc_le_get32(b);
        m->shard = sc_le_get32(b + 4);
        m->seq = sc_le_get64(b + 8);
        m->t_read = sc_le_get64(b + 16);
        m->samples = sc_le_get32(b + 24);
        m->kind = (sc_wire_update_kind_t)b[28];
        m->codec = b[29];
        plen = sc_le_get32(b + 32);
        if (b[28] > SC_WIRE_FULL_MODEL)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size, "wire update: unknown kind %u",
                               b[28]);
        if (b[29] >= SC_CODEC__END || sc_le_get16(b + 30) != 0)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size, "wire update: unknown codec %u",
                               b[29]);
        if (plen != len - SC_UPDATE_FIXED)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire update: payload length %u, %u bytes follow", plen,
                               len - SC_UPDATE_FIXED);
        if (plen < SC_CODEC_HDR_SIZE || b[SC_UPDATE_FIXED] != m->codec)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire update: payload of %u bytes is not a codec %u payload", plen,
                               m->codec);
        m->payload = b + SC_UPDATE_FIXED;
        m->payload_len = plen;
        return SC_OK;
}

static sc_err_t sc_wire_decode_model(const uint8_t *b, uint32_t len, sc_wire_model_view_t *m,
                                     char *errstr, size_t errstr_size)
{
        uint64_t need, off;

        if (len < SC_MODEL_FIXED)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire model: body of %u bytes, shorter than its %d fixed bytes", len,
                               SC_MODEL_FIXED);
        m->shard = sc_le_get32(b);
        m->version = sc_le_get64(b + 8);
        m->begin = sc_le_get64(b + 16);
        m->count = sc_le_get32(b + 24);
        m->grad_offset = (int64_t)sc_le_get64(b + 32);
        m->napplied = sc_le_get32(b + 40);
        m->state_len = sc_le_get32(b + 48);
        if ((sc_le_get32(b + 4) & ~(uint32_t)SC_WIRE_MODEL_PARAMS_IN_STATE) ||
            sc_le_get32(b + 28) != 0 || sc_le_get32(b + 44) != 0 || sc_le_get32(b + 52) != 0)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire model: unknown flags 0x%x or a reserved field not zero",
                               sc_le_get32(b + 4));
        m->params_in_state = (sc_le_get32(b + 4) & SC_WIRE_MODEL_PARAMS_IN_STATE) != 0;
        if (m->params_in_state && !m->state_len)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire model: parameters in the state, but no state");
        if (m->begin > UINT64_MAX - m->count)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire model: range begin %llu + count %u overflows",
                               (unsigned long long)m->begin, m->count);
        need = SC_MODEL_FIXED + (m->params_in_state ? 0 : 4 * (uint64_t)m->count) +
               SC_APPLIED_SIZE * (uint64_t)m->napplied + m->state_len;
        if (need != len)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire model: %u params, %u applied and %u state bytes need %llu "
                               "body bytes, found %u",
                               m->count, m->napplied, m->state_len, (unsigned long long)need, len);
        off = SC_MODEL_FIXED;
        m->params = m->params_in_state ? NULL : b + off;
        off += m->params_in_state ? 0 : 4 * (uint64_t)m->count;
        m->applied = b + off;
        off += SC_APPLIED_SIZE * (uint64_t)m->napplied;
        m->state = m->state_len ? b + off : NULL;
        return SC_OK;
}

static sc_err_t sc_wire_decode_samples(const uint8_t *b, uint32_t len, sc_wire_samples_view_t *m,
                                       char *errstr, size_t errstr_size)
{
        uint32_t flags;
        uint64_t floats, need;

        if (len < SC_SAMPLES_FIXED)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire samples: body of %u bytes, shorter than its %d fixed "
                               "bytes",
                               len, SC_SAMPLES_FIXED);
        m->worker = sc_le_get32(b);
        m->count = sc_le_get32(b + 4);
        m->c = sc_le_get32(b + 8);
        m->h = sc_le_get32(b + 12);
        m->w = sc_le_get32(b + 16);
        flags = sc_le_get32(b + 20);
        m->seq = sc_le_get64(b + 24);
        if (flags & ~(uint32_t)SC_WIRE_SAMPLES_LABELS)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire samples: unknown flags 0x%x", flags);
        if (!m->c || !m->h || !m->w)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire samples: empty sample shape (%u, %u, %u)", m->c, m->h, m->w);
        floats = sc_wire_sample_floats(m->count, m->c, m->h, m->w);
        need = SC_SAMPLES_FIXED + ((flags & SC_WIRE_SAMPLES_LABELS) ? 4 * (uint64_t)m->count : 0);
        if ((m->count && !floats) || floats > (uint64_t)len / 4 || need + 4 * floats != len)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire samples: %u samples of (%u, %u, %u)%s do not fill %u body "
                               "bytes",
                               m->count, m->c, m->h, m->w,
                               (flags & SC_WIRE_SAMPLES_LABELS) ? " with labels" : "", len);
        m->labels = (flags & SC_WIRE_SAMPLES_LABELS) ? b + SC_SAMPLES_FIXED : NULL;
        m->data = b + need;
        return SC_OK;
}

static sc_err_t sc_wire_decode_control(const uint8_t *b, uint32_t len, sc_wire_control_t *m,
                                       char *errstr, size_t errstr_size)
{
        if (len < SC_CONTROL_FIXED)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire control: body of %u bytes, shorter than its %d fixed "
                               "bytes",
                               len, SC_CONTROL_FIXED);
        m->kind = (sc_wire_ctl_kind_t)b[0];
        m->worker = sc_le_get32(b + 4);
        m->timestamp = (int64_t)sc_le_get64(b + 8);
        m->nfields = sc_le_get32(b + 16);
        if (b[0] < SC_WIRE_CTL_JOIN || b[0] >= SC_WIRE__CTL_END || b[1] || sc_le_get16(b + 2) ||
            sc_le_get32(b + 20))
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire control: unknown kind %u or non-zero reserved bytes", b[0]);
        if (m->nfields > SC_WIRE_CTL_MAX_FIELDS)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire control: %u fields (at most %d)", m->nfields,
                               SC_WIRE_CTL_MAX_FIELDS);
        if ((uint64_t)SC_CONTROL_FIXED + SC_FIELD_SIZE * (uint64_t)m->nfields != len)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire control: %u fields need %u body bytes, found %u", m->nfields,
                               SC_CONTROL_FIXED + SC_FIELD_SIZE * m->nfields, len);
        for (uint32_t i = 0; i < m->nfields; i++) {
                const uint8_t *f = b + SC_CONTROL_FIXED + SC_FIELD_SIZE * (size_t)i;
                m->fields[i].key = sc_le_get32(f);
                m->fields[i].value = sc_le_getf64(f + 4);
        }
        return SC_OK;
}

/* An optional 8-byte field of a broadcast body after the fixed bytes:
 * *fixed grows by 8, and a body too short for it is corrupt. */
static sc_err_t sc_wire_bcast_extra(uint32_t len, uint32_t *fixed, const char *what, char *errstr,
                                    size_t errstr_size)
{
        *fixed += 8;
        if (len < *fixed)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire broadcast: body of %u bytes, shorter than its %u fixed bytes "
                               "with %s",
                               len, *fixed, what);
        return SC_OK;
}

static sc_err_t sc_wire_decode_bcast(const uint8_t *b, uint32_t len, sc_wire_bcast_t *m,
                                     char *errstr, size_t errstr_size)
{
        uint32_t plen, fixed = SC_BCAST_FIXED;
        uint16_t flags;
        uint64_t need;
        sc_err_t err;

        if (len < SC_BCAST_FIXED)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire broadcast: body of %u bytes, shorter than its %d fixed "
                               "bytes",
                               len, SC_BCAST_FIXED);
        m->shard = sc_le_get32(b);
        m->kind = (sc_wire_bcast_kind_t)b[4];
        flags = sc_le_get16(b + 6);
        m->version = sc_le_get64(b + 8);
        m->base = sc_le_get64(b + 16);
        m->key_offset = (int64_t)sc_le_get64(b + 24);
        m->begin = sc_le_get64(b + 32);
        m->count = sc_le_get32(b + 40);
        m->napplied = sc_le_get32(b + 44);
        plen = sc_le_get32(b + 48);
        if ((flags & ~(SC_BCAST_GEN | SC_BCAST_RATE)) || sc_le_get32(b + 52) != 0)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire broadcast: reserved fields are not zero");
        m->generation = 0;
        if (flags & SC_BCAST_GEN) {
                if ((err = sc_wire_bcast_extra(len, &fixed, "a generation", errstr, errstr_size)))
                        return err;
                m->generation = sc_le_get64(b + SC_BCAST_FIXED);
                if (!m->generation)
                        return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                       "wire broadcast: generation flag with generation 0");
        }
        m->rate_sum = 0;
        if (flags & SC_BCAST_RATE) {
                if ((err = sc_wire_bcast_extra(len, &fixed, "a rate sum", errstr, errstr_size)))
                        return err;
                m->rate_sum = sc_le_getf64(b + fixed - 8);
                if (!(m->rate_sum > 0 && m->rate_sum <= SC_WIRE_RATE_MAX)) /* NaN too */
                        return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                       "wire broadcast: rate sum %g outside (0, %g]", m->rate_sum,
                                       SC_WIRE_RATE_MAX);
        }
        need = fixed + SC_APPLIED_SIZE * (uint64_t)m->napplied + plen;
        if (need != len)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "wire broadcast: %u applied and a %u-byte payload need %llu body "
                               "bytes, found %u",
                               m->napplied, plen, (unsigned long long)need, len);
        m->applied = NULL;
        m->applied_raw = b + fixed;
        m->payload = b + fixed + SC_APPLIED_SIZE * (size_t)m->napplied;
        m->payload_len = plen;
        if (plen < 1 || m->payload[0] != b[5])
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "wire broadcast: payload is not of codec %u", b[5]);
        return sc_wire_bcast_payload_check(m, errstr, errstr_size);
}

/* Decodes the body (len bytes) of a message whose frame was checked. */
static sc_err_t sc_wire_decode_body(sc_wire_type_t type, const uint8_t *body, size_t len,
                                    sc_wire_msg_t *msg, char *errstr, size_t errstr_size)
{
        sc_err_t err;

        switch (type) {
        case SC_WIRE_UPDATE:
                err =
                    sc_wire_decode_update(body, (uint32_t)len, &msg->u.update, errstr, errstr_size);
                break;
        case SC_WIRE_MODEL:
                err = sc_wire_decode_model(body, (uint32_t)len, &msg->u.model, errstr, errstr_size);
                break;
        case SC_WIRE_SAMPLES:
                err = sc_wire_decode_samples(body, (uint32_t)len, &msg->u.samples, errstr,
                                             errstr_size);
                break;
        case SC_WIRE_CONTROL:
                err = sc_wire_decode_control(body, (uint32_t)len, &msg->u.control, errstr,
                                             errstr_size);
                break;
        case SC_WIRE_BCAST:
                err = sc_wire_decode_bcast(body, (uint32_t)len, &msg->u.bcast, errstr, errstr_size);
                break;
        default:
                err = SC_ERR_DECODE;
        }
        if (err) {
                memset(msg, 0, sizeof(*msg));
                return err;
        }
        msg->type = type;
        return SC_OK;
}

sc_err_t sc_wire_decode(const void *data, size_t len, sc_wire_msg_t *msg, char *errstr,
                        size_t errstr_size)
{
        const uint8_t *p = data;
        sc_wire_type_t type = SC_WIRE_UPDATE;
        sc_err_t err;

        memset(msg, 0, sizeof(*msg));
        err = sc_wire_check(data, len, &type, errstr, errstr_size);
        if (err)
                return err;
        if (sc_le_get16(p + 6) & SC_WIRE_FLAG_HMAC)
                return sc_errf(SC_ERR_UNSUPPORTED, errstr, errstr_size,
                               "wire %s: the message is signed; decode it with the job key",
                               sc_wire_type_name(type));
        return sc_wire_decode_body(type, p + SC_WIRE_HDR_SIZE, len - SC_WIRE_HDR_SIZE, msg, errstr,
                                   errstr_size);
}

sc_err_t sc_wire_decode_auth(const void *data, size_t len, const void *key, size_t keylen,
                             sc_wire_msg_t *msg, char *errstr, size_t errstr_size)
{
        const uint8_t *p = data;
        sc_wire_type_t type = SC_WIRE_UPDATE;
        sc_err_t err;

        memset(msg, 0, sizeof(*msg));
        if (!key || keylen == 0)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "wire: empty key");
        err = sc_wire_check(data, len, &type, errstr, errstr_size);
        if (err)
                return err;
        if (!(sc_le_get16(p + 6) & SC_WIRE_FLAG_HMAC))
                return sc_errf(SC_ERR_AUTH, errstr, errstr_size,
                               "wire %s: the message is not signed", sc_wire_type_name(type));
        if (!sc_wire_tag_ok(p, len, key, keylen))
                return sc_errf(SC_ERR_AUTH, errstr, errstr_size,
                               "wire %s: HMAC-SHA256 tag mismatch (wrong key or altered "
                               "message)",
                               sc_wire_type_name(type));
        return sc_wire_decode_body(type, p + SC_WIRE_HDR_SIZE,
                                   len - SC_WIRE_HDR_SIZE - SC_WIRE_TAG_SIZE, msg, errstr,
                                   errstr_size);
}

int sc_wire_f32s_finite(const uint8_t *src, size_t n)
{
        int ok = 1;
        /* bytes 2 and 3 of a little-endian float hold its 8 exponent bits */
        for (size_t i = 0; i < n; i++, src += 4)
                ok &= ((src[3] & 0x7f) != 0x7f) | ((src[2] & 0x80) == 0);
        return ok;
}

void sc_wire_get_f32s(float *dst, const uint8_t *src, size_t n)
{
        sc_le_getf32s(dst, src, n);
}

void sc_wire_get_i32s(int32_t *dst, const uint8_t *src, size_t n)
{
        for (size_t i = 0; i < n; i++)
                dst[i] = (int32_t)sc_le_get32(src + 4 * i);
}

void sc_wire_get_applied_raw(const uint8_t *raw, uint32_t i, sc_wire_applied_t *out)
{
        const uint8_t *p = raw + SC_APPLIED_SIZE * (size_t)i;
        out->worker = sc_le_get32(p);
        out->seq = sc_le_get64(p + 4);
}

void sc_wire_get_applied(const sc_wire_model_view_t *m, uint32_t i, sc_wire_applied_t *out)
{
        sc_wire_get_applied_raw(m->applied, i, out);
}

double sc_wire_control_field(const sc_wire_control_t *m, uint32_t key, double def)
{
        for (uint32_t i = 0; i < m->nfields && i < SC_WIRE_CTL_MAX_FIELDS; i++)
                if (m->fields[i].key == key)
                        return m->fields[i].value;
        return def;
}
