/* sc_feed.h — the feed: publishes a labelled image data set (Fashion-MNIST
 * or synthetic) to Kafka topics, each at its own constant rate, through an
 * idempotent producer; the runtime behind `scadles feed` and the demo's
 * input. */
#ifndef SC_FEED_H
#define SC_FEED_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "sc_err.h"
#include "sc_log.h"

typedef enum sc_feed_format { SC_FEED_RAW, SC_FEED_JSON, SC_FEED_CSV } sc_feed_format_t;

typedef struct sc_feed_spec {
        const char *bootstrap;    /* required */
        const void *kafka;        /* a jansson object of producer properties, or NULL */
        const char *kafka_origin; /* names it in errors (a file), or NULL */
        const char *const *kv;    /* n_kv "name=value" producer properties, after kafka */
        int n_kv;
        const char *const *topics; /* n_topics names */
        int n_topics;
        int partitions;                   /* create missing topics with this many; 0 = leave
                                             them to the broker's auto-creation */
        double rate;                      /* samples/s of every topic, unless a rate set/dist */
        const char *rate_set, *rate_dist; /* per-topic rates drawn: S1 .. S20, or KIND:MEAN:SD */
        int64_t count;                    /* per topic, 0 = unbounded */
        double duration;                  /* seconds, 0 = unbounded */
        const char *data;                 /* "fmnist" or "synth" */
        const char *data_dir;             /* Fashion-MNIST's folder */
        const char *split;                /* "train" or "test" */
        size_t synth_n;
        int labels_per_topic; /* non-IID: topic i gets labels (i*K + j) mod classes */
        sc_feed_format_t format;
        uint64_t seed;
        int progress;                /* a progress line (level 6) at most once a second */
        volatile sig_atomic_t *stop; /* ends the run early when set (may be NULL) */
        sc_log_fn log;               /* may be NULL */
        void *log_opaque;
} sc_feed_spec_t;

typedef struct sc_feed sc_feed_t;

/* SC_OK when set names a ScaDLES rate set (S1, S2, S10, S20, any case),
 * else SC_ERR_CONFIG saying which ones there are. */
sc_err_t sc_feed_rate_set_check(const char *set, char *errstr, size_t errstr_size);

/* A topic's figures after sc_feed_run (and sc_feed_flush). */
typedef struct sc_feed_topic_stats {
        const char *name;
        double rate;  /* target samples/s */
        int64_t sent; /* produced */
        int64_t delivered, failed, pending;
        double achieved; /* samples/s from the send times; NAN under 2 delivered */
        double max_late; /* worst lateness of a send against its schedule, s */
        int first_err;   /* librdkafka's first delivery error, 0 = none */
} sc_feed_topic_stats_t;

/* The producer (SC_ERR_CONFIG for a bad property, checked before the data
 * set loads), the data set, each topic's rate and samples. errstr says
 * what is wrong; spec's strings are borrowed until sc_feed_destroy. */
sc_err_t sc_feed_new(sc_feed_t **fp, const sc_feed_spec_t *spec, char *errstr, size_t errstr_size);
/* Samples loaded, bytes per sample, and the sum of the topics' rates. */
void sc_feed_describe(const sc_feed_t *f, size_t *samples, size_t *numel, double *total_rate);
/* Sends each topic's samples on schedule (the k-th at k / rate seconds)
 * until every count is reached, the duration passed, *stop is set or the
 * producer fails fatally; returns the seconds it ran. */
double sc_feed_run(sc_feed_t *f);
/* Waits up to 30 s for the delivery reports (less once the broker refused
 * the credentials); returns the seconds it took. */
double sc_feed_flush(sc_feed_t *f);
int sc_feed_topic_count(const sc_feed_t *f);
void sc_feed_topic_stats(const sc_feed_t *f, int i, sc_feed_topic_stats_t *st);
/* Frees f, purging what is still undelivered. Accepts NULL. */
void sc_feed_destroy(sc_feed_t *f);

#endif
