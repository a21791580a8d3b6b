/* sc_predictor.h — a stream processor that scores Kafka records with a
 * model and produces one JSON prediction per record: a consumer-group
 * member on the input topics (the worker's Kafka source: same decoders,
 * backpressure, dead letters and loss counting), batches of records scored
 * together, an idempotent producer for the predictions, and input offsets
 * committed only once the predictions of the records before them were
 * acknowledged by the broker (at-least-once: a crash re-predicts, never
 * skips). The model comes from a checkpoint, or follows a distributed job's
 * J.model and is swapped between batches.
 *
 * One prediction (the output record's value; key "<topic>:<partition>" of
 * the input record, so one input partition's predictions stay in order):
 *   {"topic":"in","partition":0,"offset":42,"label":3,
 *    "probabilities":[0.01,...],"model_version":1200}
 *
 * Single-threaded; times t are seconds on the caller's monotonic clock. */
#ifndef SC_PREDICTOR_H
#define SC_PREDICTOR_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sc_conf.h"
#include "sc_err.h"
#include "sc_kafka_source.h"

typedef struct sc_predictor_s sc_predictor_t;

typedef struct sc_predictor_spec {
        /* source.topics / source.pattern are the input, source.group_id the
         * consumer group, source.dead_letter_topic the dead-letter topic,
         * streams.* the buffers and default decoder, kafka.* the clients,
         * job.* the job followed. Borrowed for the predictor's lifetime. */
        const sc_conf_t *conf;
        const char *out_topic;  /* predictions */
        const char *checkpoint; /* model file, or NULL with follow_job */
        int follow_job;         /* 1: the model of conf's job, from J.model */
        int batch;              /* most records scored at once, 1..65536: a round scores
                                   what is buffered in batches of at most this */
        int avro;               /* 1: predictions as Avro (SC_PREDICTOR_AVRO_SCHEMA) framed
                                   for source.schema_registry.url, the schema registered
                                   under "<out_topic>-value"; 0: JSON */
        sc_log_fn log;          /* may be NULL */
        void *log_opaque;
} sc_predictor_spec_t;

/* The writer schema of Avro predictions: the JSON prediction's members,
 * class and true_label/true_class null when the record has none. */
#define SC_PREDICTOR_AVRO_SCHEMA                                                                   \
        "{\"type\":\"record\",\"name\":\"Prediction\",\"namespace\":\"scadles\",\"fields\":["      \
        "{\"name\":\"topic\",\"type\":\"string\"},{\"name\":\"partition\",\"type\":\"int\"},"      \
        "{\"name\":\"offset\",\"type\":\"long\"},{\"name\":\"label\",\"type\":\"int\"},"           \
        "{\"name\":\"class\",\"type\":[\"null\",\"string\"],\"default\":null},"                    \
        "{\"name\":\"true_label\",\"type\":[\"null\",\"int\"],\"default\":null},"                  \
        "{\"name\":\"true_class\",\"type\":[\"null\",\"string\"],\"default\":null},"               \
        "{\"name\":\"probabilities\",\"type\":{\"type\":\"array\",\"items\":\"float\"}},"          \
        "{\"name\":\"model_version\",\"type\":\"long\"}]}"

/* Defaults: batch 1024; the rest zero. */
void sc_predictor_spec_defaults(sc_predictor_spec_t *spec);

/* Loads or starts following the model, creates the output topic when
 * missing (one partition, replication job.replication: -1 = the broker's
 * default), the producer and the source. Errors name the option or
 * JSON path. */
sc_err_t sc_predictor_new(sc_predictor_t **pp, const sc_predictor_spec_t *spec, char *errstr,
                          size_t errstr_size);
/* Accepts NULL. Call sc_predictor_finish() first to commit. */
void sc_predictor_destroy(sc_predictor_t *p);

/* One round: serves the consumer (up to timeout_ms when idle), the model
 * follower and the producer's delivery reports, scores every ready batch,
 * acknowledges batches whose predictions were all delivered and commits.
 * SC_ERR_IO when a prediction could not be delivered or a client failed
 * (errstr says which; the undelivered records stay uncommitted). */
sc_err_t sc_predictor_poll(sc_predictor_t *p, double t, int timeout_ms, char *errstr,
                           size_t errstr_size);

/* End of a run: scores what is buffered, waits up to timeout_ms for the
 * deliveries, then commits every finished offset (waiting for the broker). */
sc_err_t sc_predictor_finish(sc_predictor_t *p, double t, int timeout_ms, char *errstr,
                             size_t errstr_size);

typedef struct sc_predictor_stats {
        uint64_t consumed;      /* records handed to the streams (decoded or malformed) */
        uint64_t predicted;     /* predictions produced */
        uint64_t acked;         /* ... acknowledged by the broker */
        uint64_t bad;           /* malformed records (dead-lettered when a topic is set) */
        uint64_t batches;       /* batches scored */
        uint64_t model_swaps;   /* models installed from J.model after the first */
        uint64_t model_version; /* of the model scoring now */
        double t_last_record;   /* when a record last arrived; -1 before */
        double t_first_record;  /* when the first record arrived; -1 before */
        double t_last_ack;      /* when predictions were last acknowledged; -1 before */
} sc_predictor_stats_t;
void sc_predictor_stats(const sc_predictor_t *p, sc_predictor_stats_t *st);

/* Nothing buffered, being scored or awaiting delivery. */
int sc_predictor_idle(const sc_predictor_t *p);

/* The source (for lag, partitions and its counters). Borrowed. */
sc_kafka_source_t *sc_predictor_source(sc_predictor_t *p);

/* The summary object: consumed, predicted, acknowledged, bad, dead_letters,
 * batches, model_version, model_swaps, lost, busy_s (from the first record
 * received to the last acknowledgement), records_per_s (acknowledged /
 * busy_s) and "partitions" (committed / end offsets per input partition).
 * New reference; NULL on OOM. */
json_t *sc_predictor_summary(sc_predictor_t *p, int timeout_ms);

#endif
