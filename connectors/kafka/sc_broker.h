/* sc_broker.h — the embedded Kafka broker: librdkafka's in-process mock
 * cluster, listening on 127.0.0.1, for zero-setup runs and fast tests. */
#ifndef SC_BROKER_H
#define SC_BROKER_H

#include <stddef.h>

#include "sc_err.h"

typedef struct sc_broker sc_broker_t;

/* Partitions given to a topic the cluster creates on first use (a producer's
 * or consumer's metadata request for an unknown topic). */
#define SC_BROKER_AUTO_PARTITIONS 4

/* Starts a cluster of n_brokers (1..16) brokers; its threads serve clients of
 * any process until sc_broker_destroy(). On success *brokerp is owned by the
 * caller. */
sc_err_t sc_broker_new(sc_broker_t **brokerp, int n_brokers, char *errstr, size_t errstr_size);

/* Stops the cluster; every record it held is gone. Accepts NULL. */
void sc_broker_destroy(sc_broker_t *broker);

/* "127.0.0.1:PORT[,127.0.0.1:PORT...]", valid until sc_broker_destroy(). */
const char *sc_broker_bootstraps(const sc_broker_t *broker);

/* Creates topic with partitions (1..10000) partitions, replicated on
 * min(3, brokers) brokers. Creating an existing topic is an error. */
sc_err_t sc_broker_topic_create(sc_broker_t *broker, const char *topic, int partitions,
                                char *errstr, size_t errstr_size);

/* Parses "name:partitions" or "name" (SC_BROKER_AUTO_PARTITIONS) into name
 * (NUL-terminated, at most name_size - 1 characters) and *partitionsp. */
sc_err_t sc_broker_topic_parse(const char *spec, char *name, size_t name_size, int *partitionsp,
                               char *errstr, size_t errstr_size);

/* Writes the bootstrap address and a newline to path (via a temporary file
 * and rename, so a reader never sees half of it). */
sc_err_t sc_broker_write_bootstrap(const sc_broker_t *broker, const char *path, char *errstr,
                                   size_t errstr_size);

#endif
