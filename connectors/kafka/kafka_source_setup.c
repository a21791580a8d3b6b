/* kafka_source_setup.c — the Kafka source's creation (librdkafka clients
 * from the configuration), shutdown and queries (totals, lag, committed
 * offsets). */
#include "kafka_source_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- setup ---- */

static sc_err_t sc_ks_conf(const sc_conf_t *conf, rd_kafka_conf_t **out, char *errstr,
                           size_t errstr_size)
{
        char val[64];
        size_t vs;
        const char *defaults[][2] = {
            {"client.id", "scadles-worker"},
            {"auto.offset.reset", "earliest"},
            {"queued.max.messages.kbytes", "16384"},
            /* Per-partition fetches of 256 KB: a fetch round trip brings
             * enough records for a consumer at hundreds of thousands of
             * records/s, and a topic's partitions still alternate in the
             * stream every few hundred records (keyed partitions are often
             * label-skewed: worker.shuffle mixes them). */
            {"max.partition.fetch.bytes", "262144"},
            {"topic.metadata.refresh.interval.ms", conf->source.pattern[0] ? "2000" : "300000"},
            {"group.id", conf->source.group_id},
            /* One partition per topic is the usual shape of device streams:
             * librdkafka's default (range, then roundrobin) gives partition
             * 0 of every topic to one member; roundrobin spreads them. */
            {"partition.assignment.strategy", "roundrobin"},
        };
        const char *def[2 * sizeof(defaults) / sizeof(defaults[0]) + 1];
        size_t nd = 0;
        for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
                def[nd++] = defaults[i][0];
                def[nd++] = defaults[i][1];
        }
        def[nd] = NULL;
        rd_kafka_conf_t *kc = NULL;
        sc_err_t err = sc_kafka_client_conf(&kc, conf, RD_KAFKA_CONSUMER, def, errstr, errstr_size);
        if (err)
                return err;
        /* librdkafka 2.1 and later wait fetch.queue.backoff.ms (1 s by
         * default) before fetching again after the queue was full; older
         * ones do not know the property (the source wakes their fetchers,
         * see sc_ks_kick). */
        char ignored[256];
        const json_t *objs[] = {conf->kafka, conf->kafka_consumer};
        const char *sect[] = {"kafka", "kafka_consumer"};
        if (!json_object_get(objs[0], "fetch.queue.backoff.ms") &&
            !json_object_get(objs[1], "fetch.queue.backoff.ms"))
                (void)rd_kafka_conf_set(kc, "fetch.queue.backoff.ms", "10", ignored,
                                        sizeof(ignored));
        /* The end of a partition as the broker has it (after a
         * transaction's commit marker, which is never read) tells alignment
         * that it has nothing more to read (sc_ks_align). */
        if (!json_object_get(objs[0], "enable.partition.eof") &&
            !json_object_get(objs[1], "enable.partition.eof"))
                (void)rd_kafka_conf_set(kc, "enable.partition.eof", "true", ignored,
                                        sizeof(ignored));
        static const char *const off[] = {"enable.auto.commit", "enable.auto.offset.store"};
        for (size_t i = 0; !err && i < 2; i++) {
                int k = json_object_get(objs[1], off[i]) ? 1 : 0;
                vs = sizeof(val);
                if (json_object_get(objs[k], off[i]) &&
                    rd_kafka_conf_get(kc, off[i], val, &vs) == RD_KAFKA_CONF_OK &&
                    !strcmp(val, "true"))
                        err = sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                      "%s: $.%s.%s: the worker commits offsets itself, only "
                                      "for records trained on, dropped or rejected; it must be "
                                      "false",
                                      conf->origin, sect[k], off[i]);
                else if (!err)
                        err = sc_kafka_conf_set(kc, off[i], "false", off[i], errstr, errstr_size);
        }
        if (err) {
                rd_kafka_conf_destroy(kc);
                return err;
        }
        *out = kc;
        return SC_OK;
}

/* A producer handle on the kafka object's connection properties (the
 * consumer-only ones would only draw warnings): the dead-letter producer
 * (delivery = 1) or the probe that asks for watermarks on a connection of
 * its own (a consumer's is busy with long-polling fetches). */
static sc_err_t sc_ks_client_new(sc_kafka_source_t *src, const char *client_id, int delivery,
                                 rd_kafka_t **rkp, char *errstr, size_t errstr_size)
{
        static const char *const pass[] = {"bootstrap.", "security.", "ssl.",       "sasl.",
                                           "socket.",    "broker.",   "client.rack"};
        char why[512], where[320];
        const char *key;
        json_t *v;
        rd_kafka_conf_t *pc = rd_kafka_conf_new();
        sc_err_t err =
            sc_kafka_conf_set(pc, "client.id", client_id, "client.id", errstr, errstr_size);
        if (!err && src->conf->kafka) {
                json_object_foreach((json_t *)src->conf->kafka, key, v)
                {
                        int ok = 0;
                        for (size_t i = 0; i < sizeof(pass) / sizeof(pass[0]); i++)
                                ok |= !strncmp(key, pass[i], strlen(pass[i]));
                        if (!ok || !json_is_string(v))
                                continue;
                        snprintf(where, sizeof(where), "$.kafka.%s", key);
                        if ((err = sc_kafka_conf_set(pc, key, json_string_value(v), where, errstr,
                                                     errstr_size)))
                                break;
                }
        }
        if (err) {
                rd_kafka_conf_destroy(pc);
                return err;
        }
        sc_kafka_conf_log_bridge(pc);
        if (delivery)
                sc_kafka_conf_delivery(pc);
        *rkp = rd_kafka_new(RD_KAFKA_PRODUCER, pc, why, sizeof(why));
        if (!*rkp) {
                rd_kafka_conf_destroy(pc);
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: %s", client_id, why);
        }
        return SC_OK;
}

sc_err_t sc_kafka_source_new(sc_kafka_source_t **srcp, const sc_conf_t *conf, size_t numel,
                             int n_classes, uint64_t seed, sc_log_fn log, void *log_opaque,
                             char *errstr, size_t errstr_size)
{
        char why[512];
        rd_kafka_conf_t *kc = NULL;
        sc_err_t err;

        *srcp = NULL;
        if (conf->source.n_topics == 0 && !conf->source.pattern[0])
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: $.source: no topics to consume (give source.topics or "
                               "source.pattern)",
                               conf->origin);
        sc_kafka_source_t *src = calloc(1, sizeof(*src));
        if (!src)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        src->conf = conf;
        src->align_floor = INT64_MAX;
        src->align_stream = -1;
        src->numel = numel;
        src->n_classes = n_classes;
        src->seed = seed;
        src->log = log;
        src->log_opaque = log_opaque;

        src->sspec = conf->streams.buffer;
        src->hold_max = src->sspec.cap;
        src->bspec = conf->worker.batch;
        if ((err = sc_stream_spec_check(&src->sspec, why, sizeof(why))) ||
            (err = sc_batch_spec_check(&src->bspec, why, sizeof(why)))) {
                sc_errf(err, errstr, errstr_size, "%s: %s", conf->origin, why);
                goto out_free;
        }
        /* Every listed topic's decoder is checked now, not at first use. */
        for (int i = 0; i < conf->source.n_topics; i++) {
                sc_decode_spec_t ds;
                sc_ks_decode_spec(conf, conf->source.topics[i].topic, numel, n_classes, &ds);
                if (conf->source.unlabelled)
                        sc_decode_spec_unlabelled(&ds);
                if ((err = sc_decode_spec_check(&ds, why, sizeof(why)))) {
                        sc_errf(err, errstr, errstr_size, "%s: $.source.topics[%d]: %s",
                                conf->origin, i, why);
                        goto out_free;
                }
        }
        if (conf->source.registry_url[0]) {
                sc_registry_spec_t rs = {.url = conf->source.registry_url,
                                         .auth_file = conf->source.registry_auth_file,
                                         .ca = conf->source.registry_ca,
                                         .timeout = conf->source.registry_timeout};
                if ((err = sc_registry_new(&src->registry, &rs, why, sizeof(why)))) {
                        sc_errf(err, errstr, errstr_size, "%s: %s", conf->origin, why);
                        goto out_free;
                }
        }
        if ((err = sc_ks_conf(conf, &kc, errstr, errstr_size)))
                goto out_free;
        sc_kafka_delivery_init(&src->dlq_dv);
        if ((err = sc_ks_client_new(src, "scadles-probe", 0, &src->probe, errstr, errstr_size)) ||
            (conf->source.dead_letter[0] &&
             (err = sc_ks_client_new(src, "scadles-dead-letter", 1, &src->dlq, errstr,
                                     errstr_size)))) {
                rd_kafka_conf_destroy(kc);
                goto out_free;
        }
        sc_kafka_conf_log_bridge(kc);
        rd_kafka_conf_set_opaque(kc, src);
        rd_kafka_conf_set_rebalance_cb(kc, sc_ks_on_rebalance);
        rd_kafka_conf_set_offset_commit_cb(kc, sc_ks_on_commit);
        if ((err =
                 sc_kafka_reach_conf(&src->reach, kc, conf, sc_ks_on_stats, errstr, errstr_size))) {
                rd_kafka_conf_destroy(kc);
                goto out_free;
        }
        src->rk = rd_kafka_new(RD_KAFKA_CONSUMER, kc, why, sizeof(why));
        if (!src->rk) {
                rd_kafka_conf_destroy(kc);
                err = sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "%s: $.kafka: consumer: %s",
                              conf->origin, why);
                goto out_free;
        }
        rd_kafka_poll_set_consumer(src->rk);

        rd_kafka_topic_partition_list_t *sub =
            rd_kafka_topic_partition_list_new(conf->source.n_topics + 1);
        for (int i = 0; i < conf->source.n_topics; i++)
                rd_kafka_topic_partition_list_add(sub, conf->source.topics[i].topic,
                                                  RD_KAFKA_PARTITION_UA);
        if (conf->source.pattern[0])
                rd_kafka_topic_partition_list_add(sub, conf->source.pattern, RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t e = rd_kafka_subscribe(src->rk, sub);
        rd_kafka_topic_partition_list_destroy(sub);
        if (e) {
                err = sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "%s: $.source: subscribe: %s",
                              conf->origin, rd_kafka_err2str(e));
                goto out_free;
        }
        *srcp = src;
        return SC_OK;

out_free:
        sc_kafka_source_destroy(src);
        return err;
}

void sc_kafka_source_destroy(sc_kafka_source_t *src)
{
        char why[512];
        if (!src)
                return;
        if (src->rk) {
                if (sc_ks_commit(src, 1, 1, why, sizeof(why)))
                        sc_ks_logf(src, 4, "final %s", why);
                /* revokes: commits, returns buffers */
                sc_kafka_consumer_leave(src->rk, SC_KAFKA_LEAVE_MS);
                rd_kafka_destroy(src->rk);
        }
        if (src->dlq) {
                rd_kafka_flush(src->dlq, 10000);
                rd_kafka_destroy(src->dlq);
        }
        if (src->probe)
                rd_kafka_destroy(src->probe);
        for (int i = 0; i < src->n_streams; i++) {
                sc_ks_stream_t *ks = &src->streams[i];
                for (size_t j = 0; j < ks->n_held; j++)
                        rd_kafka_message_destroy(ks->held[j]);
                free(ks->held);
                free(ks->parts);
                if (ks->avro && !src->own_ingest)
                        sc_ingest_stream_avro(src->ingest, i, NULL);
                sc_avro_cache_free(ks->avro);
        }
        if (src->own_ingest)
                sc_ingest_destroy(src->ingest);
        sc_registry_destroy(src->registry);
        free(src);
}

/* Commit errors that a moment (a rebalance served, a coordinator found or
 * loaded) cures. */
static int sc_ks_commit_retriable(rd_kafka_resp_err_t e)
{
        switch (e) {
        case RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS:
        case RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION:
        case RD_KAFKA_RESP_ERR__STATE:
        case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
        case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
        case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
        case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
        case RD_KAFKA_RESP_ERR__WAIT_COORD:
        case RD_KAFKA_RESP_ERR__TIMED_OUT:
        case RD_KAFKA_RESP_ERR__TRANSPORT:
                return 1;
        default:
                return 0;
        }
}

sc_err_t sc_kafka_source_finish(sc_kafka_source_t *src, int timeout_ms, char *errstr,
                                size_t errstr_size)
{
        sc_err_t err = SC_OK;
        if (src->dlq) {
                rd_kafka_flush(src->dlq, timeout_ms);
                sc_ks_dlq_stats(src);
                if (src->dlq_dv.dv_pending > 0)
                        err = sc_errf(SC_ERR_IO, errstr, errstr_size,
                                      "dead-letter topic %s: %" PRId64 " record(s) undelivered "
                                      "after %d ms",
                                      src->conf->source.dead_letter, src->dlq_dv.dv_pending,
                                      timeout_ms);
        }
        /* A rebalance under way (another member left at the same time)
         * refuses commits: serve it (the revocation commits what is finished
         * and returns the rest), then commit what is still assigned. Records
         * fetched meanwhile are left unread: not consumed, not committed. A
         * group coordinator that moved or is loading (a broker restarted)
         * answers again within moments: retried the same way. */
        sc_err_t e2 = SC_OK;
        for (int tries = 0; tries < 50; tries++) {
                src->last_commit_err = RD_KAFKA_RESP_ERR_NO_ERROR;
                e2 = sc_ks_commit(src, 1, 1, errstr, errstr_size);
                if (!e2 || !sc_ks_commit_retriable(src->last_commit_err))
                        break;
                src->stats.ks_commit_errors--; /* retried, not failed */
                for (int i = 0; i < 10; i++) {
                        rd_kafka_message_t *m = rd_kafka_consumer_poll(src->rk, 20);
                        if (m)
                                rd_kafka_message_destroy(m);
                }
        }
        return err ? err : e2;
}

/* ---- queries ---- */

void sc_kafka_source_durable(sc_kafka_source_t *src, int on)
{
        src->keep_covers = on != 0;
}

void sc_kafka_source_commit_covers(sc_kafka_source_t *src, int on)
{
        src->commit_covers = on != 0;
}

sc_batcher_t *sc_kafka_source_batcher(sc_kafka_source_t *src)
{
        return src->ingest ? sc_ingest_batcher(src->ingest) : NULL;
}

rd_kafka_t *sc_kafka_source_handle(sc_kafka_source_t *src)
{
        return src->rk;
}

sc_err_t sc_kafka_source_ack(sc_kafka_source_t *src, uint64_t batch_id, char *errstr,
                             size_t errstr_size)
{
        sc_batcher_t *bt = src->ingest ? sc_ingest_batcher(src->ingest) : NULL;
        if (!bt)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size, "no batch was taken");
        return sc_batcher_ack(bt, batch_id, errstr, errstr_size);
}

void sc_kafka_source_totals(const sc_kafka_source_t *src, sc_stream_stats_t *sum)
{
        sc_ingest_totals(src->ingest, sum);
}

const sc_kafka_source_stats_t *sc_kafka_source_stats(const sc_kafka_source_t *src)
{
        return &src->stats;
}

sc_err_t sc_kafka_source_check(const sc_kafka_source_t *src, char *errstr, size_t errstr_size)
{
        sc_batcher_t *bt = src->ingest ? sc_ingest_batcher(src->ingest) : NULL;
        if (!bt)
                return SC_OK;
        return sc_batcher_check(bt, errstr, errstr_size);
}

double sc_kafka_source_rate(sc_kafka_source_t *src, double t)
{
        double r = 0;
        for (int i = 0; i < src->n_streams; i++)
                r += sc_stream_rate(src->streams[i].stream, t);
        return r;
}

int sc_kafka_source_nstreams(const sc_kafka_source_t *src)
{
        return src->n_streams;
}

const char *sc_kafka_source_stream(const sc_kafka_source_t *src, int i,
                                   const sc_stream_stats_t **stats)
{
        if (i < 0 || i >= src->n_streams)
                return NULL;
        if (stats)
                *stats = sc_stream_stats(src->streams[i].stream);
        return src->streams[i].topic;
}

/* A partition's watermarks as the consumer's last fetch response gave them
 * (no request: a partition whose leader is down cannot block the caller;
 * librdkafka 2.0.2's ListOffsets query then waits past its timeout until the
 * old leader answers). Without a fetch yet, and query_ms >= 0, asks through
 * the probe within query_ms. */
static int sc_ks_watermarks(sc_kafka_source_t *src, const char *topic, int32_t partition,
                            int query_ms, int64_t *lo, int64_t *hi)
{
        if (!rd_kafka_get_watermark_offsets(src->rk, topic, partition, lo, hi) && *hi >= 0)
                return 0;
        if (query_ms < 0 ||
            rd_kafka_query_watermark_offsets(src->probe, topic, partition, lo, hi, query_ms))
                return -1;
        return 0;
}

int sc_ks_on_stats(rd_kafka_t *rk, char *json, size_t json_len, void *opaque)
{
        sc_kafka_source_t *src = opaque;
        (void)rk;
        int level;
        const char *say = sc_kafka_reach_event(&src->reach, json, json_len, &level);
        if (say)
                sc_ks_logf(src, level, "%s", say);
        return 0; /* librdkafka frees json */
}

int sc_kafka_source_reachable(const sc_kafka_source_t *src)
{
        return sc_kafka_reach_ok(&src->reach);
}

int sc_kafka_source_registry_waiting(const sc_kafka_source_t *src)
{
        if (!src->registry || !sc_registry_waiting(src->registry, src->t_now))
                return 0;
        for (int i = 0; i < src->n_streams; i++)
                if (src->streams[i].avro && src->streams[i].n_held > 0)
                        return 1;
        return 0;
}

json_t *sc_kafka_source_registry_json(const sc_kafka_source_t *src)
{
        if (!src->registry)
                return NULL;
        const sc_registry_stats_t *r = sc_registry_stats(src->registry);
        size_t schemas = 0;
        for (int i = 0; i < src->n_streams; i++)
                schemas += sc_avro_cache_size(src->streams[i].avro);
        return json_pack("{s:I, s:I, s:I, s:b, s:I, s:I}", "requests", (json_int_t)r->requests,
                         "failures", (json_int_t)r->failures, "not_found", (json_int_t)r->not_found,
                         "unavailable", r->unavailable, "held", (json_int_t)src->registry_held,
                         "schemas", (json_int_t)schemas);
}

int sc_kafka_source_align_paused(const sc_kafka_source_t *src)
{
        int n = 0;
        for (int i = 0; i < src->n_streams; i++)
                for (size_t j = 0; !src->streams[i].flow_paused && j < src->streams[i].n_parts; j++)
                        n += src->streams[i].parts[j].assigned && src->streams[i].parts[j].paused;
        return n;
}

int64_t sc_kafka_source_lag(sc_kafka_source_t *src)
{
        return sc_kafka_source_lag_ends(src, NULL);
}

int sc_kafka_source_lags(sc_kafka_source_t *src, sc_kafka_lag_fn fn, void *opaque)
{
        rd_kafka_topic_partition_list_t *a = NULL;
        if (rd_kafka_assignment(src->rk, &a) || !a)
                return -1;
        int n = a->cnt;
        for (int i = 0; i < a->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &a->elems[i];
                int64_t lo = -1, hi = -1, pos = -1;
                if (sc_ks_watermarks(src, tp->topic, tp->partition, -1, &lo, &hi)) {
                        fn(opaque, tp->topic, tp->partition, -1, -1);
                        continue;
                }
                /* The next offset expected: after the last one consumed, or
                 * the committed start of the assignment. */
                sc_ks_stream_t *ks = sc_ks_find(src, tp->topic);
                for (size_t k = 0; ks && k < ks->n_parts; k++)
                        if (ks->parts[k].partition == tp->partition)
                                pos = ks->parts[k].gap.gp_next;
                if (pos < 0 || pos < lo)
                        pos = lo < 0 ? 0 : lo; /* nothing read or committed: from the log start */
                fn(opaque, tp->topic, tp->partition, hi > pos ? hi - pos : 0, hi);
        }
        rd_kafka_topic_partition_list_destroy(a);
        return n;
}

typedef struct sc_ks_lag_sum {
        int64_t lag, ends;
} sc_ks_lag_sum_t;

static void sc_ks_lag_add(void *opaque, const char *topic, int32_t partition, int64_t lag,
                          int64_t end)
{
        sc_ks_lag_sum_t *t = opaque;
        (void)topic;
        (void)partition;
        if (lag < 0 || t->lag < 0) {
                t->lag = -1;
                return;
        }
        t->lag += lag;
        t->ends += end;
}

int64_t sc_kafka_source_lag_ends(sc_kafka_source_t *src, int64_t *ends)
{
        sc_ks_lag_sum_t t = {0, 0};
        if (sc_kafka_source_lags(src, sc_ks_lag_add, &t) < 0)
                t.lag = -1;
        if (ends)
                *ends = t.lag < 0 ? 0 : t.ends;
        return t.lag;
}

json_t *sc_kafka_source_partitions(sc_kafka_source_t *src, int timeout_ms)
{
        rd_kafka_topic_partition_list_t *a = NULL;
        json_t *arr = json_array();
        if (!arr || rd_kafka_assignment(src->rk, &a) || !a) {
                json_decref(arr);
                return NULL;
        }
        rd_kafka_resp_err_t ce = rd_kafka_committed(src->rk, a, timeout_ms);
        for (int i = 0; i < a->cnt; i++) {
                const rd_kafka_topic_partition_t *tp = &a->elems[i];
                int64_t lo = -1, hi = -1, pos = -1;
                sc_ks_watermarks(src, tp->topic, tp->partition, timeout_ms, &lo, &hi);
                sc_ks_stream_t *ks = sc_ks_find(src, tp->topic);
                if (!ks || sc_offsets_position(sc_stream_offsets(ks->stream), tp->partition,
                                               &pos) != SC_OK)
                        pos = -1;
                int64_t start = -1;
                for (size_t k = 0; ks && k < ks->n_parts; k++)
                        if (ks->parts[k].partition == tp->partition)
                                start = ks->parts[k].start;
                json_array_append_new(
                    arr, json_pack("{s:s, s:i, s:I, s:I, s:I, s:I}", "topic", tp->topic,
                                   "partition", (int)tp->partition, "start", (json_int_t)start,
                                   "committed", (json_int_t)(ce || tp->err ? -1 : tp->offset),
                                   "end", (json_int_t)hi, "position", (json_int_t)pos));
        }
        rd_kafka_topic_partition_list_destroy(a);
        return arr;
}
