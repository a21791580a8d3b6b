/* sc_monitor.h — what every process's Prometheus endpoint shares: the
 * server (sc_mserver.h) started from the metrics section, the snapshot's
 * schedule, the families every process has (scadles_info, process_*,
 * scadles_broker_reachable) and the /healthz verdict (a broker unreachable
 * for longer than metrics.broker_down, a model that is not finite). The
 * worker, aggregator and predictor add their own families between
 * sc_monitor_begin and sc_monitor_publish (docs/OPERATIONS.md).
 *
 * Single-threaded: called from the process's own loop. */
#ifndef SC_MONITOR_H
#define SC_MONITOR_H

#include <stddef.h>

#include "sc_conf.h"
#include "sc_decode.h"
#include "sc_err.h"
#include "sc_kafka_source.h"
#include "sc_log.h"
#include "sc_prom.h"

typedef struct sc_monitor sc_monitor_t;

/* With conf->metrics.listen set: starts the endpoint and logs
 * "metrics on http://HOST:PORT/metrics (role)"; else *mp = NULL and SC_OK.
 * role is "worker", "aggregator" or "predict" (a static string).
 * SC_ERR_CONFIG for an address that does not parse or resolve, SC_ERR_IO
 * when it cannot be bound. */
sc_err_t sc_monitor_new(sc_monitor_t **mp, const sc_conf_t *conf, const char *role, sc_log_fn log,
                        void *log_opaque, char *errstr, size_t errstr_size);
/* Accepts NULL. */
void sc_monitor_destroy(sc_monitor_t *m);

/* 1 when a snapshot is due at monotonic time now (metrics.interval since
 * the last one); 0 for NULL. */
int sc_monitor_due(const sc_monitor_t *m, double now);
/* Starts a snapshot: empties the text and writes scadles_info and the
 * process_* families; the caller adds its own to the returned buffer. */
sc_prom_t *sc_monitor_begin(sc_monitor_t *m, double now);
/* Writes scadles_broker_reachable and tracks how long no broker was. */
void sc_monitor_reach(sc_monitor_t *m, double now, int reachable);
/* Ends the snapshot and hands it to the server with the health verdict
 * (model_finite = 0 makes /healthz say 503). A snapshot with an invalid name
 * is a bug: logged once. */
void sc_monitor_publish(sc_monitor_t *m, double now, int model_finite);
/* scadles_records_rejected_total{reason}: malformed records by fault. */
void sc_monitor_rejected(sc_prom_t *p, const sc_decode_stats_t *faults);
/* A Kafka source's families: dead-lettered, lost, redelivered, rebalances,
 * commit errors, assigned and paused partitions, and
 * scadles_consumer_lag_records{topic, partition}. */
void sc_monitor_source(sc_prom_t *p, sc_kafka_source_t *src);
/* The process stopped or failed (reason: a line): /healthz says 503 and
 * reason from now on. Accepts NULL. */
void sc_monitor_final(sc_monitor_t *m, const char *reason);
/* 1 when every value is finite. */
int sc_monitor_finite(const float *v, size_t n);

#endif
