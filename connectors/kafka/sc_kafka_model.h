/* sc_kafka_model.h — a distributed job's model on J.model: publishing a
 * shard (key = shard id, partition = shard) and reading the latest valid
 * shard record back. The shard layout and the seeded initial model are the
 * job engine's (sc_job.h). */
#ifndef SC_KAFKA_MODEL_H
#define SC_KAFKA_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "sc_auth.h"
#include "sc_bcast.h"
#include "sc_buf.h"
#include "sc_codec.h"
#include "sc_conf.h"
#include "sc_err.h"
#include "sc_kafka_util.h"
#include "sc_nn.h"
#include "sc_server.h"
#include "sc_wire.h"

/* Produces msg (len bytes) to topic, partition = shard, key = the shard id
 * in decimal ASCII; tracked in dv (the handle needs sc_kafka_conf_delivery). */
sc_err_t sc_kafka_model_publish(rd_kafka_t *rk, const char *topic, uint32_t shard, const void *msg,
                                size_t len, sc_kafka_delivery_t *dv, char *errstr,
                                size_t errstr_size);

/* A record found on J.model: the bytes (owned) and their decoded view. */
typedef struct sc_kafka_model_rec {
        uint8_t *mr_data;
        size_t mr_len;
        int64_t mr_offset;             /* J.model offset */
        sc_wire_model_view_t mr_model; /* points into mr_data */
} sc_kafka_model_rec_t;

void sc_kafka_model_rec_free(sc_kafka_model_rec_t *rec);

/* Decides whether a decoded shard record is usable (e.g. restores it);
 * returns 0 to accept, else fills why and returns non-zero. */
typedef int (*sc_kafka_model_accept_fn)(void *opaque, const sc_wire_model_view_t *m, char *why,
                                        size_t why_size);
/* Told about each record skipped as unusable. */
typedef void (*sc_kafka_model_reject_fn)(void *opaque, const char *topic, int32_t partition,
                                         int64_t offset, sc_err_t kind, const char *why);

/* Finds the newest usable record of partition `shard` of topic: of the
 * last 16 records before the end offset (as of the call), the one covering
 * the most of J.grad (grad_offset, then version, then position), leaving
 * out any that covers less than a record before it (a replayed older
 * snapshot, a deposed owner's late one); if none of them is usable, it
 * reads backwards in windows towards the log start, newest first. A record
 * is usable when it decodes (verified under auth, which
 * may be NULL for an unauthenticated job) as a model message for `shard`
 * and accept (may be NULL) agrees. rk is a consumer handle that is
 * not subscribed (its assignment is replaced and cleared). *found = 0 and
 * rec empty when the partition holds no usable record. */
sc_err_t sc_kafka_model_read_latest(rd_kafka_t *rk, const char *topic, int32_t shard,
                                    int timeout_ms, const sc_auth_t *auth,
                                    sc_kafka_model_accept_fn accept,
                                    sc_kafka_model_reject_fn reject, void *opaque,
                                    sc_kafka_model_rec_t *rec, int *found, char *errstr,
                                    size_t errstr_size);

#endif
