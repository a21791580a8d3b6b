/* test_kafka_source.c — the Kafka source on an in-process embedded broker:
 * records decoded into streams, malformed ones rejected and dead-lettered,
 * batches acknowledged and committed to the end offsets, persistence
 * backpressure (pause at the high watermark, resume below the low one),
 * partitions read in time order (source.align), configuration errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "sc_broker.h"
#include "sc_conf.h"
#include "kafka_source_impl.h"
#include "sc_kafka_source.h"
#include "sc_offsets.h"
#include "sc_kafka_util.h"

#define NUMEL 16

static double now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void quiet_log(void *opaque, int level, const char *msg)
{
        (void)opaque;
        (void)level;
        (void)msg;
}

/* A configuration of raw 16-byte records (label in the key) on topic, then
 * the overrides in sets (NULL-terminated, may be NULL). */
static void make_conf(sc_conf_t *conf, const char *bs, const char *topic, const char *const *sets)
{
        char text[2048], err[512];
        snprintf(text, sizeof(text),
                 "{\"model\": {\"input\": [%d]}, \"source\": {\"group_id\": \"ut-%s\", "
                 "\"topics\": [{\"topic\": \"%s\"}]}, \"streams\": {\"format\": \"raw\", "
                 "\"scale\": 0.0039}, \"worker\": {\"batch\": \"fixed\", \"b\": 10, "
                 "\"shuffle\": 0}, \"kafka\": {\"bootstrap.servers\": \"%s\", \"log_level\": 0}}",
                 NUMEL, topic, topic, bs);
        if (sc_conf_parse(conf, text, "test", err, sizeof(err)) != SC_OK)
                fail_msg("%s", err);
        for (int i = 0; sets && sets[i]; i++)
                if (sc_conf_set(conf, sets[i], err, sizeof(err)) != SC_OK)
                        fail_msg("%s: %s", sets[i], err);
}

/* Produces n well-formed records (labels i % 10) and, if bad, 3 malformed
 * ones (short value, non-numeric key, one header more than
 * SC_DECODE_MAX_HEADERS) after the first half. */
static void produce(const char *bs, const char *topic, int n, int bad)
{
        char err[512], key[8];
        uint8_t v[NUMEL];
        rd_kafka_conf_t *kc = rd_kafka_conf_new();
        assert_int_equal(sc_kafka_conf_set(kc, "bootstrap.servers", bs, "bs", err, sizeof(err)),
                         SC_OK);
        sc_kafka_conf_delivery(kc);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, err, sizeof(err));
        assert_non_null(rk);
        sc_kafka_delivery_t dv;
        sc_kafka_delivery_init(&dv);
        for (int i = 0; i < n; i++) {
                memset(v, i & 0xff, sizeof(v));
                int kl = snprintf(key, sizeof(key), "%d", i % 10);
                assert_int_equal(sc_kafka_produce(rk, topic, 0, key, (size_t)kl, v, sizeof(v), NULL,
                                                  NULL, 0, 0, &dv, 5000, err, sizeof(err)),
                                 SC_OK);
                if (bad && i == n / 2) {
                        assert_int_equal(sc_kafka_produce(rk, topic, 0, "1", 1, v, 3, NULL, NULL, 0,
                                                          0, &dv, 5000, err, sizeof(err)),
                                         SC_OK);
                        assert_int_equal(sc_kafka_produce(rk, topic, 0, "x", 1, v, sizeof(v), NULL,
                                                          NULL, 0, 0, &dv, 5000, err, sizeof(err)),
                                         SC_OK);
                        rd_kafka_headers_t *h = rd_kafka_headers_new(SC_DECODE_MAX_HEADERS + 1);
                        for (int k = 0; k <= SC_DECODE_MAX_HEADERS; k++)
                                rd_kafka_header_add(h, "h", -1, "v", 1);
                        assert_int_equal(rd_kafka_producev(
                                             rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
                                             RD_KAFKA_V_KEY("1", 1), RD_KAFKA_V_VALUE(v, sizeof(v)),
                                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                             RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END),
                                         RD_KAFKA_RESP_ERR_NO_ERROR);
                }
        }
        assert_int_equal(sc_kafka_delivery_wait(rk, &dv, 10000, err, sizeof(err)), SC_OK);
        assert_int_equal(rd_kafka_flush(rk, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_destroy(rk);
}

/* Polls until want records were consumed or 20 s passed. */
static void consume(sc_kafka_source_t *src, uint64_t want)
{
        char err[512];
        sc_stream_stats_t s;
        double t0 = now();
        do {
                assert_int_equal(
                    sc_kafka_source_poll(src, now(), 100, 1000, NULL, err, sizeof(err)), SC_OK);
                sc_kafka_source_totals(src, &s);
        } while (s.consumed < want && now() - t0 < 20);
}

static void records_trained_rejected_committed(void **state)
{
        char err[512];
        sc_broker_t *broker = NULL;
        sc_kafka_source_t *src = NULL;
        sc_conf_t conf;
        sc_batch_t *batch = NULL;

        assert_int_equal(sc_broker_new(&broker, 1, err, sizeof(err)), SC_OK);
        const char *bs = sc_broker_bootstraps(broker);
        assert_int_equal(sc_broker_topic_create(broker, "ut.a", 1, err, sizeof(err)), SC_OK);
        produce(bs, "ut.a", 100, 1);
        static const char *const sets[] = {"source.dead_letter_topic=ut.dlq", NULL};
        make_conf(&conf, bs, "ut.a", sets);
        assert_int_equal(
            sc_kafka_source_new(&src, &conf, NUMEL, 10, 1, quiet_log, NULL, err, sizeof(err)),
            SC_OK);
        consume(src, 103);

        sc_stream_stats_t s;
        sc_kafka_source_totals(src, &s);
        assert_int_equal(s.consumed, 103);
        assert_int_equal(s.rejected, 3);
        assert_int_equal(s.faults.count[SC_DECODE_WRONG_LENGTH], 1);
        assert_int_equal(s.faults.count[SC_DECODE_BAD_KEY], 1);
        assert_int_equal(s.faults.count[SC_DECODE_TOO_MANY_HEADERS], 1);
        assert_int_equal(s.buffered, 100);
        assert_int_equal(sc_kafka_source_nstreams(src), 1);
        const sc_kafka_source_stats_t *ks = sc_kafka_source_stats(src);
        assert_int_equal(ks->ks_received, 103);
        assert_int_equal(ks->ks_lost, 0);

        /* Train everything in batches of 10: labels follow the key and the
         * features the normalized bytes. */
        sc_batcher_t *bt = sc_kafka_source_batcher(src);
        assert_non_null(bt);
        assert_int_equal(sc_batch_new(&batch, 10, NUMEL), SC_OK);
        for (int i = 0; i < 10; i++) {
                assert_true(sc_batcher_ready(bt, now(), NULL));
                assert_int_equal(sc_batcher_take(bt, now(), batch, err, sizeof(err)), SC_OK);
                assert_int_equal(batch->n, 10);
                for (int k = 0; k < batch->n; k++) {
                        int64_t off = batch->refs[k].offset;
                        int64_t i0 = off > 50 ? off - 3 : off; /* bad records at 51..53 */
                        assert_int_equal(batch->labels[k], (int32_t)(i0 % 10));
                        assert_float_equal(batch->x[(size_t)k * NUMEL],
                                           (float)(i0 & 0xff) * 0.0039f, 1e-4);
                }
                assert_int_equal(sc_kafka_source_ack(src, batch->id, err, sizeof(err)), SC_OK);
        }
        assert_false(sc_batcher_ready(bt, now(), NULL));
        assert_int_equal(sc_kafka_source_check(src, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_kafka_source_finish(src, 10000, err, sizeof(err)), SC_OK);
        sc_kafka_source_totals(src, &s);
        assert_int_equal(s.trained, 100);
        assert_int_equal(sc_kafka_source_stats(src)->ks_dead_letter, 3);

        /* Committed up to the end: trained and rejected records alike. */
        json_t *parts = sc_kafka_source_partitions(src, 5000);
        assert_non_null(parts);
        assert_int_equal(json_array_size(parts), 1);
        json_t *p0 = json_array_get(parts, 0);
        assert_int_equal(json_integer_value(json_object_get(p0, "committed")), 103);
        assert_int_equal(json_integer_value(json_object_get(p0, "end")), 103);
        json_decref(parts);

        sc_batch_destroy(batch);
        sc_kafka_source_destroy(src);
        sc_conf_free(&conf);
        sc_broker_destroy(broker);
}

static void persist_pauses_and_resumes(void **state)
{
        char err[512];
        sc_broker_t *broker = NULL;
        sc_kafka_source_t *src = NULL;
        sc_conf_t conf;
        sc_batch_t *batch = NULL;

        assert_int_equal(sc_broker_new(&broker, 1, err, sizeof(err)), SC_OK);
        const char *bs = sc_broker_bootstraps(broker);
        assert_int_equal(sc_broker_topic_create(broker, "ut.p", 1, err, sizeof(err)), SC_OK);
        produce(bs, "ut.p", 300, 0);
        static const char *const sets[] = {"streams.cap=40", "streams.low_watermark=0.25",
                                           "streams.high_watermark=0.5",
                                           "kafka.fetch.wait.max.ms=10", NULL};
        make_conf(&conf, bs, "ut.p", sets);
        assert_int_equal(
            sc_kafka_source_new(&src, &conf, NUMEL, 10, 1, quiet_log, NULL, err, sizeof(err)),
            SC_OK);
        consume(src, 20);
        /* Without training, the stream fills to its high watermark and the
         * partition is paused; whatever librdkafka had already handed over
         * waits (held) until there is room. Nothing exceeds the cap. */
        for (int i = 0; i < 20; i++)
                assert_int_equal(sc_kafka_source_poll(src, now(), 50, 1000, NULL, err, sizeof(err)),
                                 SC_OK);
        sc_stream_stats_t s;
        sc_kafka_source_totals(src, &s);
        const sc_kafka_source_stats_t *ks = sc_kafka_source_stats(src);
        assert_true(s.buffered >= 20 && s.buffered <= 40);
        assert_int_equal(ks->ks_paused_partitions, 1);
        assert_true(ks->ks_pauses >= 1);
        assert_true(s.consumed + ks->ks_held < 300);
        assert_true(sc_kafka_source_lag(src) > 0);

        /* Training drains it: the partition resumes and everything arrives. */
        sc_batcher_t *bt = sc_kafka_source_batcher(src);
        assert_int_equal(sc_batch_new(&batch, 10, NUMEL), SC_OK);
        double t0 = now();
        while (s.trained < 300 && now() - t0 < 20) {
                assert_int_equal(sc_kafka_source_poll(src, now(), 20, 1000, NULL, err, sizeof(err)),
                                 SC_OK);
                while (sc_batcher_ready(bt, now(), NULL)) {
                        assert_int_equal(sc_batcher_take(bt, now(), batch, err, sizeof(err)),
                                         SC_OK);
                        assert_int_equal(sc_kafka_source_ack(src, batch->id, err, sizeof(err)),
                                         SC_OK);
                }
                sc_kafka_source_totals(src, &s);
                assert_true(s.buffered <= 40);
        }
        assert_int_equal(s.trained, 300);
        assert_int_equal(s.consumed, 300);
        assert_true(ks->ks_resumes >= 1);
        assert_int_equal(ks->ks_held, 0);
        assert_int_equal(sc_kafka_source_check(src, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_kafka_source_finish(src, 10000, err, sizeof(err)), SC_OK);

        sc_batch_destroy(batch);
        sc_kafka_source_destroy(src);
        sc_conf_free(&conf);
        sc_broker_destroy(broker);
}

/* Produces n records to topic's partition, their timestamps t0_ms + 100 ms
 * apart, each in a produce batch of its own (the embedded broker serves one
 * batch per partition per fetch). */
static void produce_timed(const char *bs, const char *topic, int32_t partition, int n,
                          int64_t t0_ms)
{
        char err[512];
        uint8_t v[NUMEL];
        rd_kafka_conf_t *kc = rd_kafka_conf_new();
        assert_int_equal(sc_kafka_conf_set(kc, "bootstrap.servers", bs, "bs", err, sizeof(err)),
                         SC_OK);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, err, sizeof(err));
        assert_non_null(rk);
        memset(v, 7, sizeof(v));
        for (int i = 0; i < n; i++) {
                assert_int_equal(
                    rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                                      RD_KAFKA_V_KEY("3", 1), RD_KAFKA_V_VALUE(v, sizeof(v)),
                                      RD_KAFKA_V_TIMESTAMP(t0_ms + 100 * i),
                                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                    RD_KAFKA_RESP_ERR_NO_ERROR);
                assert_int_equal(rd_kafka_flush(rk, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
        }
        assert_int_equal(rd_kafka_flush(rk, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_destroy(rk);
}

#define ALIGN_N 100

/* The order records reach the streams in: partition and timestamp. */
typedef struct order {
        int n;
        int32_t partition[2 * ALIGN_N];
        int64_t ts[2 * ALIGN_N];
} order_t;

static void on_record(void *opaque, int stream, const rd_kafka_message_t *m)
{
        order_t *o = opaque;
        (void)stream;
        if (o->n < 2 * ALIGN_N) {
                o->partition[o->n] = m->partition;
                o->ts[o->n++] = rd_kafka_message_timestamp(m, NULL);
        }
}

/* Records of partition a that arrived while a record of partition b more
 * than slack_ms older had not yet, leaving out those before b's first and
 * a's first itself: until a partition's first record is read, its time is
 * not known. */
static int out_of_order(const order_t *o, int32_t a, int32_t b, int64_t slack_ms)
{
        int bad = 0, seen_b = 0, seen_a = 0;
        for (int i = 0; i < o->n; i++) {
                int first_a = o->partition[i] == a && !seen_a;
                seen_b |= o->partition[i] == b;
                seen_a |= o->partition[i] == a;
                if (o->partition[i] != a || !seen_b || first_a)
                        continue;
                for (int j = i + 1; j < o->n; j++)
                        if (o->partition[j] == b && o->ts[j] < o->ts[i] - slack_ms) {
                                bad++;
                                break;
                        }
        }
        return bad;
}

/* Records of partition b that arrived after partition a's second. */
static int after_second(const order_t *o, int32_t a, int32_t b)
{
        int seen_a = 0, n = 0;
        for (int i = 0; i < o->n; i++) {
                if (o->partition[i] == a)
                        seen_a++;
                else if (o->partition[i] == b && seen_a >= 2)
                        n++;
        }
        return n;
}

/* Partition 0 holds 10 s of records from t, partition 1 10 s from t + 5 s.
 * With source.align 1, the source reads them in time order (within the
 * alignment and one produce batch); with 0, in the order the fetches
 * deliver them, which mixes partition 1's later records in from the start. */
static void align_reads_partitions_in_time_order(void **state)
{
        char err[512];
        sc_broker_t *broker = NULL;
        assert_int_equal(sc_broker_new(&broker, 1, err, sizeof(err)), SC_OK);
        const char *bs = sc_broker_bootstraps(broker);
        assert_int_equal(sc_broker_topic_create(broker, "ut.t", 2, err, sizeof(err)), SC_OK);
        int64_t t = (int64_t)time(NULL) * 1000 - 3600 * 1000;
        produce_timed(bs, "ut.t", 0, ALIGN_N, t);
        produce_timed(bs, "ut.t", 1, ALIGN_N, t + 5000);
        for (int align = 1; align >= 0; align--) {
                sc_kafka_source_t *src = NULL;
                sc_conf_t conf;
                char set_align[64], set_group[64];
                snprintf(set_align, sizeof(set_align), "source.align=%d", align);
                snprintf(set_group, sizeof(set_group), "source.group_id=ut-align-%d", align);
                const char *const sets[] = {set_align, set_group, NULL};
                make_conf(&conf, bs, "ut.t", sets);
                assert_int_equal(sc_kafka_source_new(&src, &conf, NUMEL, 10, 1, quiet_log, NULL,
                                                     err, sizeof(err)),
                                 SC_OK);
                static order_t o;
                memset(&o, 0, sizeof(o));
                sc_kafka_source_on_record(src, on_record, &o);
                sc_stream_stats_t s;
                double t0 = now();
                do {
                        assert_int_equal(
                            sc_kafka_source_poll(src, now(), 20, 10, NULL, err, sizeof(err)),
                            SC_OK);
                        sc_kafka_source_totals(src, &s);
                } while (s.consumed < 2 * ALIGN_N && now() - t0 < 30);
                assert_int_equal(s.consumed, 2 * ALIGN_N);
                assert_int_equal(o.n, 2 * ALIGN_N);
                /* Everything read: nothing holds a partition back any more
                 * (decided at the next poll 50 ms on). */
                for (int i = 0; i < 5; i++)
                        assert_int_equal(
                            sc_kafka_source_poll(src, now(), 20, 10, NULL, err, sizeof(err)),
                            SC_OK);
                const sc_kafka_source_stats_t *ks = sc_kafka_source_stats(src);
                /* slack: the alignment, and what was fetched before a
                 * pause (still delivered) */
                int bad = out_of_order(&o, 1, 0, 2000);
                if (align) {
                        /* Partition 1 waits for partition 0, and goes on
                         * once partition 0 has caught up, not when it is
                         * all read: a quarter of partition 0 or more comes
                         * after partition 1's second record. */
                        assert_int_equal(bad, 0);
                        assert_true(after_second(&o, 1, 0) >= ALIGN_N / 4);
                        assert_true(ks->ks_align_pauses >= 1);
                        assert_int_equal(ks->ks_paused_partitions, 0);
                } else {
                        assert_true(bad > 0);
                        assert_int_equal(ks->ks_align_pauses, 0);
                }
                assert_int_equal(ks->ks_lost, 0);
                assert_int_equal(ks->ks_duplicates, 0);
                assert_int_equal(sc_kafka_source_check(src, err, sizeof(err)), SC_OK);
                sc_kafka_source_destroy(src);
                sc_conf_free(&conf);
        }
        sc_broker_destroy(broker);
}

static void config_errors(void **state)
{
        char err[512];
        sc_kafka_source_t *src = NULL;
        sc_conf_t conf;

        /* No topics. */
        sc_conf_defaults(&conf);
        assert_int_equal(
            sc_kafka_source_new(&src, &conf, NUMEL, 10, 1, NULL, NULL, err, sizeof(err)),
            SC_ERR_CONFIG);
        assert_non_null(strstr(err, "$.source"));
        assert_null(src);
        sc_conf_free(&conf);

        /* Auto-commit cannot be turned on. */
        make_conf(&conf, "127.0.0.1:1", "ut.c", NULL);
        assert_int_equal(sc_conf_set(&conf, "kafka.enable.auto.commit=true", err, sizeof(err)),
                         SC_OK);
        assert_int_equal(
            sc_kafka_source_new(&src, &conf, NUMEL, 10, 1, NULL, NULL, err, sizeof(err)),
            SC_ERR_CONFIG);
        assert_non_null(strstr(err, "$.kafka.enable.auto.commit"));
        sc_conf_free(&conf);

        /* An unknown librdkafka property names its path. */
        make_conf(&conf, "127.0.0.1:1", "ut.c", NULL);
        assert_int_equal(sc_conf_set(&conf, "kafka.no.such.property=1", err, sizeof(err)), SC_OK);
        assert_int_equal(
            sc_kafka_source_new(&src, &conf, NUMEL, 10, 1, NULL, NULL, err, sizeof(err)),
            SC_ERR_CONFIG);
        assert_non_null(strstr(err, "$.kafka.no.such.property"));
        sc_conf_free(&conf);

        sc_kafka_source_destroy(NULL);
}

/* A job member's commit metadata names the finished offsets above the
 * committed one (runs), decodes to the same offsets, stays within
 * SC_KS_META_MAX (leaving out runs that do not fit), and what another
 * member might write is refused or ignored, never trusted. */
static void commit_metadata_names_finished_offsets(void **state)
{
        (void)state;
        sc_offsets_t *o = NULL;
        uint32_t ep;
        char why[256];
        int64_t *done = NULL;
        size_t len = 0, n = 0;
        assert_int_equal(sc_offsets_new(&o), SC_OK);
        for (int64_t off = 100; off < 120; off++)
                assert_int_equal(sc_offsets_track(o, 3, off, &ep, NULL, 0), SC_OK);
        /* 100 outstanding; 102-104, 107 and 110-111 finished */
        int64_t fin[] = {102, 103, 104, 107, 110, 111};
        for (size_t i = 0; i < 6; i++)
                assert_int_equal(sc_offsets_done(o, 3, fin[i], ep, NULL, 0), SC_OK);
        char *m = sc_ks_meta_encode(o, 3, 100, &len);
        assert_non_null(m);
        assert_int_equal(len, strlen(SC_KS_META_PREFIX " 2+3 7+1 10+2"));
        assert_memory_equal(m, SC_KS_META_PREFIX " 2+3 7+1 10+2", len);
        assert_int_equal(sc_ks_meta_decode(m, len, 100, &done, &n, why, sizeof(why)), SC_OK);
        assert_int_equal(n, 6);
        for (size_t i = 0; i < 6; i++)
                assert_int_equal(done[i], fin[i]);
        free(done);
        assert_int_equal(sc_ks_meta_decode(m, len, 100, NULL, &n, why, sizeof(why)), SC_OK);
        assert_int_equal(n, 6);
        free(m);
        /* nothing finished above: no metadata */
        assert_null(sc_ks_meta_encode(o, 4, 0, &len));
        assert_int_equal(len, 0);
        sc_offsets_destroy(o);

        /* Many runs: the metadata stops at SC_KS_META_MAX, every run in it whole. */
        assert_int_equal(sc_offsets_new(&o), SC_OK);
        for (int64_t off = 0; off < 4000; off++)
                assert_int_equal(sc_offsets_track(o, 0, off, &ep, NULL, 0), SC_OK);
        for (int64_t off = 2; off < 4000; off += 2)
                assert_int_equal(sc_offsets_done(o, 0, off, ep, NULL, 0), SC_OK);
        m = sc_ks_meta_encode(o, 0, 0, &len);
        assert_non_null(m);
        assert_true(len <= SC_KS_META_MAX && len > SC_KS_META_MAX - 16);
        assert_int_equal(sc_ks_meta_decode(m, len, 0, &done, &n, why, sizeof(why)), SC_OK);
        assert_true(n > 300 && n < 1999);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(done[i], 2 * (int64_t)(i + 1));
        free(done);
        free(m);
        sc_offsets_destroy(o);

        /* Other metadata: empty or foreign is nothing; malformed is refused. */
        assert_int_equal(sc_ks_meta_decode(NULL, 0, 5, &done, &n, why, sizeof(why)), SC_OK);
        assert_int_equal(n, 0);
        assert_int_equal(sc_ks_meta_decode("hello", 5, 5, &done, &n, why, sizeof(why)), SC_OK);
        assert_int_equal(n, 0);
        const char *bad[] = {
            SC_KS_META_PREFIX " 0+3",                    /* at the committed offset itself */
            SC_KS_META_PREFIX " 5+2 6+1",                /* overlapping runs */
            SC_KS_META_PREFIX " 5+2 3+1",                /* going back */
            SC_KS_META_PREFIX " 2+",                     /* cut short */
            SC_KS_META_PREFIX " 2+0",                    /* an empty run */
            SC_KS_META_PREFIX "2+1",                     /* no separator */
            SC_KS_META_PREFIX " 1+1048577",              /* more offsets than allowed */
            SC_KS_META_PREFIX " 99999999999999999999+1", /* overflow */
            SC_KS_META_PREFIX " 2+1x",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                done = NULL;
                if (sc_ks_meta_decode(bad[i], strlen(bad[i]), 5, &done, &n, why, sizeof(why)) !=
                    SC_ERR_CORRUPT)
                        fail_msg("accepted: %s", bad[i]);
                assert_null(done);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(config_errors),
            cmocka_unit_test(commit_metadata_names_finished_offsets),
            cmocka_unit_test(records_trained_rejected_committed),
            cmocka_unit_test(persist_pauses_and_resumes),
            cmocka_unit_test(align_reads_partitions_in_time_order),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
