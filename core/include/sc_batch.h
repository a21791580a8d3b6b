/* sc_batch.h — batch assembly over one worker's streams: fixed b (the BSP
 * baseline) or rate-proportional b = clamp(S * window, b_min, b_max)
 * (ScaDLES), drawn across the streams in proportion to their rates through a
 * seeded shuffle buffer (sc_mix.h) that holds `shuffle` samples back, with waiting-time accounting
 * and acknowledgement of the batches whose updates were delivered.
 *
 * Driver loop (times are seconds on the driver's clock):
 *
 *   if (sc_batcher_ready(bt, t, &wake_at)) {
 *           sc_batcher_take(bt, t, batch, ...);    train on batch->x, labels
 *           ... publish the update, remember batch->id ...
 *   } else sleep/poll until wake_at or the next record
 *   on delivery of the update for id: sc_batcher_ack(bt, id, ...), then
 *   sc_stream_commits() on each stream and commit what it lists.
 *
 * The batcher does not own the streams; a stream belongs to one batcher.
 * Not thread-safe. */
#ifndef SC_BATCH_H
#define SC_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "sc_err.h"
#include "sc_mix.h"
#include "sc_stream.h"

#define SC_BATCH_MAX_STREAMS 64
#define SC_BATCH_MAX 65536

typedef enum sc_batch_mode {
        SC_BATCH_RATE,  /* at each window end, what arrived: up to b_max, at least b_min */
        SC_BATCH_FIXED, /* exactly b samples, as soon as b are available */
        SC_BATCH_MODE__END
} sc_batch_mode_t;

/* Defaults from sc_batch_spec_defaults(). */
typedef struct sc_batch_spec {
        sc_batch_mode_t mode; /* default rate */
        int b;                /* fixed: samples per batch, 1..65536; default 64 */
        int b_min;            /* rate: smallest batch, 1..b_max; default 8 */
        int b_max;            /* rate: largest batch, b_min..65536; default 1024 */
        double window;        /* rate: seconds between batches at least; (0, 1e6], default 1 */
        int window_auto;      /* rate, in a job (worker.window "auto"): the window is set from
                                 the job's rate sum (sc_batcher_set_window); window until then */
        int shuffle;          /* shuffle buffer: samples held back to mix with later
                                 arrivals, 0..1048576 (0 = shuffle within each batch
                                 only); default 256 (worker.shuffle). A batch needs this many samples
                                 beyond its own, so the first batch waits for them,
                                 and each sample waits about shuffle / rate seconds. */
} sc_batch_spec_t;

/* One batch. x is (cap, numel) floats of which the first n rows are valid,
 * labels (n), refs/streams (n): where each sample came from (stream index
 * into the batcher's streams). Owned by the caller, reused across takes. */
typedef struct sc_batch {
        uint64_t id; /* pass to sc_batcher_ack() once the update is acknowledged */
        int n, cap;
        size_t numel;
        float *x;
        int32_t *labels;
        sc_stream_ref_t *refs;
        int *streams;
        double t;      /* when it was taken */
        double waited; /* seconds from the first ready() query after the previous take to
                          this take: the time the trainer waited for samples */
        int borrowed;  /* x and labels are the caller's (sc_batch_wrap) */
} sc_batch_t;

typedef struct sc_batcher_stats {
        uint64_t batches, samples; /* taken */
        uint64_t acked;            /* batches acknowledged */
        double wait_sum, wait_max; /* seconds, over taken batches */
        double last_wait;
} sc_batcher_stats_t;

typedef struct sc_batcher_s sc_batcher_t;

/* The defaults' one home: sc_batch_spec_defaults and the configuration's
 * worker.* batch rows (core/conf_table.c) both take them from here. */
#define SC_BATCH_DEF_MODE SC_BATCH_RATE
#define SC_BATCH_DEF_MODE_NAME "rate"
#define SC_BATCH_DEF_B 64
#define SC_BATCH_DEF_B_MIN 8
#define SC_BATCH_DEF_B_MAX 1024
#define SC_BATCH_DEF_WINDOW 1
#define SC_BATCH_DEF_SHUFFLE 256
void sc_batch_spec_defaults(sc_batch_spec_t *spec);
/* Errors name the field as "batch.<name>". */
sc_err_t sc_batch_spec_check(const sc_batch_spec_t *spec, char *errstr, size_t errstr_size);
/* The largest batch the spec can produce (b or b_max). */
int sc_batch_spec_max(const sc_batch_spec_t *spec);

/* A batch of room for cap samples of numel floats. */
sc_err_t sc_batch_new(sc_batch_t **batchp, int cap, size_t numel);
/* A batch whose rows are the caller's: x (cap, numel) floats and labels
 * (cap), borrowed (sc_batch_destroy leaves them), e.g. the head of a larger
 * training buffer, so that a take gathers the samples straight into it. */
sc_err_t sc_batch_wrap(sc_batch_t **batchp, int cap, size_t numel, float *x, int32_t *labels);
/* Accepts NULL. */
void sc_batch_destroy(sc_batch_t *batch);

/* A batcher over n_streams streams (1..SC_BATCH_MAX_STREAMS, same numel),
 * borrowed for its lifetime. Shuffling is seeded by seed. SC_ERR_CONFIG if
 * the streams can never hold a batch (e.g. truncate streams whose keep_min
 * and caps sum to less than b). */
sc_err_t sc_batcher_new(sc_batcher_t **batcherp, const sc_batch_spec_t *spec,
                        sc_stream_t *const *streams, int n_streams, uint64_t seed, char *errstr,
                        size_t errstr_size);
/* Accepts NULL. Samples still in the shuffle buffer or pending stay inflight
 * in their streams' accounting. */
void sc_batcher_destroy(sc_batcher_t *batcher);

/* Adds one more stream (same numel, borrowed for the batcher's lifetime), for
 * a driver whose streams appear over time (e.g. topics assigned later); its
 * index is the previous stream count. SC_ERR_INVAL if full or of another
 * sample size. */
sc_err_t sc_batcher_add_stream(sc_batcher_t *batcher, sc_stream_t *stream, char *errstr,
                               size_t errstr_size);

/* Whether a batch can be taken at time t (also applies truncation and starts
 * the first window). If not, *wake_at (if not NULL) is when to ask again: the
 * window end, or INFINITY when it waits for samples (ask after the next push).
 * The first call after a take starts the waiting-time clock. */
int sc_batcher_ready(sc_batcher_t *batcher, double t, double *wake_at);

/* Takes the batch ready at time t into batch (cap >= sc_batch_spec_max,
 * same numel): SC_ERR_AGAIN if none is ready, SC_ERR_INVAL for a batch of
 * the wrong size, SC_ERR_NOMEM. The samples stay inflight until ack. */
sc_err_t sc_batcher_take(sc_batcher_t *batcher, double t, sc_batch_t *batch, char *errstr,
                         size_t errstr_size);

/* Draining (on != 0: end of input or shutdown): the shuffle buffer holds
 * nothing back, so every buffered sample can still be trained on. */
void sc_batcher_drain(sc_batcher_t *batcher, int on);

/* Flushing, for good (a graceful stop): batches come from the shuffle pool
 * only, nothing more from the streams, of any size up to b (fixed) or, in
 * rate mode, the size of the last batch taken before the flush (b_max when
 * there was none: a step with a linearly scaled LR stays the size of the
 * steps before it), without waiting for a window, so the samples drawn
 * into the pool (which pin their partitions' commit points) and the last
 * partial batch are trained. */
void sc_batcher_flush(sc_batcher_t *batcher);

/* After a revocation (sc_stream_revoke): the shuffle buffer gives back,
 * untrained, the samples of revoked partitions (sc_mix_pool_drop_revoked);
 * returns how many. */
size_t sc_batcher_drop_revoked(sc_batcher_t *batcher);

/* The update trained on batch id was acknowledged: its samples count as
 * trained and their offsets finish. SC_ERR_STATE for an unknown id. */
sc_err_t sc_batcher_ack(sc_batcher_t *batcher, uint64_t id, char *errstr, size_t errstr_size);

/* The ScaDLES size for the rates at time t: clamp(round(S * window), b_min,
 * b_max) with S the sum of the streams' rates (fixed mode: b). */
int sc_batcher_target(sc_batcher_t *batcher, double t);
/* S: the sum of the streams' measured rates at time t, samples/s. */
double sc_batcher_rate(sc_batcher_t *batcher, double t);
/* The rate mode's window from now on (the auto window of a job); a value
 * outside (0, 1e6] is ignored. */
void sc_batcher_set_window(sc_batcher_t *batcher, double window);
double sc_batcher_window(const sc_batcher_t *batcher);
/* Batches taken and not yet acknowledged. */
size_t sc_batcher_pending(const sc_batcher_t *batcher);
/* Samples in the shuffle buffer. */
size_t sc_batcher_pooled(const sc_batcher_t *batcher);
const sc_batcher_stats_t *sc_batcher_stats(const sc_batcher_t *batcher);
/* Checks every stream's accounting and that the streams' inflight samples
 * are exactly those in the shuffle buffer and in pending batches. */
sc_err_t sc_batcher_check(const sc_batcher_t *batcher, char *errstr, size_t errstr_size);

#endif
