/* sc_ingest.h — the one path of a record into training: its topic's stream
 * found or made (decoder, ring, a place in the batcher), the record decoded
 * into the stream's next ring slot and buffered, or rejected as malformed,
 * with its topic/partition/offset in every message. The Kafka source and
 * pushed records (sc_worker_push, scadles_push) both feed it; what is
 * particular to each (holding records, pausing partitions, dead letters,
 * retention gaps) stays with them.
 *
 * Sans-I/O, not thread-safe; times are seconds on the driver's clock. The
 * caller logs: nothing here prints. */
#ifndef SC_INGEST_H
#define SC_INGEST_H

#include <stddef.h>
#include <stdint.h>

#include "sc_batch.h"
#include "sc_decode.h"
#include "sc_err.h"
#include "sc_stream.h"

/* Fills ds with the decoder of topic (called once per topic, on its first
 * record); sc_ingest checks it. */
typedef void (*sc_ingest_decoder_fn)(void *opaque, const char *topic, sc_decode_spec_t *ds);

typedef struct sc_ingest_spec {
        size_t numel;            /* floats per sample */
        sc_stream_spec_t stream; /* every topic's stream */
        sc_batch_spec_t batch;   /* the batcher over the streams */
        uint64_t seed;           /* the batcher's shuffle */
        sc_ingest_decoder_fn decoder;
        void *decoder_opaque;
} sc_ingest_spec_t;

/* One topic. Owned by the sc_ingest_t; valid until it is destroyed. */
typedef struct sc_ingest_stream {
        char *topic;
        sc_stream_t *stream;
        sc_decode_spec_t dspec;
} sc_ingest_stream_t;

/* What became of a consumed record. */
typedef struct sc_ingest_result {
        sc_decode_fault_t fault; /* SC_DECODE_OK: buffered; else rejected as this kind */
        int first;               /* the first record of this fault kind on the stream */
        int skipped;             /* covered by a resumed checkpoint: finished, not consumed */
        char msg[768];           /* when first: "topic [p] offset o: malformed record ..."
                                    naming the fault; later ones are only counted */
        char reason[512];        /* rejected: the decoder's reason, every time (what and where,
                                    e.g. "$.temp: expected a number ...") */
} sc_ingest_result_t;

typedef struct sc_ingest_s sc_ingest_t;

/* Copies spec; the streams and batcher are made with the first topic. */
sc_err_t sc_ingest_new(sc_ingest_t **ingestp, const sc_ingest_spec_t *spec, char *errstr,
                       size_t errstr_size);
/* Frees the batcher and the streams. Accepts NULL. */
void sc_ingest_destroy(sc_ingest_t *ingest);

/* The index of topic's stream, made on first use (stream, decoder from the
 * spec's decoder, checked, and added to the batcher). Errors name the topic:
 * SC_ERR_INVAL past SC_BATCH_MAX_STREAMS topics, SC_ERR_CONFIG for a decoder
 * that fails sc_decode_spec_check, SC_ERR_NOMEM; nothing is made then. */
sc_err_t sc_ingest_stream(sc_ingest_t *ingest, const char *topic, int *index, char *errstr,
                          size_t errstr_size);
/* The index of topic's stream, or -1 if it has none yet. */
int sc_ingest_find(const sc_ingest_t *ingest, const char *topic);
/* Streams made so far (indices 0 .. count - 1, in order of their first record). */
int sc_ingest_count(const sc_ingest_t *ingest);
const sc_ingest_stream_t *sc_ingest_at(const sc_ingest_t *ingest, int index);
/* Gives an avro stream its schema cache (sc_avro.h; borrowed: the caller
 * keeps it until the stream is gone or given NULL). */
void sc_ingest_stream_avro(sc_ingest_t *ingest, int index, const struct sc_avro_cache *cache);
/* The batcher over the streams; NULL until the first stream is made. */
sc_batcher_t *sc_ingest_batcher(const sc_ingest_t *ingest);
/* The streams' counters summed (peak_buffered too; latency_max the largest);
 * zeros for a NULL ingest. */
void sc_ingest_totals(const sc_ingest_t *ingest, sc_stream_stats_t *sum);

/* Consumes one record of stream index at (partition, offset), arrived at time
 * t: decoded into the stream's ring slot and buffered (res->fault ==
 * SC_DECODE_OK), or counted rejected with its offset finished (res->fault
 * the kind; res->msg when res->first). Errors leave the record unconsumed
 * and name topic, partition and offset: SC_ERR_AGAIN (a persist stream at
 * its cap: hold the record, train, retry), SC_ERR_STATE (an offset at or
 * below one already consumed: a redelivery), SC_ERR_INVAL, SC_ERR_NOMEM. */
sc_err_t sc_ingest_record(sc_ingest_t *ingest, int index, int32_t partition, int64_t offset,
                          const sc_record_t *rec, double t, sc_ingest_result_t *res, char *errstr,
                          size_t errstr_size);

/* ---- resuming: which records a checkpoint's model holds ----
 *
 * A partition's cover is its next offset (every record below it finished:
 * trained, dropped or rejected) and the finished offsets above it (records
 * finish out of order: a shuffle buffer, batches of several streams). A
 * worker stores the covers with its model and, resumed, gives them back
 * here: a record they cover is finished without being consumed
 * (res->skipped, the stream's `skipped` counter), so none is trained twice
 * into the model. */

/* Adds a cover (done increasing, each above next). SC_ERR_INVAL for a
 * malformed one or a partition covered twice, SC_ERR_NOMEM. */
sc_err_t sc_ingest_cover_add(sc_ingest_t *ingest, const char *topic, int32_t partition,
                             int64_t next, const int64_t *done, size_t ndone, char *errstr,
                             size_t errstr_size);
/* Like sc_ingest_cover_add, but replaces the partition's cover if it has
 * one (a new owner's view of what a job's model holds: the group's
 * committed offset and the finished offsets its metadata names). */
sc_err_t sc_ingest_cover_set(sc_ingest_t *ingest, const char *topic, int32_t partition,
                             int64_t next, const int64_t *done, size_t ndone, char *errstr,
                             size_t errstr_size);
/* 1 and *next for a partition a resumed cover names (where a reader seeks
 * to), else 0. */
int sc_ingest_cover_next(const sc_ingest_t *ingest, const char *topic, int32_t partition,
                         int64_t *next);

/* Before a revocation forgets partition's offsets on stream index: keeps
 * its cover now (what was read and finished, merged with a resumed cover),
 * so records finished out of order are still skipped if they are read
 * again, and are still reported. SC_ERR_NOMEM. */
sc_err_t sc_ingest_remember(sc_ingest_t *ingest, int index, int32_t partition, char *errstr,
                            size_t errstr_size);

typedef void (*sc_ingest_cover_fn)(void *opaque, const char *topic, int32_t partition, int64_t next,
                                   const int64_t *done, size_t ndone);
/* Calls fn for every partition's cover now: those records were consumed
 * from (their streams' offsets), and the resumed ones not read since. */
sc_err_t sc_ingest_cover(const sc_ingest_t *ingest, sc_ingest_cover_fn fn, void *opaque,
                         char *errstr, size_t errstr_size);

/* ---- resuming: the streams' arrival rates ---- */

/* Carries over a rate (samples/s) a checkpoint measured for topic: its
 * stream starts its estimate from it (sc_stream_seed_rate), now if it exists
 * or when it is made. A second seed of a topic replaces the first.
 * SC_ERR_NOMEM. */
sc_err_t sc_ingest_rate_seed(sc_ingest_t *ingest, const char *topic, double rate, char *errstr,
                             size_t errstr_size);

typedef void (*sc_ingest_rate_fn)(void *opaque, const char *topic, double rate);
/* Calls fn with every stream's rate at time t, then with the seeded rate of
 * each topic that has no stream yet (a checkpoint written before its first
 * record keeps it). */
void sc_ingest_rates(sc_ingest_t *ingest, double t, sc_ingest_rate_fn fn, void *opaque);

#endif
