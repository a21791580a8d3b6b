/* codec_impl.h — what the codec files share: the encoder struct and the const
 * vtable each codec provides. Internal to core/codec. */
#ifndef SC_CODEC_IMPL_H
#define SC_CODEC_IMPL_H

#include <string.h>

#include "sc_codec.h"
#include "sc_le.h"

/* One tensor: coordinates [off, off + numel) of the flat buffer, k of them
 * kept by the sparse codecs. */
typedef struct sc_codec_seg {
        size_t off;
        size_t numel;
        size_t k;
} sc_codec_seg_t;

/* Growable scratch for top-k: candidate positions (segment-relative) and
 * their magnitude keys. */
typedef struct sc_topk_scratch {
        uint32_t *cidx;
        uint32_t *ckey;
        size_t cap;
} sc_topk_scratch_t;

typedef struct sc_codec_ops {
        const char *name;
        sc_codec_id_t id;
        unsigned formats; /* bitmask (1 << sc_codec_format_t) of bodies it emits */
        /* Optional: allocates codec-specific state after the common part. */
        sc_err_t (*init)(sc_codec_t *codec, char *errstr, size_t errstr_size);
        /* Appends one payload to out; on error the caller truncates out. */
        sc_err_t (*encode)(sc_codec_t *codec, const float *grads, sc_rng_t *rng, sc_buf_t *out,
                           char *errstr, size_t errstr_size);
} sc_codec_ops_t;

struct sc_codec_s {
        const sc_codec_ops_t *ops;
        sc_codec_params_t params;
        size_t n;
        sc_codec_seg_t *segs;
        int nsegs;
        size_t ksum;      /* sum of segs[].k */
        size_t max_numel; /* largest segment */
        float *residual;  /* (n) when error feedback is on, else NULL */
        uint32_t *sel;    /* (ksum) selected global indices */
        float *selval;    /* (ksum) values sent for them */
        sc_topk_scratch_t topk;
        uint64_t *bitmap; /* randk: (max_numel / 64 + 1) words */
        float *segmax;    /* q8: (nsegs) max |value| of the current encode */
        double mean;      /* adaptive running mean */
        int decision;     /* adaptive vote mode: -1 none, 0 dense, 1 top-k */
        int rounded;      /* the last sparse encode sent rounded values (half, log8) */
        sc_codec_stats_t stats;
};

extern const sc_codec_ops_t sc_codec_none_ops;
extern const sc_codec_ops_t sc_codec_topk_ops;
extern const sc_codec_ops_t sc_codec_randk_ops;
extern const sc_codec_ops_t sc_codec_adacomp_ops;
extern const sc_codec_ops_t sc_codec_adaptive_ops;
extern const sc_codec_ops_t sc_codec_q8_ops;
extern const sc_codec_ops_t sc_codec_fp16_ops;

/* Writes the 8-byte payload header at p. */
void sc_codec_put_hdr(uint8_t *p, sc_codec_id_t id, sc_codec_format_t fmt, unsigned flags,
                      size_t n);

/* Body encoders and decoders shared between codecs. body points just after
 * the payload header, len is what remains. */
sc_err_t sc_codec_dense_decode_add(const uint8_t *body, size_t len, uint32_t n, float *acc,
                                   float scale, char *errstr, size_t errstr_size);
sc_err_t sc_codec_dense_decode_list(const uint8_t *body, size_t len, uint32_t n, uint32_t *idx,
                                    float *val, char *errstr, size_t errstr_size);
/* Appends a sparse payload of the codec's current selection (sel, selval,
 * ksum entries). */
sc_err_t sc_codec_sparse_encode(sc_codec_t *codec, unsigned flags, sc_buf_t *out);
sc_err_t sc_codec_sparse_check(const uint8_t *body, size_t len, uint32_t n, unsigned flags,
                               uint32_t *kp, char *errstr, size_t errstr_size);
sc_err_t sc_codec_sparse_decode_add(const uint8_t *body, size_t len, uint32_t n, unsigned flags,
                                    float *acc, float scale, char *errstr, size_t errstr_size);
sc_err_t sc_codec_sparse_decode_list(const uint8_t *body, size_t len, uint32_t n, unsigned flags,
                                     uint32_t *idx, float *val, char *errstr, size_t errstr_size);
sc_err_t sc_codec_fp16_decode_add(const uint8_t *body, size_t len, uint32_t n, float *acc,
                                  float scale, char *errstr, size_t errstr_size);
sc_err_t sc_codec_fp16_decode_list(const uint8_t *body, size_t len, uint32_t n, uint32_t *idx,
                                   float *val, char *errstr, size_t errstr_size);
sc_err_t sc_codec_q8_check(const uint8_t *body, size_t len, uint32_t n, char *errstr,
                           size_t errstr_size);
sc_err_t sc_codec_q8_decode_add(const uint8_t *body, size_t len, uint32_t n, float *acc,
                                float scale, char *errstr, size_t errstr_size);
sc_err_t sc_codec_q8_decode_list(const uint8_t *body, size_t len, uint32_t n, uint32_t *idx,
                                 float *val, char *errstr, size_t errstr_size);

/* Top-k over every segment of the codec: fills codec->sel (ascending) with
 * ksum indices of x (+ add when add is not NULL, computed on the fly without
 * writing) and codec->selval with those sums. */
sc_err_t sc_codec_topk_run(sc_codec_t *codec, const float *x, const float *add);
/* Top-k of one segment: appends base + position of the k largest |x + add|
 * to sel. */
sc_err_t sc_topk_segment(sc_topk_scratch_t *scratch, const float *x, const float *add, size_t numel,
                         size_t k, uint32_t base, uint32_t *sel);
void sc_topk_scratch_free(sc_topk_scratch_t *scratch);

/* Error feedback after a sparse send: residual = residual + g everywhere,
 * then residual[sel[j]] -= selval[j], so decoded + residual == g + old
 * residual. sent_exact: the values sent were residual + g themselves (top-k,
 * unscaled randk), so their residual becomes exactly 0 (even for NaN). */
void sc_codec_ef_commit_sparse(sc_codec_t *codec, const float *grads, int sent_exact);

#endif
