/* sc_stream.h — one input stream (a topic) of a worker: a bounded buffer of
 * decoded samples with their (partition, offset), an EWMA arrival-rate
 * estimator, a buffer policy (persistence with pause/resume backpressure, or
 * ScaDLES truncation), offset tracking and exact record accounting.
 *
 * Sans-I/O: every time is a `double t` in seconds on the driver's clock
 * (monotonic; a smaller t than seen before is taken as the latest t). Not
 * thread-safe. A driver's loop per record:
 *
 *   float *x = sc_stream_slot(s);                 (NULL: full, see below)
 *   f = sc_decode_record(&dspec, &rec, x, &label, ...);
 *   f == SC_DECODE_OK ? sc_stream_push_slot(s, label, part, off, t, ...)
 *                     : sc_stream_reject(s, part, off, f, &first, ...);
 *   switch (sc_stream_flow(s)) { PAUSE: pause partitions; RESUME: resume }
 *
 * then batches come from sc_batcher_* (sc_batch.h), and after each
 * acknowledged update sc_stream_commits() lists what to commit. */
#ifndef SC_STREAM_H
#define SC_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "sc_decode.h"
#include "sc_err.h"
#include "sc_offsets.h"

/* ---- arrival-rate estimator ---- */

/* Exponentially weighted samples/s with time constant tau seconds: each
 * arrival adds 1, the sum decays by exp(-dt/tau), and the estimate is
 * corrected for the time observed so far (so it is unbiased from the start:
 * n arrivals in the first e seconds read as about n/e). */
typedef struct sc_rate {
        double tau;
        double t0, t_last; /* first and latest time seen */
        double acc;        /* decayed arrival count at t_last */
        double prior;      /* samples/s carried over (sc_rate_seed); 0: none */
        int started;
} sc_rate_t;

/* tau > 0 seconds. */
void sc_rate_init(sc_rate_t *rate, double tau);
/* Counts n arrivals at time t (n may be 0: it only starts the clock). */
void sc_rate_observe(sc_rate_t *rate, double t, double n);
/* Samples/s at time t (>= 0; 0 until time has passed since the first
 * observation). Does not change rate. */
double sc_rate_get(const sc_rate_t *rate, double t);
/* Starts the estimate from r samples/s measured before (a resumed
 * checkpoint's): the first observation finds a history that reads r, which
 * new arrivals then replace with time constant tau. No effect once started
 * or for r not finite or <= 0. */
void sc_rate_seed(sc_rate_t *rate, double r);

/* ---- stream ---- */

typedef enum sc_stream_policy {
        SC_STREAM_PERSIST,  /* never drop: pause partitions at the high watermark */
        SC_STREAM_TRUNCATE, /* keep the newest window's worth, drop the rest */
        SC_STREAM_POLICY__END
} sc_stream_policy_t;

/* Per-stream configuration. Defaults from sc_stream_spec_defaults(). */
typedef struct sc_stream_spec {
        sc_stream_policy_t policy; /* default persist */
        size_t cap;                /* samples held in memory, 1..2^24; default 8192. The
                                      float slab is (cap + 1) * numel floats, allocated
                                      once, grown once by sc_stream_reserve. */
        double high_watermark;     /* persist: fraction of cap at or above which the
                                      stream asks to pause; (0, 1], default 0.8 */
        double low_watermark;      /* persist: fraction of cap below which a paused stream
                                      asks to resume; [0, high), default 0.5 */
        double window;             /* truncate: seconds of arrivals kept, i.e. at most
                                      ceil(rate * window) samples; > 0, default 1 */
        size_t keep_min;           /* truncate: keep at least this many (<= cap) so a
                                      batch can form; default 8 */
        double rate_tau;           /* rate estimator time constant, s; > 0, default 1 */
} sc_stream_spec_t;

/* Where one sample came from; kept with it until acknowledged. */
typedef struct sc_stream_ref {
        int32_t partition;
        uint32_t epoch; /* offset-tracking epoch of the partition (sc_offsets.h) */
        int64_t offset;
        double t; /* arrival time */
} sc_stream_ref_t;

/* Record accounting. At all times
 *   consumed == rejected + dropped + revoked + buffered + inflight + trained.
 * buffered: in the stream; inflight: taken (in a shuffle buffer or a batch)
 * and not yet acknowledged; trained: its batch's update was acknowledged. */
typedef struct sc_stream_stats {
        uint64_t consumed; /* records pushed or rejected */
        uint64_t rejected; /* malformed (faults has them per kind) */
        uint64_t dropped;  /* truncated away by the policy */
        uint64_t revoked;  /* buffered when their partition was revoked */
        uint64_t buffered;
        uint64_t inflight;
        uint64_t trained;
        uint64_t orphaned; /* of inflight: partition revoked, offsets forgotten */
        uint64_t peak_buffered;
        uint64_t pauses;    /* times the stream asked to pause */
        double latency_sum; /* seconds from arrival to take, summed over taken samples */
        double latency_max;
        uint64_t taken;   /* samples taken (latency count) */
        uint64_t skipped; /* records a resumed checkpoint had trained: finished, not consumed */
        uint64_t chunks_freed; /* chunks of rows given back (a backlog drained, the topic left) */
        sc_decode_stats_t faults;
} sc_stream_stats_t;

typedef enum sc_stream_flow {
        SC_STREAM_FLOW_NONE,
        SC_STREAM_FLOW_PAUSE,  /* pause every assigned partition of this stream */
        SC_STREAM_FLOW_RESUME, /* resume them */
} sc_stream_flow_t;

typedef struct sc_stream_s sc_stream_t;

/* The defaults' one home: sc_stream_spec_defaults and the configuration's
 * streams.* rows (core/conf_table.c) both take them from here. */
#define SC_STREAM_DEF_POLICY SC_STREAM_PERSIST
#define SC_STREAM_DEF_POLICY_NAME "persist"
#define SC_STREAM_DEF_CAP 8192
#define SC_STREAM_DEF_HIGH_WATERMARK 0.8
#define SC_STREAM_DEF_LOW_WATERMARK 0.5
#define SC_STREAM_DEF_WINDOW 1
#define SC_STREAM_DEF_KEEP_MIN 8
#define SC_STREAM_DEF_RATE_TAU 1
void sc_stream_spec_defaults(sc_stream_spec_t *spec);
/* Errors name the field as "stream.<name>". */
sc_err_t sc_stream_spec_check(const sc_stream_spec_t *spec, char *errstr, size_t errstr_size);

/* A stream of samples of numel floats each. Copies spec. */
sc_err_t sc_stream_new(sc_stream_t **streamp, const sc_stream_spec_t *spec, size_t numel,
                       char *errstr, size_t errstr_size);
/* Accepts NULL. */
void sc_stream_destroy(sc_stream_t *stream);

const sc_stream_spec_t *sc_stream_spec(const sc_stream_t *stream);
size_t sc_stream_numel(const sc_stream_t *stream);

/* Space for the next sample's numel floats (decode into it, then
 * sc_stream_push_slot), valid until the next call that changes the stream.
 * NULL when a persist stream is at cap (then the record is not consumed: the
 * driver keeps it or seeks back to it, and should have paused already), or
 * when the rows could not be allocated (sc_stream_full tells which). A
 * truncate stream is never full: the oldest sample is dropped on push. Rows
 * are allocated as the buffer grows and given back as it drains. */
float *sc_stream_slot(sc_stream_t *stream);
/* 1 if a NULL from sc_stream_slot means the stream has no room, 0 if it
 * means out of memory. */
int sc_stream_full(const sc_stream_t *stream);
/* Bytes of sample rows allocated now. */
size_t sc_stream_row_bytes(const sc_stream_t *stream);

/* Buffers the sample written into the slot, arrived at time t. Errors, all
 * leaving the record unconsumed: SC_ERR_AGAIN (persist stream at cap),
 * SC_ERR_STATE (offset not after the partition's last one), SC_ERR_INVAL (t
 * not finite, partition or offset < 0). May drop older samples (truncate). */
sc_err_t sc_stream_push_slot(sc_stream_t *stream, int32_t label, int32_t partition, int64_t offset,
                             double t, char *errstr, size_t errstr_size);
/* Copies x (numel floats) into the stream; otherwise as push_slot. */
sc_err_t sc_stream_push(sc_stream_t *stream, const float *x, int32_t label, int32_t partition,
                        int64_t offset, double t, char *errstr, size_t errstr_size);

/* Finishes (partition, offset) without consuming it: a record the model
 * already holds (a checkpoint it resumed from covers it). Counted as
 * skipped; errors as sc_stream_reject's. */
sc_err_t sc_stream_skip(sc_stream_t *stream, int32_t partition, int64_t offset, char *errstr,
                        size_t errstr_size);
/* Counts a malformed record (consumed, rejected, its offset finished at
 * once). *first_seen (if not NULL) is 1 the first time this fault kind is
 * seen on the stream: log it then with topic/partition/offset. Errors as
 * push_slot (SC_ERR_STATE, SC_ERR_INVAL), leaving nothing counted. */
sc_err_t sc_stream_reject(sc_stream_t *stream, int32_t partition, int64_t offset,
                          sc_decode_fault_t fault, double t, int *first_seen, char *errstr,
                          size_t errstr_size);

/* Samples buffered now. */
size_t sc_stream_count(const sc_stream_t *stream);
/* Arrival rate (samples/s of pushed samples) at time t; starts the
 * estimator's clock if nothing was seen yet. Also gives back the chunks of
 * rows a drained backlog left (see sc_stream_slot): the batcher asks it at
 * every poll. */
double sc_stream_rate(sc_stream_t *stream, double t);
/* The rate a resumed checkpoint measured for this stream (sc_rate_seed). */
void sc_stream_seed_rate(sc_stream_t *stream, double rate);
/* Truncate policy: drops the oldest samples beyond
 * clamp(ceil(rate(t) * window), keep_min, cap); returns how many. Persist: 0. */
size_t sc_stream_truncate(sc_stream_t *stream, double t);

/* Moves the n oldest samples out (n is capped at the count), copied: x gets
 * (n, numel) floats, labels (n), refs (n). They become inflight until
 * sc_stream_done(). t is the take time (for latency). Returns the count. */
size_t sc_stream_take(sc_stream_t *stream, size_t n, float *x, int32_t *labels,
                      sc_stream_ref_t *refs, double t);
/* Lending, for a shuffle buffer that holds samples by reference: a lent
 * sample leaves the buffer (inflight, as taken) but keeps its slot of the
 * stream's slab, which no push, truncation or revocation reuses or moves,
 * until released; its row is read from there once, into a batch.
 *
 * Makes room for up to lend_max samples lent at once (the slab grows to
 * cap + 1 + lend_max rows; a stream belongs to one borrower, which reserves
 * before it lends). Not between sc_stream_slot and the push. SC_ERR_NOMEM,
 * SC_ERR_INVAL (too many). */
sc_err_t sc_stream_reserve(sc_stream_t *stream, size_t lend_max, char *errstr, size_t errstr_size);
/* Lends the n oldest samples (n capped at the count and at the reserve left):
 * slots (n), labels (n), refs (n); inflight until sc_stream_done() as with
 * take. Returns the count. */
size_t sc_stream_lend(sc_stream_t *stream, size_t n, uint32_t *slots, int32_t *labels,
                      sc_stream_ref_t *refs, double t);
/* The numel floats of a lent slot. */
const float *sc_stream_row(const sc_stream_t *stream, uint32_t slot);
/* Gives a lent slot back (its row was read). */
void sc_stream_release(sc_stream_t *stream, uint32_t slot);
/* 1 when the sample of ref, taken or lent, belongs to a partition revoked
 * since (its offsets are forgotten: it is orphaned). */
int sc_stream_ref_revoked(const sc_stream_t *stream, const sc_stream_ref_t *ref);
/* Gives back a lent slot whose partition was revoked (sc_stream_ref_revoked)
 * without training it: the new owner reads the record again, so it counts
 * as revoked, no longer inflight or orphaned. */
void sc_stream_unlend(sc_stream_t *stream, uint32_t slot, const sc_stream_ref_t *ref);

/* The update that used a taken sample was acknowledged: trained, and its
 * offset finished. A sample of a revoked partition is counted trained but
 * commits nothing. SC_ERR_STATE if ref is not an inflight sample. */
sc_err_t sc_stream_done(sc_stream_t *stream, const sc_stream_ref_t *ref, char *errstr,
                        size_t errstr_size);

/* Backpressure (persist): a change the driver has not been told of yet, then
 * considered told. Pause at count >= high watermark, resume once count <
 * low watermark. Truncate streams never pause. */
sc_stream_flow_t sc_stream_flow(sc_stream_t *stream);
/* Whether partitions of the stream should be paused now (1) or not (0). */
int sc_stream_paused(const sc_stream_t *stream);

/* Partitions whose commit position advanced since last asked (see
 * sc_offsets_changed). */
size_t sc_stream_commits(sc_stream_t *stream, sc_offsets_commit_t *out, size_t max);
/* The offset tracker (read-only use: positions, outstanding counts). */
const sc_offsets_t *sc_stream_offsets(const sc_stream_t *stream);

/* The partition was revoked: its buffered samples are discarded (counted
 * revoked, not committed: the new owner reads them again), its offsets
 * forgotten; its inflight samples become orphaned (a shuffle buffer gives
 * back those it holds untrained: sc_stream_unlend). Returns samples
 * discarded. */
size_t sc_stream_revoke(sc_stream_t *stream, int32_t partition);

/* Gives the slab's memory back when nothing is buffered or lent (a stream
 * whose partitions were all revoked: its slab stays as large as its busiest
 * moment otherwise); the next sc_stream_slot makes it again. */
void sc_stream_shrink(sc_stream_t *stream);

const sc_stream_stats_t *sc_stream_stats(const sc_stream_t *stream);
/* Checks the accounting identity and that it matches the buffer and the
 * offset tracker; SC_ERR_STATE with the numbers in errstr if not. */
sc_err_t sc_stream_check(const sc_stream_t *stream, char *errstr, size_t errstr_size);

#endif
