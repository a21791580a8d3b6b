/* kafka_source_impl.h — the Kafka source's state, shared by its record path
 * (kafka_source.c) and its setup and queries (kafka_source_setup.c).
 * Internal to connectors/. */
#ifndef SC_KAFKA_SOURCE_IMPL_H
#define SC_KAFKA_SOURCE_IMPL_H

#include <librdkafka/rdkafka.h>

#include "sc_avro.h"
#include "sc_decode.h"
#include "sc_ingest.h"
#include "sc_kafka_source.h"
#include "sc_kafka_util.h"
#include "sc_registry.h"

#define SC_KS_COMMIT_BATCH 64

/* One partition of a stream's topic. */
typedef struct sc_ks_part {
        int32_t partition;
        int assigned;
        int paused;
        int64_t start;        /* committed offset at assignment, -1 if none */
        int64_t committed;    /* highest offset known committed, -1 if none */
        size_t named;         /* finished offsets above it its commit's metadata names
                                 (shared-model mode) */
        int64_t received;     /* offset after the last one received, -1 if none */
        int64_t ts_ms;        /* timestamp of the last record that had one (ms), -1 if none */
        double rx_at;         /* when the last record was received (the caller's clock) */
        int at_end;           /* the consumer reported its end (PARTITION_EOF) since */
        int ahead;            /* more than source.align ahead of the furthest behind */
        int resumed;          /* started at a resumed checkpoint's offset */
        int64_t durable;      /* the last checkpoint's position, -1 if none (durable mode) */
        int64_t durable_sent; /* the last durable position committed */
        sc_kafka_gap_t gap;
} sc_ks_part_t;

/* One topic: its partitions and held messages; topic and stream are the
 * ingest path's stream of the same index (sc_ingest_at), borrowed. */
typedef struct sc_ks_stream {
        const char *topic;
        sc_stream_t *stream;
        sc_ks_part_t *parts;
        size_t n_parts, cap_parts;
        rd_kafka_message_t **held; /* FIFO of messages waiting for room */
        size_t n_held, cap_held;
        sc_avro_cache_t *avro; /* avro topic: its schema ids' plans; else NULL */
        int logged_full;       /* "the cache is full" said once */
        int flow_paused;       /* its partitions are paused for backpressure */
} sc_ks_stream_t;

struct sc_kafka_source_s {
        const sc_conf_t *conf;
        rd_kafka_t *rk;    /* consumer */
        rd_kafka_t *dlq;   /* dead-letter producer, or NULL */
        rd_kafka_t *probe; /* watermark queries */
        sc_kafka_delivery_t dlq_dv;
        size_t numel;
        int n_classes;
        uint64_t seed;
        sc_ingest_t *ingest; /* streams and batcher: the caller's (sc_kafka_source_feed), or
                                made with the first topic */
        int own_ingest;      /* ingest is the source's own */
        int keep_covers;     /* sc_kafka_source_durable: keep covers, commit durable */
        int commit_covers;   /* sc_kafka_source_commit_covers: finished offsets in commits */
        sc_ks_stream_t streams[SC_BATCH_MAX_STREAMS]; /* same indices as the ingest's */
        int n_streams;
        sc_batch_spec_t bspec;
        sc_stream_spec_t sspec;
        double t_now;
        size_t hold_max;            /* records held per stream before its partitions are paused
                                       (0: pause at the stream's high watermark) */
        double kick_at, kick_every; /* last fetcher wake-up (s) and the interval now */
        double align_at;            /* last time alignment was decided (s) */
        uint64_t align_rx;          /* ... and stats.ks_received then */
        int64_t align_floor;        /* its floor timestamp (ms), INT64_MAX if none */
        int align_stream;           /* the floor's partition: its stream (-1: none) */
        int32_t align_part;         /* ... and number */
        sc_log_fn log;
        void *log_opaque;
        sc_kafka_record_fn on_record; /* sc_kafka_source_on_record */
        void *on_record_opaque;
        sc_kafka_source_stats_t stats;
        int logged_full; /* "more than SC_BATCH_MAX_STREAMS topics" said once */
        int logged_dlq;
        uint64_t dlq_enqueued, dlq_refused;
        rd_kafka_resp_err_t last_commit_err; /* of the last rd_kafka_commit() */
        sc_kafka_reach_t reach;              /* broker reachability (statistics events) */
        sc_registry_t *registry;             /* source.schema_registry.url, or NULL */
        uint64_t registry_held;              /* records held for the registry (an outage) */
};

/* kafka_source.c */
#define sc_ks_logf(src, level, ...) sc_logf((src)->log, (src)->log_opaque, level, __VA_ARGS__)
/* Dead-letter counters from the delivery reports served so far. */
void sc_ks_dlq_stats(sc_kafka_source_t *src);
sc_ks_stream_t *sc_ks_find(sc_kafka_source_t *src, const char *topic);
/* Commits changed positions (all = 0) or every assigned partition's (all = 1). */
sc_err_t sc_ks_commit(sc_kafka_source_t *src, int sync, int all, char *errstr, size_t errstr_size);

/* Finished offsets in commit metadata (shared-model mode; kafka_source.c
 * describes the format): the metadata for partition committed at next,
 * malloc'd, *lenp bytes (NULL: nothing finished above next); and the
 * offsets a commit at next names (*donep malloc'd, *ndonep of them; donep
 * NULL counts only; SC_ERR_CORRUPT for malformed metadata, none named for
 * empty or foreign metadata). */
#define SC_KS_META_PREFIX "scadles-done/1"
#define SC_KS_META_MAX 4000
#define SC_KS_META_OFFSETS_MAX ((int64_t)1 << 20)
void *sc_ks_meta_encode(const sc_offsets_t *o, int32_t partition, int64_t next, size_t *lenp);
sc_err_t sc_ks_meta_decode(const char *meta, size_t len, int64_t next, int64_t **donep,
                           size_t *ndonep, char *why, size_t why_size);
void sc_ks_on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                     rd_kafka_topic_partition_list_t *offsets, void *opaque);
void sc_ks_on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                        rd_kafka_topic_partition_list_t *parts, void *opaque);
/* kafka_source_setup.c: the statistics callback (broker states). */
int sc_ks_on_stats(rd_kafka_t *rk, char *json, size_t json_len, void *opaque);

#endif
