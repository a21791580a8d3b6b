/* kafka_model.c — shard records on J.model: publishing one and finding the
 * newest usable record of a shard (their encoding, the layout and the
 * initial model they follow are core/job.c's). */
#include "sc_kafka_model.h"
#include "sc_clock.h"
#include "sc_kafka_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SC_MODEL_WINDOW 4 /* records read per backward step */

sc_err_t sc_kafka_model_publish(rd_kafka_t *rk, const char *topic, uint32_t shard, const void *msg,
                                size_t len, sc_kafka_delivery_t *dv, char *errstr,
                                size_t errstr_size)
{
        char key[16];
        int klen = snprintf(key, sizeof(key), "%u", shard);
        return sc_kafka_produce(rk, topic, (int32_t)shard, key, (size_t)klen, msg, len, NULL, NULL,
                                0, 0, dv, 10000, errstr, errstr_size);
}

void sc_kafka_model_rec_free(sc_kafka_model_rec_t *rec)
{
        if (!rec)
                return;
        free(rec->mr_data);
        memset(rec, 0, sizeof(*rec));
}

/* Copies a message that decodes as a model record of shard into rec;
 * otherwise reports it and returns non-zero. */
static int sc_kafka_model_take(const rd_kafka_message_t *msg, const char *topic, int32_t shard,
                               const sc_auth_t *auth, sc_kafka_model_reject_fn reject, void *opaque,
                               sc_kafka_model_rec_t *rec)
{
        char why[256];
        sc_wire_msg_t wm;
        sc_err_t err;

        memset(rec, 0, sizeof(*rec));
        if (!msg->payload || !msg->len) {
                if (reject)
                        reject(opaque, topic, shard, msg->offset, SC_ERR_CORRUPT, "empty record");
                return 1;
        }
        if (!(rec->mr_data = malloc(msg->len)))
                return 1;
        memcpy(rec->mr_data, msg->payload, msg->len);
        rec->mr_len = msg->len;
        rec->mr_offset = msg->offset;
        err = sc_auth_decode(auth, rec->mr_data, rec->mr_len, &wm, NULL, why, sizeof(why));
        if (!err && wm.type != SC_WIRE_MODEL) {
                err = SC_ERR_DECODE;
                snprintf(why, sizeof(why), "a %s message, not a model shard",
                         sc_wire_type_name(wm.type));
        }
        if (!err && wm.u.model.shard != (uint32_t)shard) {
                err = SC_ERR_DECODE;
                snprintf(why, sizeof(why), "shard %u record in partition %d", wm.u.model.shard,
                         (int)shard);
        }
        if (err) {
                if (reject)
                        reject(opaque, topic, shard, msg->offset, err, why);
                sc_kafka_model_rec_free(rec);
                return 1;
        }
        rec->mr_model = wm.u.model;
        return 0;
}

sc_err_t sc_kafka_model_read_latest(rd_kafka_t *rk, const char *topic, int32_t shard,
                                    int timeout_ms, const sc_auth_t *auth,
                                    sc_kafka_model_accept_fn accept,
                                    sc_kafka_model_reject_fn reject, void *opaque,
                                    sc_kafka_model_rec_t *rec, int *found, char *errstr,
                                    size_t errstr_size)
{
        sc_kafka_model_rec_t cand[SC_MODEL_WINDOW];
        int64_t lo = 0, hi = 0, end, start;
        rd_kafka_resp_err_t rerr;
        sc_err_t err = SC_OK;
        char why[256];

        memset(rec, 0, sizeof(*rec));
        *found = 0;
        if ((err =
                 sc_kafka_end_offsets(rk, topic, shard, timeout_ms, &lo, &hi, errstr, errstr_size)))
                return err;
        for (end = hi; end > lo && !*found; end = start) {
                int nc = 0;
                double deadline = sc_clock_mono() + timeout_ms / 1000.0;
                start = end - SC_MODEL_WINDOW > lo ? end - SC_MODEL_WINDOW : lo;
                rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
                rd_kafka_topic_partition_list_add(tp, topic, shard)->offset = start;
                rerr = rd_kafka_assign(rk, tp);
                rd_kafka_topic_partition_list_destroy(tp);
                if (rerr) {
                        err = sc_errf(SC_ERR_IO, errstr, errstr_size, "%s [%d]: assign: %s", topic,
                                      (int)shard, rd_kafka_err2str(rerr));
                        break;
                }
                for (;;) {
                        /* Checked before each poll: errors (a broker down)
                         * come as events, so the poll may never be empty. */
                        if (sc_clock_mono() >= deadline) {
                                err = sc_errf(SC_ERR_IO, errstr, errstr_size,
                                              "%s [%d]: no record in [%lld, %lld) within %d ms",
                                              topic, (int)shard, (long long)start, (long long)end,
                                              timeout_ms);
                                break;
                        }
                        rd_kafka_message_t *msg = rd_kafka_consumer_poll(rk, 100);
                        if (!msg)
                                continue;
                        if (msg->err == RD_KAFKA_RESP_ERR__PARTITION_EOF ||
                            msg->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ||
                            msg->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) {
                                rd_kafka_message_destroy(msg);
                                break;
                        }
                        if (msg->err || msg->partition != shard) {
                                rd_kafka_message_destroy(msg);
                                continue;
                        }
                        int64_t off = msg->offset;
                        if (off < end) {
                                if (nc == SC_MODEL_WINDOW) { /* keep the newest ones */
                                        sc_kafka_model_rec_free(&cand[0]);
                                        memmove(&cand[0], &cand[1],
                                                (SC_MODEL_WINDOW - 1) * sizeof(cand[0]));
                                        nc--;
                                }
                                if (!sc_kafka_model_take(msg, topic, shard, auth, reject, opaque,
                                                         &cand[nc]))
                                        nc++;
                        }
                        rd_kafka_message_destroy(msg);
                        if (off >= end - 1)
                                break;
                }
                for (int i = nc - 1; i >= 0; i--) {
                        if (!*found && !err &&
                            (!accept || !accept(opaque, &cand[i].mr_model, why, sizeof(why)))) {
                                *rec = cand[i];
                                *found = 1;
                                continue;
                        }
                        if (!*found && !err && reject)
                                reject(opaque, topic, shard, cand[i].mr_offset, SC_ERR_INVAL, why);
                        sc_kafka_model_rec_free(&cand[i]);
                }
                if (err)
                        break;
        }
        rd_kafka_assign(rk, NULL);
        if (err)
                sc_kafka_model_rec_free(rec), *found = 0;
        return err;
}
