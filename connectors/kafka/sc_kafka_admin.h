/* sc_kafka_admin.h — creates a distributed job's topics (J.grad, J.model,
 * J.inject, J.ctl) with the Admin API, or checks that they exist with the
 * partition counts the job needs. */
#ifndef SC_KAFKA_ADMIN_H
#define SC_KAFKA_ADMIN_H

#include <stddef.h>

#include <librdkafka/rdkafka.h>

#include "sc_err.h"

#define SC_KAFKA_ADMIN_NAME_MAX 256

typedef struct sc_kafka_topic_spec {
        char name[SC_KAFKA_ADMIN_NAME_MAX];
        int partitions; /* created with this many */
        int exact;      /* 1 = an existing topic must have exactly `partitions` */
        int replication;
        int compact;       /* cleanup.policy=compact */
        long retention_ms; /* retention.ms; <= 0 = the broker's default */
} sc_kafka_topic_spec_t;

/* Indices of a job's topics in the array sc_kafka_admin_job_topics() fills. */
enum { SC_JOB_GRAD, SC_JOB_MODEL, SC_JOB_INJECT, SC_JOB_CTL, SC_JOB_BCAST, SC_JOB__NTOPICS };

/* Fills out[SC_JOB__NTOPICS] for job: J.grad (shards partitions), J.model
 * (shards partitions, compacted), J.inject (1 partition), J.ctl (1
 * partition, 1 h retention) and J.bcast (shards partitions, the model
 * broadcast, 1 h retention); J.grad, J.model and J.bcast must have exactly
 * `shards` partitions, the others are read whole and may have any count. SC_ERR_INVAL if a name
 * would exceed 249 characters or shards < 1. */
sc_err_t sc_kafka_admin_job_topics(const char *job, int shards, int replication,
                                   sc_kafka_topic_spec_t out[SC_JOB__NTOPICS], char *errstr,
                                   size_t errstr_size);

/* Makes each of the n topics exist with its partition count. rk is any
 * client handle (a producer is best: on a broker without CreateTopics, such
 * as the embedded one, its metadata request auto-creates a missing topic).
 * Existing topics are accepted as they are when their partition count
 * matches or the spec is not exact (idempotent); a different count is SC_ERR_CONFIG naming the
 * topic, both counts and how to fix it. *createdp (may be NULL) receives how many topics this call
 * created. */
sc_err_t sc_kafka_admin_ensure(rd_kafka_t *rk, const sc_kafka_topic_spec_t *topics, int n,
                               int timeout_ms, int *createdp, char *errstr, size_t errstr_size);

/* Partition count of topic from a metadata request (no auto-creation):
 * *partitionsp = 0 when the topic does not exist. */
sc_err_t sc_kafka_admin_partitions(rd_kafka_t *rk, const char *topic, int timeout_ms,
                                   int *partitionsp, char *errstr, size_t errstr_size);

#endif
