/* sc_aggregator.h — the aggregator runtime of a distributed job: a
 * consumer-group member on J.grad that owns the model shards of its
 * assigned partitions, restores them from J.model, applies updates through
 * core/server exactly once per (worker, seq), follows membership on J.ctl
 * and publishes shard versions to J.model (docs/DISTRIBUTED.md). */
#ifndef SC_AGGREGATOR_H
#define SC_AGGREGATOR_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "sc_conf.h"
#include "sc_err.h"

#include "sc_log.h"

typedef struct sc_aggregator_spec {
        const sc_conf_t *conf; /* borrowed; must outlive the aggregator */
        double duration;       /* s; 0 = until stopped */
        double idle_exit;      /* s with no J.grad record (after the first assignment); 0 =
                                  never */
        int create_topics;     /* 1 = create missing job topics, check partition counts */
        int model_timeout_ms;  /* per J.model read step; 0 = 10000 */
        sc_log_fn log;
        /* progress, the first rejection of each kind, shard moves */ /* may be NULL */
        void *opaque;
} sc_aggregator_spec_t;

typedef struct sc_aggregator sc_aggregator_t;

/* Builds the initial model, the Kafka clients (group "<job>.aggregators")
 * and, with create_topics, the job's topics. Configuration errors are
 * SC_ERR_CONFIG, broker trouble SC_ERR_IO. */
sc_err_t sc_aggregator_new(sc_aggregator_t **aggp, const sc_aggregator_spec_t *spec, char *errstr,
                           size_t errstr_size);

/* Runs until *stop becomes non-zero, the duration passes, or the idle exit
 * fires; then publishes a final snapshot of every held shard and leaves the
 * group. Returns a fatal error only (a shard that cannot be restored, a
 * producer that cannot deliver): bad records are counted, never fatal. */
sc_err_t sc_aggregator_run(sc_aggregator_t *agg, volatile sig_atomic_t *stop, char *errstr,
                           size_t errstr_size);

/* One-line JSON summary of the run (counts, rates, bytes, rejections by
 * kind, the last version and offset of each shard this member held). Caller
 * frees; NULL if out of memory. */
char *sc_aggregator_summary(const sc_aggregator_t *agg);

/* Accepts NULL. */
void sc_aggregator_destroy(sc_aggregator_t *agg);

#endif
