/* sc_codec.h — gradient codecs: turn a flat float buffer (a model's gradient
 * or delta, with per-tensor views) into compact bytes and back.
 *
 * An encoder (sc_codec_t) is per worker: it owns the error-feedback residual
 * and the adaptive codec's running statistics. Encoding appends one
 * self-describing payload to a caller buffer. Decoding is stateless: any
 * process can add a payload into a dense accumulator or list its
 * (index, value) pairs, and every byte is validated first (a corrupt payload
 * is an error, never a crash and never a partial update).
 *
 * Units: every buffer is float32, n elements; views give (offset, numel) in
 * floats. Indices on the wire are uint32, so n < 2^32.
 *
 * Payload (little-endian): u8 codec id, u8 body format, u16 flags, u32 n, then
 * the body:
 *   dense  n x f32
 *   sparse u32 k, index block (sc_codec_index_*), k x f32 values (flag HALF:
 *          k x IEEE binary16; flag LOG8: f32 lo, f32 hi, k x u8 log codes)
 *   fp16   n x IEEE binary16
 *   q8     u32 nseg, nseg x (u32 numel, f32 scale), n x int8 (value = q * scale)
 */
#ifndef SC_CODEC_H
#define SC_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "sc_buf.h"
#include "sc_err.h"
#include "sc_nn.h"
#include "sc_rng.h"

typedef enum sc_codec_id {
        SC_CODEC_NONE = 0,     /* dense float32 */
        SC_CODEC_TOPK = 1,     /* per tensor k largest |g|, optional error feedback */
        SC_CODEC_RANDK = 2,    /* per tensor k random coordinates */
        SC_CODEC_ADACOMP = 3,  /* AdaComp (NCA 2017): per tensor top-k, floor, no residual */
        SC_CODEC_ADAPTIVE = 4, /* ScaDLES: top-k or dense by a running norm criterion */
        SC_CODEC_Q8 = 5,       /* per tensor scale, int8 */
        SC_CODEC_FP16 = 6,     /* IEEE half, round to nearest even */
        SC_CODEC__END
} sc_codec_id_t;

typedef enum sc_codec_format {
        SC_CODEC_FMT_DENSE = 0,
        SC_CODEC_FMT_SPARSE = 1,
        SC_CODEC_FMT_FP16 = 2,
        SC_CODEC_FMT_Q8 = 3,
        SC_CODEC_FMT__END
} sc_codec_format_t;

/* Payload flags (EF and SCALED are informational; HALF and LOG8 say how the
 * sparse values are coded and are exclusive). */
#define SC_CODEC_FLAG_EF 0x1     /* the sender uses error feedback */
#define SC_CODEC_FLAG_SCALED 0x2 /* randk values were multiplied by numel / k */
#define SC_CODEC_FLAG_HALF 0x4   /* sparse body: values are IEEE half, 2 bytes each */
/* sparse body: f32 lo, f32 hi (the least nonzero and the largest |value|),
 * then one byte per value: 0 = zero, else bit 7 = sign and c = bits 0-6 in
 * 1..127 gives |value| = lo * (hi / lo)^((c - 1) / 126) (0x80 is invalid). */
#define SC_CODEC_FLAG_LOG8 0x8

#define SC_CODEC_HDR_SIZE 8

typedef enum sc_codec_round {
        SC_CODEC_K_FLOOR = 0, /* k = max(1, floor(ratio * numel)) */
        SC_CODEC_K_CEIL = 1,  /* k = max(1, ceil(ratio * numel)) */
} sc_codec_round_t;

/* Parameters; sc_codec_params_default() fills the defaults for a codec. */
typedef struct sc_codec_params {
        double ratio;           /* topk/randk/adacomp/adaptive: fraction kept per tensor,
                                   (0, 1]; defaults 0.01 (adacomp 0.01, adaptive 0.1) */
        sc_codec_round_t round; /* how ratio * numel becomes k (adacomp: floor) */
        int error_feedback;     /* topk/randk/adaptive/q8/fp16: residual += g - decoded and
                                   the residual is added to g before encoding. Default on
                                   for adaptive, off elsewhere; always off for adacomp. */
        int scale;              /* randk: send g * numel / k (unbiased) instead of g */
        double delta;           /* adaptive: send top-k while the running mean of
                                   | ||g|| - ||topk(g)|| | / ||g|| is <= delta (0.3) */
        double ema;             /* adaptive: 0 = cumulative mean over all steps, else
                                   exponential mean m = (1-ema) m + ema x (first x sets m) */
        int vote;               /* adaptive: the sync layer decides (majority vote) through
                                   sc_codec_adaptive_set_decision() */
        int stochastic;         /* q8: stochastic rounding driven by the encode rng */
        int half_values;        /* topk/randk/adacomp/adaptive: sparse values sent as IEEE
                                   half (2 bytes, round to nearest even) instead of float32;
                                   with error feedback the rounding error stays in the
                                   residual. Default off. */
        int log8_values;        /* the same codecs: sparse values as sign + 7-bit log code
                                   between the message's least nonzero and largest |value|
                                   (1 byte each + 8 per message, relative error <= 2.8% for
                                   a range of 1e3; SC_CODEC_FLAG_LOG8). A message with a
                                   non-finite value falls back to float32. Exclusive with
                                   half_values. Default off. */
        int rice_index;         /* the same codecs: the index block may also be Rice-coded
                                   gaps (SC_CODEC_INDEX_RICE) when that is the smallest.
                                   Default off. */
} sc_codec_params_t;

typedef struct sc_codec_s sc_codec_t;

/* Encoder statistics (since sc_codec_new). CNC = compressed / steps. */
typedef struct sc_codec_stats {
        uint64_t steps;       /* encode calls that succeeded */
        uint64_t compressed;  /* of which were sent sparse or quantized */
        uint64_t bytes;       /* payload bytes produced in all */
        size_t last_bytes;    /* payload bytes of the last encode */
        size_t last_nnz;      /* coordinates sent by the last encode */
        double last_metric;   /* adaptive: | ||g|| - ||topk(g)|| | / ||g|| of the last step */
        double mean_metric;   /* adaptive: running mean of the above */
        double residual_norm; /* L2 norm of the residual after the last encode (EF) */
} sc_codec_stats_t;

/* Compressed-step share CNC = compressed / steps (0 before any step). */
static inline double sc_codec_cnc(const sc_codec_stats_t *stats)
{
        return stats->steps ? (double)stats->compressed / (double)stats->steps : 0.0;
}

/* Defaults for codec id (see the field comments). */
void sc_codec_params_default(sc_codec_params_t *params, sc_codec_id_t id);

/* Codec by name ("none", "topk", "randk", "adacomp", "adaptive", "q8",
 * "fp16"); SC_ERR_INVAL with the list of names in errstr when unknown. */
sc_err_t sc_codec_id_from_name(const char *name, sc_codec_id_t *idp, char *errstr,
                               size_t errstr_size);
/* "none", ..., or "?" for an unknown id. */
const char *sc_codec_name(sc_codec_id_t id);

/* Creates a per-worker encoder for buffers of n floats. views (nviews, may be
 * 0/NULL: the whole buffer is one tensor) are the tensors, sorted by offset,
 * non-overlapping and inside [0, n); coordinates that no view covers form
 * tensors of their own, so every coordinate belongs to exactly one. params
 * NULL = defaults. The views are copied. */
sc_err_t sc_codec_new(sc_codec_t **codecp, sc_codec_id_t id, const sc_codec_params_t *params,
                      size_t n, const sc_tensor_view_t *views, int nviews, char *errstr,
                      size_t errstr_size);
/* Accepts NULL. */
void sc_codec_destroy(sc_codec_t *codec);

/* Views for one shard [begin, end) of the flat buffer: each view that
 * intersects it, cut to the range and shifted to shard-relative offsets, is
 * written to out (room for nviews); returns the count. views sorted by offset. */
int sc_codec_clip_views(const sc_tensor_view_t *views, int nviews, size_t begin, size_t end,
                        sc_tensor_view_t *out);

sc_codec_id_t sc_codec_id(const sc_codec_t *codec);
size_t sc_codec_n(const sc_codec_t *codec);
const sc_codec_params_t *sc_codec_params(const sc_codec_t *codec);

/* Encodes grads (n floats, not modified) and appends one payload to out.
 * rng drives randk and stochastic rounding (may be NULL for the others).
 * Updates the residual and statistics only on success. Non-finite input is
 * SC_ERR_INVAL for q8 (which needs a finite scale); other codecs carry it. */
sc_err_t sc_codec_encode(sc_codec_t *codec, const float *grads, sc_rng_t *rng, sc_buf_t *out,
                         char *errstr, size_t errstr_size);

/* The error-feedback residual (n floats), or NULL when the codec keeps none. */
const float *sc_codec_residual(const sc_codec_t *codec);
/* Zeroes the residual (e.g. after a new model arrives). */
void sc_codec_reset_residual(sc_codec_t *codec);
/* Copies the statistics; residual_norm is computed here (one pass over n). */
void sc_codec_stats(const sc_codec_t *codec, sc_codec_stats_t *stats);

/* Adaptive codec, majority-vote mode. A worker's vote is 1 when its running
 * mean is <= delta (it would send top-k), 0 otherwise and before any step.
 * The sync layer collects the votes, computes sc_codec_adaptive_majority()
 * (strict majority of 1s; a tie sends dense) and hands the decision to every
 * worker before its next encode. Without a decision a vote-mode encoder uses
 * its own vote. SC_ERR_INVAL on other codecs. */
int sc_codec_adaptive_vote(const sc_codec_t *codec);
int sc_codec_adaptive_majority(const int *votes, int nvotes);
sc_err_t sc_codec_adaptive_set_decision(sc_codec_t *codec, int compress);

/* What a payload holds, after validating its header and sizes (not yet every
 * sparse index: the decoders below do that). */
typedef struct sc_codec_info {
        sc_codec_id_t codec;
        sc_codec_format_t format;
        unsigned flags;
        uint32_t n;   /* dense length */
        uint32_t nnz; /* coordinates carried: k for sparse, n otherwise */
} sc_codec_info_t;

sc_err_t sc_codec_payload_info(const void *payload, size_t len, sc_codec_info_t *info, char *errstr,
                               size_t errstr_size);

/* acc[i] += scale * decoded[i] for a payload of n floats; acc is (n). The
 * whole payload is validated before acc is touched. */
sc_err_t sc_codec_decode_add(const void *payload, size_t len, float *acc, size_t n, float scale,
                             char *errstr, size_t errstr_size);

/* Lists the payload's coordinates in ascending index order: idx and val have
 * room for cap entries (info.nnz are needed); *nnzp receives the count. Dense
 * formats list every coordinate. */
sc_err_t sc_codec_decode_sparse(const void *payload, size_t len, uint32_t *idx, float *val,
                                size_t cap, size_t *nnzp, char *errstr, size_t errstr_size);

/* Top-k selection on its own, as the codecs use it: writes into sel (k
 * entries, ascending) the indices of the k largest |x[i]| of x (n floats),
 * ties broken by lower index first. Returns SC_ERR_NOMEM or SC_OK.
 * 1 <= k <= n. For tests and for callers needing the selection only. */
sc_err_t sc_codec_topk_select(const float *x, size_t n, size_t k, uint32_t *sel);

/* k for a tensor of numel elements: max(1, floor|ceil(ratio * numel)), at
 * most numel, with ratio * numel snapped to an integer when within 1e-6. */
size_t sc_codec_k(double ratio, sc_codec_round_t round, size_t numel);

/* IEEE binary16 conversions (round to nearest even; inf, nan, subnormals). */
uint16_t sc_codec_f32_to_f16(float f);
float sc_codec_f16_to_f32(uint16_t h);

/* Sparse index block: a strictly increasing list of k indices < n, coded as
 * the smallest of varint gaps, fixed-width bit-packed gaps or a bitmap (and
 * optionally Rice-coded gaps). Block: u8 method, u8 width, u16 0, u32 body
 * bytes, body. Rice: width = parameter r (0..31); gap g is g >> r one-bits, a
 * zero bit, then the low r bits of g, LSB first, zero-padded to a byte. */
#define SC_CODEC_INDEX_VARINT 0
#define SC_CODEC_INDEX_BITPACK 1
#define SC_CODEC_INDEX_BITMAP 2
#define SC_CODEC_INDEX_RICE 3
#define SC_CODEC_INDEX_AUTO (-1)      /* the smallest of varint, bitpack, bitmap */
#define SC_CODEC_INDEX_AUTO_RICE (-2) /* the smallest of all four */
#define SC_CODEC_INDEX_HDR 8

/* Bytes the block for idx would take with SC_CODEC_INDEX_AUTO (header included). */
size_t sc_codec_index_size(const uint32_t *idx, size_t k, uint32_t n);
/* Appends the block to out with method (a method or one of the AUTO values). */
sc_err_t sc_codec_index_encode(const uint32_t *idx, size_t k, uint32_t n, int method,
                               sc_buf_t *out);
/* Decodes a block of k indices < n from p (len bytes available); *usedp gets
 * the block's size. idx may be NULL to validate only: the work is then
 * bounded by the block's bytes (a bit-packed block of width 0, the indices
 * 0..k-1, is validated from its header), else it is O(k). */
sc_err_t sc_codec_index_decode(const uint8_t *p, size_t len, size_t k, uint32_t n, uint32_t *idx,
                               size_t *usedp, char *errstr, size_t errstr_size);

#endif
