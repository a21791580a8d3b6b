/* kafka_admin.c — job topic creation and partition-count checks through the
 * Admin API, with a metadata auto-create fallback for brokers without
 * CreateTopics (the embedded mock cluster). */
#include "sc_kafka_admin.h"

#include <stdio.h>
#include <string.h>

sc_err_t sc_kafka_admin_job_topics(const char *job, int shards, int replication,
                                   sc_kafka_topic_spec_t out[SC_JOB__NTOPICS], char *errstr,
                                   size_t errstr_size)
{
        static const char *const suffix[SC_JOB__NTOPICS] = {"grad", "model", "inject", "ctl",
                                                            "bcast"};

        if (shards < 1 || (replication < 1 && replication != -1))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "job %s: shards (%d) must be >= 1 and replication (%d) >= 1 or -1 "
                               "(the broker's default)",
                               job, shards, replication);
        if (!job[0] || strlen(job) + 8 > 249)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "job name \"%s\": topic names would not have 1..249 characters",
                               job);
        for (int i = 0; i < SC_JOB__NTOPICS; i++) {
                memset(&out[i], 0, sizeof(out[i]));
                snprintf(out[i].name, sizeof(out[i].name), "%s.%s", job, suffix[i]);
                out[i].replication = replication;
                out[i].exact = i <= SC_JOB_MODEL || i == SC_JOB_BCAST;
                out[i].partitions = out[i].exact ? shards : 1;
        }
        out[SC_JOB_MODEL].compact = 1;
        out[SC_JOB_CTL].retention_ms = 3600 * 1000L;
        out[SC_JOB_BCAST].retention_ms = 3600 * 1000L;
        return SC_OK;
}

sc_err_t sc_kafka_admin_partitions(rd_kafka_t *rk, const char *topic, int timeout_ms,
                                   int *partitionsp, char *errstr, size_t errstr_size)
{
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t rerr;

        *partitionsp = 0;
        rerr = rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms);
        if (rerr)
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "metadata for %s: %s", topic,
                               rd_kafka_err2str(rerr));
        for (int i = 0; i < md->topic_cnt; i++) {
                if (strcmp(md->topics[i].topic, topic) || md->topics[i].err)
                        continue;
                *partitionsp = md->topics[i].partition_cnt;
        }
        rd_kafka_metadata_destroy(md);
        return SC_OK;
}

/* One topic's metadata request through a topic handle, which a producer's
 * broker may answer by creating the topic. */
static void sc_kafka_admin_autocreate(rd_kafka_t *rk, const char *topic, int timeout_ms)
{
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        if (!rkt)
                return;
        if (rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR)
                rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
}

/* 1 if the cluster names a controller that is one of its brokers (where
 * CreateTopics requests go). */
static int sc_kafka_admin_has_controller(rd_kafka_t *rk, int timeout_ms)
{
        const struct rd_kafka_metadata *md = NULL;
        int32_t id = rd_kafka_controllerid(rk, timeout_ms);
        int found = 0;
        if (id < 0 || rd_kafka_metadata(rk, 0, NULL, &md, timeout_ms))
                return 0;
        for (int i = 0; i < md->broker_cnt; i++)
                found |= md->brokers[i].id == id;
        rd_kafka_metadata_destroy(md);
        return found;
}

/* CreateTopics for the missing topics; per-topic results go to res[i]
 * (NO_ERROR, TOPIC_ALREADY_EXISTS, ...). Returns the request's own error. */
static rd_kafka_resp_err_t
sc_kafka_admin_create(rd_kafka_t *rk, const sc_kafka_topic_spec_t *topics, const int *missing,
                      int n, int timeout_ms, rd_kafka_resp_err_t *res, char *why, size_t why_size)
{
        rd_kafka_NewTopic_t *nt[64];
        rd_kafka_AdminOptions_t *opts = NULL;
        rd_kafka_queue_t *q = NULL;
        rd_kafka_event_t *ev = NULL;
        rd_kafka_resp_err_t rerr = RD_KAFKA_RESP_ERR_NO_ERROR;
        char num[32];
        int k = 0;
        int idx[64];

        for (int i = 0; i < n && k < 64; i++) {
                res[i] = RD_KAFKA_RESP_ERR_NO_ERROR;
                if (!missing[i])
                        continue;
                nt[k] = rd_kafka_NewTopic_new(topics[i].name, topics[i].partitions,
                                              topics[i].replication, why, why_size);
                if (!nt[k]) {
                        rerr = RD_KAFKA_RESP_ERR__INVALID_ARG;
                        goto out;
                }
                if (topics[i].compact)
                        rd_kafka_NewTopic_set_config(nt[k], "cleanup.policy", "compact");
                if (topics[i].retention_ms > 0) {
                        snprintf(num, sizeof(num), "%ld", topics[i].retention_ms);
                        rd_kafka_NewTopic_set_config(nt[k], "retention.ms", num);
                }
                idx[k++] = i;
        }
        if (!k)
                return RD_KAFKA_RESP_ERR_NO_ERROR;
        q = rd_kafka_queue_new(rk);
        opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
        rd_kafka_AdminOptions_set_request_timeout(opts, timeout_ms, NULL, 0);
        rd_kafka_AdminOptions_set_operation_timeout(opts, timeout_ms, NULL, 0);
        rd_kafka_CreateTopics(rk, nt, (size_t)k, opts, q);
        ev = rd_kafka_queue_poll(q, timeout_ms + 2000);
        if (!ev) {
                rerr = RD_KAFKA_RESP_ERR__TIMED_OUT;
                snprintf(why, why_size, "no CreateTopics answer within %d ms", timeout_ms);
                goto out;
        }
        if ((rerr = rd_kafka_event_error(ev))) {
                snprintf(why, why_size, "%s", rd_kafka_event_error_string(ev));
                goto out;
        }
        {
                const rd_kafka_CreateTopics_result_t *r = rd_kafka_event_CreateTopics_result(ev);
                size_t cnt = 0;
                const rd_kafka_topic_result_t **tr = rd_kafka_CreateTopics_result_topics(r, &cnt);
                for (size_t j = 0; j < cnt; j++)
                        for (int m = 0; m < k; m++)
                                if (!strcmp(rd_kafka_topic_result_name(tr[j]), topics[idx[m]].name))
                                        res[idx[m]] = rd_kafka_topic_result_error(tr[j]);
        }
out:
        if (ev)
                rd_kafka_event_destroy(ev);
        if (opts)
                rd_kafka_AdminOptions_destroy(opts);
        if (q)
                rd_kafka_queue_destroy(q);
        rd_kafka_NewTopic_destroy_array(nt, (size_t)k);
        return rerr;
}

sc_err_t sc_kafka_admin_ensure(rd_kafka_t *rk, const sc_kafka_topic_spec_t *topics, int n,
                               int timeout_ms, int *createdp, char *errstr, size_t errstr_size)
{
        int have[64], missing[64], nmissing = 0, created = 0;
        rd_kafka_resp_err_t res[64], rerr;
        char why[512] = "";
        sc_err_t err;

        if (createdp)
                *createdp = 0;
        if (n < 0 || n > 64)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "admin: %d topics (max 64)", n);
        for (int i = 0; i < n; i++) {
                if ((err = sc_kafka_admin_partitions(rk, topics[i].name, timeout_ms, &have[i],
                                                     errstr, errstr_size)))
                        return err;
                missing[i] = have[i] == 0;
                nmissing += missing[i];
        }
        if (nmissing && !sc_kafka_admin_has_controller(rk, timeout_ms)) {
                /* The embedded broker names no controller and answers no
                 * CreateTopics: auto-create through metadata requests. */
                snprintf(why, sizeof(why), "the broker has no controller for CreateTopics");
                for (int i = 0; i < n; i++)
                        if (missing[i])
                                sc_kafka_admin_autocreate(rk, topics[i].name, timeout_ms);
        } else if (nmissing) {
                rerr = sc_kafka_admin_create(rk, topics, missing, n, timeout_ms, res, why,
                                             sizeof(why));
                for (int i = 0; i < n; i++) {
                        if (!missing[i])
                                continue;
                        if (!rerr && !res[i])
                                created++;
                        else if (rerr || res[i] != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS)
                                sc_kafka_admin_autocreate(rk, topics[i].name, timeout_ms);
                }
        }
        for (int i = 0; i < n; i++) {
                int got = have[i];
                /* A created topic's metadata can lag behind; ask a few times. */
                for (int tries = 0; missing[i] && tries < 20; tries++) {
                        if ((err = sc_kafka_admin_partitions(rk, topics[i].name, timeout_ms, &got,
                                                             errstr, errstr_size)))
                                return err;
                        if (got)
                                break;
                        rd_kafka_poll(rk, 100);
                }
                if (!got)
                        return sc_errf(SC_ERR_IO, errstr, errstr_size,
                                       "topic %s: could not be created (%s)", topics[i].name,
                                       why[0] ? why : "no CreateTopics and no auto-creation");
                if (topics[i].exact && got != topics[i].partitions)
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "topic %s has %d partitions, the job needs %d (delete "
                                       "it, or create it with %d partitions, e.g. `scadles "
                                       "broker --topic %s:%d`)",
                                       topics[i].name, got, topics[i].partitions,
                                       topics[i].partitions, topics[i].name, topics[i].partitions);
        }
        if (createdp)
                *createdp = created;
        return SC_OK;
}
