/* sc_kafka_source.h — the Kafka source of a worker: a consumer-group member
 * that consumes the configured topics (a list and/or a "^regex"), one stream
 * per topic, decodes records into the streams, applies persistence
 * backpressure by pausing partitions, routes malformed records to a
 * dead-letter topic, counts records lost to retention, and commits a
 * partition's offset only up to records that were trained on, dropped by
 * truncation or rejected.
 *
 * Single-threaded: every call, and the rebalance and commit callbacks that
 * librdkafka runs inside sc_kafka_source_poll(), happen on the caller's
 * thread. Times `t` are seconds on the caller's monotonic clock.
 *
 * Accounting (docs/STREAMS.md). Over the streams, at all times:
 *   consumed == trained + dropped + rejected + returned + buffered + inflight
 * consumed: records handed to a stream (decoded or rejected); returned:
 * buffered samples of partitions revoked by a rebalance (discarded
 * uncommitted: the partition's new owner reads them again); inflight: in the
 * shuffle buffer or a batch not yet acknowledged. Records received from
 * Kafka but not yet handed to a full stream are `held`. */
#ifndef SC_KAFKA_SOURCE_H
#define SC_KAFKA_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "sc_batch.h"
#include "sc_conf.h"
#include "sc_err.h"
#include "sc_ingest.h"
#include "sc_stream.h"

typedef struct sc_kafka_source_s sc_kafka_source_t;

/* The decoder of topic: its source.topics element, else streams.*
 * (kafka_source.c; the workers' pushed records and the eval set use it too). */
void sc_ks_decode_spec(const sc_conf_t *conf, const char *topic, size_t numel, int n_classes,
                       sc_decode_spec_t *ds);
/* The configured decoder of topic (its source.topics element, else streams). */
const sc_conf_decode_t *sc_ks_topic_decode(const sc_conf_t *conf, const char *topic);

#include "sc_log.h"

/* Counters of the source itself (the streams count the records). */
typedef struct sc_kafka_source_stats {
        uint64_t ks_received;      /* messages with a record received from Kafka */
        uint64_t ks_held;          /* received, waiting for room in a full stream */
        uint64_t ks_held_returned; /* held when their partition was revoked */
        uint64_t ks_duplicates;    /* offsets at or below one already consumed (skipped) */
        uint64_t ks_nomem;         /* times a record was held: no memory for its row */
        uint64_t ks_lost;          /* records removed by retention before being read */
        uint64_t ks_lost_events;
        uint64_t ks_orphaned;    /* inflight when their partition was revoked (trained, but
                                    their offsets are left to the new owner) */
        uint64_t ks_redelivered; /* finished (trained, dropped or rejected) but their commit was
                                    refused when their partition was revoked (a rebalance under
                                    way): the new owner reads them again */
        uint64_t ks_dead_letter; /* malformed records delivered to the dead-letter topic */
        uint64_t ks_dead_letter_failed; /* ... refused or failed delivery */
        uint64_t ks_pauses, ks_resumes; /* partition pause / resume calls */
        uint64_t ks_align_pauses; /* ... of them, of a partition ahead in time (source.align) */
        uint64_t ks_assigns, ks_revokes; /* rebalance events */
        uint64_t ks_commits, ks_commit_errors;
        uint64_t ks_consumer_errors; /* error events from the consumer (logged) */
        int ks_partitions;           /* assigned now */
        int ks_awaiting;          /* 1 from a revocation that left nothing assigned (a session that
                                     timed out, a coordinator that moved) to the next assignment */
        int ks_paused_partitions; /* paused now */
        uint64_t ks_wakeups; /* fetchers woken when the consumer queue ran dry (docs/STREAMS.md) */
} sc_kafka_source_stats_t;

/* Creates the consumer from conf (its "kafka" object first, then group.id =
 * source.group_id unless kafka.group.id is given; enable.auto.commit and
 * enable.auto.offset.store are forced off and an error if set to true) and
 * subscribes to source.topics and source.pattern. numel is the model's input
 * size and n_classes its output size (decoders check labels against it);
 * seed drives the batch shuffle. log may be NULL. Errors name the JSON path.
 * On success the caller owns *srcp. */
sc_err_t sc_kafka_source_new(sc_kafka_source_t **srcp, const sc_conf_t *conf, size_t numel,
                             int n_classes, uint64_t seed, sc_log_fn log, void *log_opaque,
                             char *errstr, size_t errstr_size);

/* Leaves the group (committing what is committable first) and frees
 * everything. Accepts NULL. */
void sc_kafka_source_destroy(sc_kafka_source_t *src);

/* Serves the consumer for up to timeout_ms (0 = do not wait), handing at most
 * max records to the streams, then applies pause/resume for every stream.
 * *n (if not NULL) receives the records received. SC_ERR_IO on a fatal
 * consumer error (errstr says which). */
sc_err_t sc_kafka_source_poll(sc_kafka_source_t *src, double t, int timeout_ms, size_t max,
                              size_t *n, char *errstr, size_t errstr_size);

/* The batcher over the streams; NULL until the first record without
 * sc_kafka_source_feed.
 * Borrowed: valid until sc_kafka_source_destroy(). */
sc_batcher_t *sc_kafka_source_batcher(sc_kafka_source_t *src);

/* Records go into ingest, the caller's (it outlives the source, whose
 * destruction still returns buffered records to it), instead of an ingest
 * path the source makes of its own with the first record: the source is
 * then the record pump (poll, hold, pause/resume, commit) of the caller's
 * streams and batcher. Before the first poll; SC_ERR_STATE after. */
sc_err_t sc_kafka_source_feed(sc_kafka_source_t *src, sc_ingest_t *ingest, char *errstr,
                              size_t errstr_size);

/* Called with every record the ingest path took into its stream (not the
 * malformed ones, not re-deliveries), in consumption order: stream is the
 * stream's index (sc_kafka_source_stream), m is valid during the call only.
 * For a caller that keeps something of the record beside its sample (the
 * predictor keeps its key and headers); cb NULL removes it. */
typedef void (*sc_kafka_record_fn)(void *opaque, int stream, const rd_kafka_message_t *m);
void sc_kafka_source_on_record(sc_kafka_source_t *src, sc_kafka_record_fn cb, void *opaque);

/* Durable mode, for a worker that checkpoints what its model holds: a
 * revoked partition's cover is kept (sc_ingest_remember), and every commit
 * (periodic, at a revocation, at the end) commits the positions the last
 * checkpoint covers (sc_kafka_source_durable_at), never further: a process
 * killed at any moment re-reads every record its resumed model lacks. */
void sc_kafka_source_durable(sc_kafka_source_t *src, int on);
/* The last durable checkpoint covers topic [partition] up to next. */
void sc_kafka_source_durable_at(sc_kafka_source_t *src, const char *topic, int32_t partition,
                                int64_t next);

/* Shared-model mode, for a job member: every commit carries in the
 * offset's metadata the partition's finished offsets above it, and a
 * partition's new owner (another member, or this one restarted) skips the
 * records that metadata names when it reads them, because the job's model
 * holds them already (docs/DISTRIBUTED.md, "Records at a rebalance"). */
void sc_kafka_source_commit_covers(sc_kafka_source_t *src, int on);

/* The source's consumer (for sc_kafka_waker_watch). Borrowed. */
rd_kafka_t *sc_kafka_source_handle(sc_kafka_source_t *src);

/* Acknowledges a trained batch (sc_batcher_ack); its offsets become
 * committable. */
sc_err_t sc_kafka_source_ack(sc_kafka_source_t *src, uint64_t batch_id, char *errstr,
                             size_t errstr_size);

/* Commits every partition whose committable position advanced: async (sync
 * = 0) or waiting for the broker (sync = 1). */
sc_err_t sc_kafka_source_commit(sc_kafka_source_t *src, int sync, char *errstr, size_t errstr_size);

/* End of a run: waits up to timeout_ms for dead-letter deliveries, then
 * commits every assigned partition's committable position and waits for the
 * broker. SC_ERR_IO if either fails (the rest is still done). */
sc_err_t sc_kafka_source_finish(sc_kafka_source_t *src, int timeout_ms, char *errstr,
                                size_t errstr_size);

/* Sums of the streams' record counters (consumed, trained, dropped,
 * rejected, revoked = returned, buffered, inflight, faults per kind, peak). */
void sc_kafka_source_totals(const sc_kafka_source_t *src, sc_stream_stats_t *sum);
const sc_kafka_source_stats_t *sc_kafka_source_stats(const sc_kafka_source_t *src);
/* Checks every stream's accounting identity and the batcher's. */
sc_err_t sc_kafka_source_check(const sc_kafka_source_t *src, char *errstr, size_t errstr_size);
/* Samples/s arriving over all streams at time t. */
double sc_kafka_source_rate(sc_kafka_source_t *src, double t);
/* Streams (topics) with a buffer so far. */
int sc_kafka_source_nstreams(const sc_kafka_source_t *src);
/* Stream i (0 <= i < nstreams): its topic, and its counters in *stats. */
const char *sc_kafka_source_stream(const sc_kafka_source_t *src, int i,
                                   const sc_stream_stats_t **stats);

/* Consumer lag: records in the assigned partitions beyond what was received,
 * from the high watermarks of the consumer's last fetch responses (no
 * request, never blocks). -1 while a partition has had no fetch response. */
/* Assigned partitions paused now for running ahead in time (source.align)
 * and not for backpressure: ks_paused_partitions counts both. */
int sc_kafka_source_align_paused(const sc_kafka_source_t *src);

int64_t sc_kafka_source_lag(sc_kafka_source_t *src);
/* The same, and in *ends (may be NULL) the sum of the assigned partitions'
 * end offsets (0 for partitions that never held a record). */
int64_t sc_kafka_source_lag_ends(sc_kafka_source_t *src, int64_t *ends);
/* The same per assigned partition: fn(opaque, topic, partition, lag, end)
 * for each, lag and end -1 while the partition has had no fetch response.
 * Returns the partitions assigned, -1 when the assignment cannot be read. */
typedef void (*sc_kafka_lag_fn)(void *opaque, const char *topic, int32_t partition, int64_t lag,
                                int64_t end);
int sc_kafka_source_lags(sc_kafka_source_t *src, sc_kafka_lag_fn fn, void *opaque);

/* 1 when the consumer's last statistics event (within 5 s) showed a broker
 * UP; 0 when none was, or no event came (the broker may be down or
 * restarting: the topics' ends are not known). 1 when statistics are off
 * (statistics.interval.ms 0 in the kafka settings). */
int sc_kafka_source_reachable(const sc_kafka_source_t *src);

/* 1 while records of an avro topic are held because the Schema Registry
 * cannot be reached (like a broker outage, this is not idle time). */
int sc_kafka_source_registry_waiting(const sc_kafka_source_t *src);
/* The Schema Registry's counters: requests, failures (no answer, 5xx,
 * refused authentication), not_found (ids it does not have), unavailable
 * (now), held (times a record was held for it), schemas (ids known to the
 * streams, refused ones included). New reference; NULL without a registry. */
json_t *sc_kafka_source_registry_json(const sc_kafka_source_t *src);

/* A JSON array, one object per assigned partition: topic, partition,
 * committed (read back from the group coordinator), end (the high watermark
 * of the consumer's last fetch response; asked for, within timeout_ms, when
 * there was none), position (the committable position this member holds).
 * New reference; NULL on failure. */
json_t *sc_kafka_source_partitions(sc_kafka_source_t *src, int timeout_ms);

#endif
