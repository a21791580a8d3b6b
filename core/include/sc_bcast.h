/* sc_bcast.h — the model broadcast: what the aggregator of a shard sends to
 * the workers after each version, and how a worker follows it.
 *
 * The publisher keeps the shard's *view*, the parameters every worker that
 * follows the broadcast holds. A version goes out as a delta: params - view
 * is encoded with the downlink codec, the payload is decoded again and added
 * to the view, and the message is published; a worker adds the same decoded
 * payload with the same code, so its copy equals the view bit for bit. What
 * the codec dropped stays in params - view and goes out with the next deltas
 * (error feedback on the server side: nothing drifts). Every
 * keyframe_interval deltas, and whenever the view is unknown (start,
 * takeover, a failed publication), a keyframe carries the whole view
 * (float32, exact). Deltas name the partition offset of their keyframe (the
 * caller learns it from the keyframe's delivery report), so a worker that
 * starts, or falls behind, reads from the newest keyframe instead of every
 * version. Messages: SC_WIRE_BCAST in sc_wire.h; rules in
 * docs/DISTRIBUTED.md. Sans-I/O: offsets and end offsets come in as numbers.
 */
#ifndef SC_BCAST_H
#define SC_BCAST_H

#include <stddef.h>
#include <stdint.h>

#include "sc_buf.h"
#include "sc_codec.h"
#include "sc_conf.h"
#include "sc_err.h"
#include "sc_nn.h"
#include "sc_rng.h"
#include "sc_server.h"
#include "sc_wire.h"

typedef struct sc_bcast_spec {
        sc_codec_id_t codec;        /* downlink codec of deltas */
        sc_codec_params_t params;   /* its parameters (error_feedback is ignored: the view
                                       is the feedback) */
        uint32_t keyframe_interval; /* deltas between two keyframes, >= 1 */
} sc_bcast_spec_t;

/* The job's broadcast spec: job.downlink (codec, ratio, half_values) and
 * job.keyframe_interval. */
void sc_bcast_spec_conf(sc_bcast_spec_t *spec, const sc_conf_job_t *job);

/* ---- publisher: one per shard held ---- */

typedef struct sc_bcast_pub sc_bcast_pub_t;

/* A publisher for shard (begin, n floats); views (nviews, shard-relative,
 * sorted; may be 0/NULL) are the tensors for per-tensor codecs. The view
 * starts unknown: the first message is a keyframe. */
sc_err_t sc_bcast_pub_new(sc_bcast_pub_t **pubp, const sc_bcast_spec_t *spec, uint32_t shard,
                          uint64_t begin, size_t n, const sc_tensor_view_t *views, int nviews,
                          char *errstr, size_t errstr_size);
/* The same for the range [begin, end) of model's flat parameter buffer, its
 * tensors cut to the range as the views. */
sc_err_t sc_bcast_pub_new_model(sc_bcast_pub_t **pubp, const sc_bcast_spec_t *spec, uint32_t shard,
                                const sc_model_t *model, size_t begin, size_t end, char *errstr,
                                size_t errstr_size);
/* Accepts NULL. */
void sc_bcast_pub_destroy(sc_bcast_pub_t *pub);

/* Sets the owner's generation, carried by every message from now on (0,
 * the default, sends none). The J.bcast end offset of the shard's partition
 * when the owner took the shard is one: above every earlier owner's. A new
 * generation forgets the view (a keyframe next). */
void sc_bcast_pub_generation(sc_bcast_pub_t *pub, uint64_t generation);

/* Sets the rate sum carried by every message from now on: the stream rates
 * (samples/s) the job's live workers announced, for their auto batch
 * window, at most SC_WIRE_RATE_MAX; 0 (the default, and for a value that is
 * not > 0) sends none. */
void sc_bcast_pub_rate_sum(sc_bcast_pub_t *pub, double rate_sum);

/* 1 when the next message is a keyframe (view unknown, or keyframe_interval
 * deltas since the last keyframe). */
int sc_bcast_pub_key_due(const sc_bcast_pub_t *pub);
/* 1 when a delta can be encoded: a keyframe was encoded and its offset is
 * known (sc_bcast_pub_keyed). */
int sc_bcast_pub_delta_ready(const sc_bcast_pub_t *pub);
/* The offset the last keyframe was written at (its delivery report). */
void sc_bcast_pub_keyed(sc_bcast_pub_t *pub, int64_t offset);
/* Forgets the view (a publication failed, or the shard changed hands): the
 * next message is a keyframe. */
void sc_bcast_pub_reset(sc_bcast_pub_t *pub);
/* 1 when the view is known and stands for version. */
int sc_bcast_pub_current(const sc_bcast_pub_t *pub, uint64_t version);
/* 1 when the view is version's parameters exactly: its last message was a
 * keyframe of that version. */
int sc_bcast_pub_exact(const sc_bcast_pub_t *pub, uint64_t version);
/* The view (n floats) and its version; the view is valid after an encode. */
const float *sc_bcast_pub_view(const sc_bcast_pub_t *pub);
uint64_t sc_bcast_pub_version(const sc_bcast_pub_t *pub);

/* Appends one broadcast message for params (n floats) at version to out: a
 * keyframe when one is due, else a delta (SC_ERR_STATE when the keyframe's
 * offset is not known yet: call again after sc_bcast_pub_keyed). applied
 * (napplied) is the shard's applied-seq vector, carried as it is. The view
 * moves only on success; *kindp (may be NULL) gets the kind encoded. */
/* srv's applied-seq vector, what a broadcast message of its version
 * carries: (worker, seq) for each worker with a seq applied, into out (room
 * for the job's workers); returns the count. */
uint32_t sc_bcast_applied(const sc_server_t *srv, sc_wire_applied_t *out);
sc_err_t sc_bcast_pub_encode(sc_bcast_pub_t *pub, const float *params, uint64_t version,
                             const sc_wire_applied_t *applied, uint32_t napplied, sc_rng_t *rng,
                             sc_buf_t *out, sc_wire_bcast_kind_t *kindp, char *errstr,
                             size_t errstr_size);

/* ---- subscriber: one per shard followed (a plain struct) ---- */

typedef enum sc_bcast_action {
        SC_BCAST_APPLIED = 0, /* the view moved to the message's version */
        SC_BCAST_SKIP = 1,    /* nothing to do with this record; read on */
        SC_BCAST_SEEK = 2,    /* read the partition from *seekp next */
} sc_bcast_action_t;

typedef struct sc_bcast_sub {
        int has;                 /* the view is valid */
        uint64_t generation;     /* its owner's generation */
        uint64_t version;        /* its version */
        int64_t chain;           /* offset of the keyframe it was built from (-1 none) */
        int64_t next;            /* offset after the last record taken (or the seek target) */
        int64_t probe_from;      /* offset to return to after a look at the end (-1 none) */
        int64_t no_probe_before; /* no look at the end for records before this offset */
        int64_t sought;          /* keyframe offset last sought and not yet installed */
        uint32_t lag;            /* records behind the end that make a worker look for a
                                    newer keyframe (the keyframe interval) */
        uint64_t keyframes, deltas, skipped, seeks, gaps;
        uint64_t rollbacks; /* keyframes refused as older than the view */
} sc_bcast_sub_t;

void sc_bcast_sub_init(sc_bcast_sub_t *sub, uint32_t lag);

/* Takes the record at offset (a decoded broadcast message m of this shard,
 * n floats) of a partition whose end offset is end (-1 unknown) into view
 * (n floats). The rules (docs/DISTRIBUTED.md, "Model broadcast"):
 *  - a keyframe is installed (log order is publication order);
 *  - at a delta far behind (end - 1 - offset >= lag, and the end is more than lag
 *    records past the held keyframe): SEEK to end - 1 to learn the newest
 *    keyframe; the record there sends the reader on to its keyframe, or back
 *    (SEEK to the offset left) when it belongs to the held chain;
 *  - a delta of the held chain (its keyframe offset and generation) whose
 *    base is the held version is applied;
 *    one whose base is older is SKIPped (re-read); one whose base is newer
 *    means a hole: SKIPped until a newer keyframe (counted in gaps);
 *  - a delta of another chain newer than the view (or with no view): SEEK to
 *    its keyframe, once; any other delta: SKIP.
 * SC_ERR_DECODE (view untouched) for a message of another length, a delta
 * whose keyframe offset is not before its own, or a payload that does not
 * decode. */
sc_err_t sc_bcast_sub_take(sc_bcast_sub_t *sub, float *view, size_t n, const sc_wire_bcast_t *m,
                           int64_t offset, int64_t end, sc_bcast_action_t *actp, int64_t *seekp,
                           char *errstr, size_t errstr_size);

#endif
