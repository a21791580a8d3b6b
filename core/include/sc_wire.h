/* sc_wire.h — the versioned little-endian messages that travel on a job's
 * topics: updates (J.grad), model shards (J.model), injected samples
 * (J.inject) and control (J.ctl), each framed with a CRC32C.
 *
 * Frame: "SCDW" magic, u8 version (1), u8 type, u16 flags, u32 body length,
 * u32 CRC32C of the first 12 header bytes and the body; then the body. A
 * message is exactly 16 + length bytes. Flag SC_WIRE_FLAG_HMAC: the body ends
 * with a 32-byte HMAC-SHA256 tag (counted in the length) over header bytes
 * 0..11 and the body before it; such messages decode only with the key.
 *
 * Encoders append one message to a caller-owned sc_buf_t. The decoder
 * validates the whole message (magic, version, type, flags, length, CRC and
 * every count against the bytes present) before it returns, and never reads
 * past len. Decoded arrays are not copied: they point into the caller's bytes
 * (raw little-endian, possibly unaligned), so a view lives as long as those
 * bytes; sc_wire_get_*() convert them. Errors are SC_ERR_CORRUPT (framing,
 * CRC, sizes), SC_ERR_VERSION, SC_ERR_UNSUPPORTED (flags) or SC_ERR_DECODE
 * (a field out of range), with errstr naming the message type and field. */
#ifndef SC_WIRE_H
#define SC_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "sc_buf.h"
#include "sc_err.h"

#define SC_WIRE_MAGIC "SCDW"
#define SC_WIRE_VERSION 1
#define SC_WIRE_HDR_SIZE 16
#define SC_WIRE_FLAG_HMAC 0x1
#define SC_WIRE_TAG_SIZE 32

typedef enum sc_wire_type {
        SC_WIRE_UPDATE = 1,  /* gradient / model delta / model from one worker to one shard */
        SC_WIRE_MODEL = 2,   /* one model shard with its server state */
        SC_WIRE_SAMPLES = 3, /* injected samples (IID mixing) */
        SC_WIRE_CONTROL = 4, /* join, heartbeat, leave, commit-rate */
        SC_WIRE_BCAST = 5,   /* one shard of the model broadcast: keyframe or delta */
        SC_WIRE__TYPE_END
} sc_wire_type_t;

/* Update: body u32 worker, u32 shard, u64 seq, u64 t_read, u32 samples,
 * u8 kind, u8 codec, u16 0, u32 payload length, payload (a codec payload,
 * sc_codec.h, whose first byte must equal codec). */
typedef enum sc_wire_update_kind {
        SC_WIRE_GRAD = 0, /* same values as sc_update_kind_t */
        SC_WIRE_DELTA = 1,
        SC_WIRE_FULL_MODEL = 2,
} sc_wire_update_kind_t;

/* Bytes an update message adds to its codec payload. */
#define SC_WIRE_UPDATE_OVERHEAD (SC_WIRE_HDR_SIZE + 36)

typedef struct sc_wire_update {
        uint32_t worker;  /* job-unique worker id */
        uint32_t shard;   /* target shard */
        uint64_t seq;     /* per (worker, shard), from 1 */
        uint64_t t_read;  /* model version the update was computed against */
        uint32_t samples; /* batch size behind it */
        sc_wire_update_kind_t kind;
        uint8_t codec;          /* sc_codec_id_t */
        const uint8_t *payload; /* (payload_len) bytes; decode: points into the message */
        size_t payload_len;
} sc_wire_update_t;

/* Model shard: body u32 shard, u32 flags, u64 version, u64 begin, u32 count,
 * u32 0, i64 grad_offset, u32 napplied, u32 0, u32 state_len, u32 0, then
 * count f32 parameters, napplied x (u32 worker, u64 seq), state_len bytes of
 * opaque server state (the three zero words are reserved and refused when
 * not zero). Flag SC_WIRE_MODEL_PARAMS_IN_STATE:
 * the count parameters are not in the body (the state, which must not be
 * empty, holds them: an sc_server snapshot); no other flag is defined. */
#define SC_WIRE_MODEL_PARAMS_IN_STATE 0x1
typedef struct sc_wire_applied {
        uint32_t worker;
        uint64_t seq; /* every seq <= this one of the worker is included */
} sc_wire_applied_t;

typedef struct sc_wire_model {
        uint32_t shard;
        uint64_t version;    /* updates applied (server version) */
        uint64_t begin;      /* first parameter of the shard in the flat buffer */
        uint32_t count;      /* parameters in the shard */
        int64_t grad_offset; /* J.grad offset of the next update not included; -1 none */
        int params_in_state; /* 1: params are not sent (the state holds them) */
        const float *params; /* (count), unless params_in_state */
        uint32_t napplied;
        const sc_wire_applied_t *applied; /* (napplied) */
        uint32_t state_len;
        const uint8_t *state; /* opaque (e.g. sc_server_snapshot bytes), optional */
} sc_wire_model_t;

/* Decoded model shard: the same fields, arrays as raw little-endian bytes. */
typedef struct sc_wire_model_view {
        uint32_t shard;
        uint64_t version, begin;
        uint32_t count, napplied, state_len;
        int64_t grad_offset;
        int params_in_state;    /* SC_WIRE_MODEL_PARAMS_IN_STATE: params is NULL */
        const uint8_t *params;  /* count x f32, or NULL */
        const uint8_t *applied; /* napplied x 12 bytes: sc_wire_get_applied() */
        const uint8_t *state;
} sc_wire_model_view_t;

/* Model broadcast (J.bcast, sc_bcast.h): body u32 shard, u8 kind, u8 codec,
 * u16 flags, u64 version, u64 base, i64 key_offset, u64 begin, u32 count,
 * u32 napplied, u32 payload length, u32 0, [u64 generation, when flags bit 0
 * is set; never 0 then], [f64 rate sum, when flags bit 1 is set; in (0,
 * SC_WIRE_RATE_MAX] then], napplied x (u32 worker, u64 seq), payload (a codec
 * payload of count floats). The generation orders the owners of a shard (a
 * new owner's is higher than every earlier one's); no flag means generation
 * 0, the form before generations. The rate sum is the sum of the stream
 * rates the job's live workers last announced (samples/s), for the auto
 * batch window (worker.window "auto"). A keyframe carries the whole
 * view (codec none, dense; base 0, key_offset -1); a delta adds its decoded
 * payload to the view of version base (< version), and key_offset is the
 * partition offset of the keyframe its chain started from (>= 0). */
/* The largest rate sum (samples/s) a broadcast carries (a worker's own
 * announced rate is bounded by the job: SC_JOB_RATE_MAX). */
#define SC_WIRE_RATE_MAX 1e9

typedef enum sc_wire_bcast_kind {
        SC_WIRE_BCAST_KEY = 1,
        SC_WIRE_BCAST_DELTA = 2,
} sc_wire_bcast_kind_t;

typedef struct sc_wire_bcast {
        uint32_t shard;
        sc_wire_bcast_kind_t kind;
        uint64_t generation; /* of the shard's owner that sent it (0: none) */
        double rate_sum;     /* the live workers' announced stream rates, samples/s (0: none) */
        uint64_t version;    /* server version the view stands for after this message */
        uint64_t base;       /* delta: version of the view it applies to; keyframe: 0 */
        int64_t key_offset;  /* delta: offset of the chain's keyframe; keyframe: -1 */
        uint64_t begin;      /* first parameter of the shard in the flat buffer */
        uint32_t count;      /* parameters in the shard (the payload's n) */
        uint32_t napplied;
        const sc_wire_applied_t *applied; /* (napplied), encode side */
        const uint8_t *applied_raw;       /* napplied x 12 bytes, decode side */
        const uint8_t *payload;           /* (payload_len) */
        size_t payload_len;
} sc_wire_bcast_t;

/* Injected samples: body u32 worker, u32 count, u32 c, u32 h, u32 w,
 * u32 flags (bit 0: labels present), u64 seq, [count x i32 labels],
 * count x c*h*w f32 data (row-major (count, c, h, w)). */
#define SC_WIRE_SAMPLES_LABELS 0x1

typedef struct sc_wire_samples {
        uint32_t worker;
        uint64_t seq;
        uint32_t count;
        uint32_t c, h, w;      /* each >= 1 */
        const int32_t *labels; /* (count) or NULL */
        const float *data;     /* (count, c, h, w) */
} sc_wire_samples_t;

typedef struct sc_wire_samples_view {
        uint32_t worker;
        uint64_t seq;
        uint32_t count, c, h, w;
        const uint8_t *labels; /* count x i32, or NULL */
        const uint8_t *data;   /* count * c*h*w x f32 */
} sc_wire_samples_view_t;

/* Control: body u8 kind, u8 0, u16 0, u32 worker, i64 timestamp, u32 nfields,
 * u32 0, nfields x (u32 key, f64 value). Unknown keys decode as they are. */
typedef enum sc_wire_ctl_kind {
        SC_WIRE_CTL_JOIN = 1,
        SC_WIRE_CTL_HEARTBEAT = 2,
        SC_WIRE_CTL_LEAVE = 3,
        SC_WIRE_CTL_COMMIT_RATE = 4,
        SC_WIRE_CTL_DRIFT = 5, /* the worker's drift detector fired (drift.*) */
        SC_WIRE__CTL_END
} sc_wire_ctl_kind_t;

typedef enum sc_wire_field_key {
        SC_WIRE_F_RATE = 1,         /* stream rate, samples/s */
        SC_WIRE_F_BATCH = 2,        /* batch size */
        SC_WIRE_F_COMMIT_RATE = 3,  /* ADSP DeltaC, commits per Gamma */
        SC_WIRE_F_LOSS = 4,         /* training loss */
        SC_WIRE_F_CLOCK = 5,        /* updates sent */
        SC_WIRE_F_VERSION = 6,      /* model version held */
        SC_WIRE_F_VOTE = 7,         /* adaptive codec vote (0 / 1) */
        SC_WIRE_F_OVERHEAD = 8,     /* commit overhead, s */
        SC_WIRE_F_LAG = 9,          /* input backlog, records */
        SC_WIRE_F_DROPPED = 10,     /* samples dropped by truncation */
        SC_WIRE_F_PREQ_SAMPLE = 11, /* drift: the prequential sample it fired at */
        SC_WIRE_F_ACCURACY = 12,    /* drift: recent prequential accuracy */
} sc_wire_field_key_t;

#define SC_WIRE_CTL_MAX_FIELDS 32

typedef struct sc_wire_field {
        uint32_t key; /* sc_wire_field_key_t or a newer key */
        double value;
} sc_wire_field_t;

typedef struct sc_wire_control {
        sc_wire_ctl_kind_t kind;
        uint32_t worker;
        int64_t timestamp; /* microseconds, on the sender's clock */
        uint32_t nfields;  /* <= SC_WIRE_CTL_MAX_FIELDS */
        sc_wire_field_t fields[SC_WIRE_CTL_MAX_FIELDS];
} sc_wire_control_t;

typedef struct sc_wire_msg {
        sc_wire_type_t type;
        union {
                sc_wire_update_t update;
                sc_wire_model_view_t model;
                sc_wire_samples_view_t samples;
                sc_wire_control_t control;
                sc_wire_bcast_t bcast;
        } u;
} sc_wire_msg_t;

/* Encoders: append one message to buf. SC_ERR_INVAL (errstr names the field)
 * for values the format cannot carry, SC_ERR_NOMEM; buf is unchanged on
 * error. */
sc_err_t sc_wire_encode_update(sc_buf_t *buf, const sc_wire_update_t *m, char *errstr,
                               size_t errstr_size);
sc_err_t sc_wire_encode_model(sc_buf_t *buf, const sc_wire_model_t *m, char *errstr,
                              size_t errstr_size);
sc_err_t sc_wire_encode_samples(sc_buf_t *buf, const sc_wire_samples_t *m, char *errstr,
                                size_t errstr_size);
sc_err_t sc_wire_encode_control(sc_buf_t *buf, const sc_wire_control_t *m, char *errstr,
                                size_t errstr_size);
/* Uses applied (not applied_raw); the payload's codec and n are checked as
 * the decoder does. */
sc_err_t sc_wire_encode_bcast(sc_buf_t *buf, const sc_wire_bcast_t *m, char *errstr,
                              size_t errstr_size);

/* Authentication (optional, per job key): appends the HMAC-SHA256 tag to the
 * message that starts at buf->data + start and ends the buffer (as an encoder
 * just left it), sets the flag and updates length and CRC. */
sc_err_t sc_wire_sign(sc_buf_t *buf, size_t start, const void *key, size_t keylen, char *errstr,
                      size_t errstr_size);
/* Like sc_wire_decode, but the message must carry a tag that key verifies
 * (SC_ERR_AUTH otherwise: unsigned, or the tag does not verify); the view
 * excludes the tag. */
sc_err_t sc_wire_decode_auth(const void *data, size_t len, const void *key, size_t keylen,
                             sc_wire_msg_t *msg, char *errstr, size_t errstr_size);
/* SHA-256 of n bytes, and HMAC-SHA256 of the concatenation a || b. */
void sc_wire_sha256(const void *data, size_t n, uint8_t out[32]);
void sc_wire_hmac_sha256(const void *key, size_t keylen, const void *a, size_t alen, const void *b,
                         size_t blen, uint8_t out[32]);
/* Internal to the decoder: 1 if the tag of a framed signed message of len
 * bytes (len >= 16 + 32) verifies under key, in constant time. */
int sc_wire_tag_ok(const uint8_t *msg, size_t len, const void *key, size_t keylen);

/* Checks the frame only (magic, version, flags, length, CRC) and returns the
 * type. A signed message passes (its tag is not checked here). */
sc_err_t sc_wire_check(const void *data, size_t len, sc_wire_type_t *typep, char *errstr,
                       size_t errstr_size);
/* Validates and decodes a whole unsigned message; msg points into data. A
 * signed one is SC_ERR_UNSUPPORTED (use sc_wire_decode_auth). */
sc_err_t sc_wire_decode(const void *data, size_t len, sc_wire_msg_t *msg, char *errstr,
                        size_t errstr_size);

/* Conversions from decoded raw arrays. */
void sc_wire_get_f32s(float *dst, const uint8_t *src, size_t n);
/* 1 when the n little-endian floats at src are all finite (exponent bits
 * not all set), read in place. */
int sc_wire_f32s_finite(const uint8_t *src, size_t n);
void sc_wire_get_i32s(int32_t *dst, const uint8_t *src, size_t n);
void sc_wire_get_applied(const sc_wire_model_view_t *m, uint32_t i, sc_wire_applied_t *out);
/* Entry i of raw applied pairs (a model view's or a broadcast's applied_raw). */
void sc_wire_get_applied_raw(const uint8_t *raw, uint32_t i, sc_wire_applied_t *out);

const char *sc_wire_type_name(sc_wire_type_t type);
/* Value of key in a control message, or def when absent. */
double sc_wire_control_field(const sc_wire_control_t *m, uint32_t key, double def);

#endif
