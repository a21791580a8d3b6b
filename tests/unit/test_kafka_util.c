/* test_kafka_util.c — JSON configuration errors, the log bridge, delivery
 * tracking and offset-gap accounting, against the embedded broker; includes
 * the embedded broker's retention loss being counted, not silent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_broker.h"
#include "sc_kafka_util.h"

static void conf_get(rd_kafka_conf_t *conf, const char *name, char *out, size_t size)
{
        size_t n = size;
        assert_int_equal(rd_kafka_conf_get(conf, name, out, &n), RD_KAFKA_CONF_OK);
}

static void conf_from_json_sets_scalars(void **state)
{
        char errstr[256], v[64];
        json_t *obj = json_loads("{\"linger.ms\": 7, \"enable.idempotence\": true,"
                                 " \"client.id\": \"feed-1\", \"batch.num.messages\": 2000.0,"
                                 " \"enable.auto.commit\": false}",
                                 0, NULL);
        assert_non_null(obj);
        rd_kafka_conf_t *conf = NULL;
        assert_int_equal(sc_kafka_conf_from_json(&conf, obj, "$.kafka", errstr, sizeof(errstr)),
                         SC_OK);
        conf_get(conf, "linger.ms", v, sizeof(v));
        assert_string_equal(v, "7");
        conf_get(conf, "enable.idempotence", v, sizeof(v));
        assert_string_equal(v, "true");
        conf_get(conf, "client.id", v, sizeof(v));
        assert_string_equal(v, "feed-1");
        conf_get(conf, "batch.num.messages", v, sizeof(v));
        assert_string_equal(v, "2000");
        conf_get(conf, "enable.auto.commit", v, sizeof(v));
        assert_string_equal(v, "false");
        rd_kafka_conf_destroy(conf);
        json_decref(obj);
        /* NULL object: nothing to apply. */
        conf = rd_kafka_conf_new();
        assert_int_equal(sc_kafka_conf_apply_json(conf, NULL, "$.kafka", errstr, sizeof(errstr)),
                         SC_OK);
        rd_kafka_conf_destroy(conf);
}

static void conf_from_json_errors_name_the_key(void **state)
{
        static const struct {
                const char *json, *path, *needle;
        } cases[] = {
            {"{\"linger.ms\": \"soon\"}", "$.kafka", "$.kafka.linger.ms"},
            {"{\"no.such.property\": 1}", "$.kafka", "$.kafka.no.such.property"},
            {"{\"linger.ms\": [1]}", "$.kafka", "$.kafka.linger.ms: expected a string"},
            {"{\"acks\": null}", "$.kafka", "got null"},
            {"{\"a\": {\"b\": 1}}", "$.job.kafka", "$.job.kafka.a"},
            {"[1, 2]", "$.kafka", "$.kafka: expected an object"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char errstr[256] = "";
                json_t *obj = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
                assert_non_null(obj);
                rd_kafka_conf_t *conf = (rd_kafka_conf_t *)0x1;
                assert_int_equal(
                    sc_kafka_conf_from_json(&conf, obj, cases[i].path, errstr, sizeof(errstr)),
                    SC_ERR_CONFIG);
                assert_ptr_equal(conf, (rd_kafka_conf_t *)0x1); /* untouched on error */
                if (!strstr(errstr, cases[i].needle))
                        fail_msg("case %zu: '%s' lacks '%s'", i, errstr, cases[i].needle);
                json_decref(obj);
        }
}

/* The check `config --check` runs: the same verdicts as applying, no conf left. */
static void conf_check_matches_apply(void **state)
{
        char errstr[256] = "";
        json_t *good = json_loads("{\"bootstrap.servers\": \"h:1\", \"linger.ms\": 5, "
                                  "\"security.protocol\": \"sasl_ssl\"}",
                                  0, NULL);
        json_t *bad =
            json_loads("{\"bootstrap.servers\": \"h:1\", \"sasl.pasword\": \"x\"}", 0, NULL);
        assert_non_null(good);
        assert_non_null(bad);
        assert_int_equal(sc_kafka_conf_check(good, "$.kafka", errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_kafka_conf_check(NULL, "$.kafka", errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_kafka_conf_check(bad, "$.kafka", errstr, sizeof(errstr)),
                         SC_ERR_CONFIG);
        assert_non_null(strstr(errstr, "$.kafka.sasl.pasword: No such configuration property"));
        json_decref(good);
        json_decref(bad);
}

/* Each client type takes from $.kafka only what it reads, after the latency
 * defaults; $.kafka_consumer / $.kafka_producer win; errors name the key. */
static void client_conf_per_type(void **state)
{
        sc_conf_t conf;
        char err[256], v[64];
        rd_kafka_conf_t *cc = NULL, *pc = NULL;
        (void)state;
        assert_int_equal(sc_kafka_conf_applies("fetch.wait.max.ms", RD_KAFKA_CONSUMER), 1);
        assert_int_equal(sc_kafka_conf_applies("fetch.wait.max.ms", RD_KAFKA_PRODUCER), 0);
        assert_int_equal(sc_kafka_conf_applies("linger.ms", RD_KAFKA_CONSUMER), 0);
        assert_int_equal(sc_kafka_conf_applies("bootstrap.servers", RD_KAFKA_PRODUCER), 1);
        assert_int_equal(sc_conf_parse(&conf,
                                       "{\"kafka\": {\"fetch.wait.max.ms\": 7, \"linger.ms\": 3, "
                                       "\"client.id\": \"k\"}, \"kafka_consumer\": "
                                       "{\"fetch.wait.max.ms\": 9}}",
                                       "t", err, sizeof(err)),
                         SC_OK);
        const char *const def[] = {"client.id", "d", "socket.timeout.ms", "1234", NULL};
        assert_int_equal(sc_kafka_client_conf(&cc, &conf, RD_KAFKA_CONSUMER, def, err, sizeof(err)),
                         SC_OK);
        assert_int_equal(
            sc_kafka_client_conf(&pc, &conf, RD_KAFKA_PRODUCER, NULL, err, sizeof(err)), SC_OK);
        conf_get(cc, "fetch.wait.max.ms", v, sizeof(v));
        assert_string_equal(v, "9"); /* kafka_consumer wins over kafka */
        conf_get(cc, "client.id", v, sizeof(v));
        assert_string_equal(v, "k"); /* kafka wins over the caller's default */
        conf_get(cc, "socket.timeout.ms", v, sizeof(v));
        assert_string_equal(v, "1234");
        conf_get(pc, "linger.ms", v, sizeof(v));
        assert_string_equal(v, "3");
        rd_kafka_conf_destroy(cc);
        rd_kafka_conf_destroy(pc);
        /* without kafka.*: the latency defaults */
        sc_conf_free(&conf);
        assert_int_equal(sc_conf_parse(&conf, "{\"kafka_producer\": {\"linger.ms\": {}}}", "t", err,
                                       sizeof(err)),
                         SC_ERR_CONFIG);
        assert_non_null(strstr(err, "$.kafka_producer.linger.ms"));
        assert_int_equal(sc_conf_parse(&conf, "{}", "t", err, sizeof(err)), SC_OK);
        assert_int_equal(
            sc_kafka_client_conf(&cc, &conf, RD_KAFKA_CONSUMER, NULL, err, sizeof(err)), SC_OK);
        assert_int_equal(
            sc_kafka_client_conf(&pc, &conf, RD_KAFKA_PRODUCER, NULL, err, sizeof(err)), SC_OK);
        conf_get(cc, "fetch.wait.max.ms", v, sizeof(v));
        assert_string_equal(v, "10");
        conf_get(pc, "linger.ms", v, sizeof(v));
        assert_string_equal(v, "0");
        rd_kafka_conf_destroy(cc);
        rd_kafka_conf_destroy(pc);
        sc_conf_free(&conf);
}

static void conf_set_kv(void **state)
{
        char errstr[256], v[32];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        assert_int_equal(sc_kafka_conf_set_kv(conf, "linger.ms=9", errstr, sizeof(errstr)), SC_OK);
        conf_get(conf, "linger.ms", v, sizeof(v));
        assert_string_equal(v, "9");
        assert_int_equal(sc_kafka_conf_set_kv(conf, "linger.ms", errstr, sizeof(errstr)),
                         SC_ERR_CONFIG);
        assert_non_null(strstr(errstr, "name=value"));
        assert_int_equal(sc_kafka_conf_set_kv(conf, "=3", errstr, sizeof(errstr)), SC_ERR_CONFIG);
        assert_int_equal(sc_kafka_conf_set_kv(conf, "linger.ms=x", errstr, sizeof(errstr)),
                         SC_ERR_CONFIG);
        assert_non_null(strstr(errstr, "-X linger.ms"));
        rd_kafka_conf_destroy(conf);
}

static int log_lines, log_confwarn;

static void count_log(void *opaque, int level, const char *fac, const char *name, const char *msg)
{
        (void)opaque;
        (void)name;
        (void)msg;
        log_lines++;
        if (!strcmp(fac, "CONFWARN") && level == 5)
                log_confwarn++;
}

static void log_bridge_forwards(void **state)
{
        char why[256];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        sc_kafka_log_set_sink(count_log, NULL);
        sc_kafka_conf_log_bridge(conf);
        /* No bootstrap.servers: librdkafka warns at level 5 (notice). */
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof(why));
        assert_non_null(rk);
        rd_kafka_destroy(rk);
        sc_kafka_log_set_sink(NULL, NULL);
        assert_true(log_lines >= 1);
        assert_int_equal(log_confwarn, 1);
}

/* The rebalance protocol is "NONE" before a group is joined and unknown
 * (NULL) without a group, as for a member the group forgot, whose close
 * revokes: neither is cooperative, and neither crashes. */
static void cooperative_without_protocol(void **state)
{
        (void)state;
        char why[256];
        for (int grouped = 0; grouped < 2; grouped++) {
                rd_kafka_conf_t *conf = rd_kafka_conf_new();
                if (grouped)
                        assert_int_equal(rd_kafka_conf_set(conf, "group.id", "g", why, sizeof(why)),
                                         RD_KAFKA_CONF_OK);
                rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof(why));
                assert_non_null(rk);
                const char *proto = rd_kafka_rebalance_protocol(rk);
                if (grouped)
                        assert_string_equal(proto, "NONE");
                else
                        assert_null(proto);
                assert_int_equal(sc_kafka_cooperative(rk), 0);
                rd_kafka_destroy(rk);
        }
}

static void gap_observe_counts_skips(void **state)
{
        sc_kafka_gap_t gp;
        sc_kafka_gap_init(&gp, 0);
        for (int64_t o = 0; o < 3; o++)
                assert_int_equal(sc_kafka_gap_observe(&gp, o), 0);
        assert_int_equal(sc_kafka_gap_observe(&gp, 5), 2);
        assert_int_equal(gp.gp_lost, 2);
        assert_int_equal(gp.gp_events, 1);
        assert_int_equal(gp.gp_next, 6);
        /* A re-delivery after a seek back is not a loss. */
        assert_int_equal(sc_kafka_gap_observe(&gp, 3), 0);
        assert_int_equal(gp.gp_next, 4);
        assert_int_equal(sc_kafka_gap_observe(&gp, 4), 0);
        assert_int_equal(gp.gp_lost, 2);
        /* Unknown start: the first offset is accepted as is. */
        sc_kafka_gap_init(&gp, -1);
        assert_int_equal(sc_kafka_gap_observe(&gp, 1000), 0);
        assert_int_equal(sc_kafka_gap_observe(&gp, 1002), 1);
}

static rd_kafka_t *producer(const char *bootstrap)
{
        char errstr[256];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        assert_int_equal(
            sc_kafka_conf_set(conf, "bootstrap.servers", bootstrap, "test", errstr, sizeof(errstr)),
            SC_OK);
        assert_int_equal(
            sc_kafka_conf_set_kv(conf, "enable.idempotence=true", errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_kafka_conf_set_kv(conf, "linger.ms=2", errstr, sizeof(errstr)), SC_OK);
        /* Batches of at most 64 KiB: the embedded broker drops whole
         * batches from a partition's head to keep about 5 MiB, so with the
         * default 1 MB batches (a loaded machine fills them) it could keep
         * under 4 MiB. */
        assert_int_equal(sc_kafka_conf_set_kv(conf, "batch.size=65536", errstr, sizeof(errstr)),
                         SC_OK);
        sc_kafka_conf_delivery(conf);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        assert_non_null(rk);
        return rk;
}

static rd_kafka_t *consumer(const char *bootstrap, const char *reset)
{
        char errstr[256];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        const char *kv[][2] = {
            {"bootstrap.servers", bootstrap}, {"group.id", "test-kafka-util"},
            {"auto.offset.reset", reset},     {"enable.auto.commit", "false"},
            {"fetch.wait.max.ms", "10"},      {"enable.partition.eof", "true"},
        };
        for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
                assert_int_equal(
                    sc_kafka_conf_set(conf, kv[i][0], kv[i][1], kv[i][0], errstr, sizeof(errstr)),
                    SC_OK);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
        assert_non_null(rk);
        rd_kafka_poll_set_consumer(rk);
        return rk;
}

static void assign_at(rd_kafka_t *rk, const char *topic, int64_t offset)
{
        rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(tp, topic, 0)->offset = offset;
        assert_int_equal(rd_kafka_assign(rk, tp), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(tp);
}

static void produce_sync_and_probe(void **state)
{
        char errstr[256];
        sc_broker_t *broker = NULL;
        assert_int_equal(sc_broker_new(&broker, 1, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_broker_topic_create(broker, "sync", 1, errstr, sizeof(errstr)), SC_OK);
        rd_kafka_t *rk = producer(sc_broker_bootstraps(broker));
        for (int64_t i = 0; i < 3; i++) {
                int32_t part = -1;
                int64_t off = -1;
                assert_int_equal(sc_kafka_produce_sync(rk, "sync", RD_KAFKA_PARTITION_UA, "k", 1,
                                                       "value", 5, 5000, &part, &off, errstr,
                                                       sizeof(errstr)),
                                 SC_OK);
                assert_int_equal(part, 0);
                assert_int_equal(off, i);
        }
        int brokers = 0, topics = 0;
        assert_int_equal(sc_kafka_probe(sc_broker_bootstraps(broker), 5000, &brokers, &topics,
                                        errstr, sizeof(errstr)),
                         SC_OK);
        assert_int_equal(brokers, 1);
        assert_true(topics >= 1);
        rd_kafka_destroy(rk);
        sc_broker_destroy(broker);
        /* Nothing listens any more. */
        assert_int_equal(sc_kafka_probe("127.0.0.1:1", 300, NULL, NULL, errstr, sizeof(errstr)),
                         SC_ERR_IO);
        assert_non_null(strstr(errstr, "127.0.0.1:1"));
}

/* Produces n records of size bytes to topic; returns when all are delivered. */
static void produce_many(rd_kafka_t *rk, const char *topic, int n, size_t size)
{
        char errstr[256];
        char *buf = calloc(1, size);
        sc_kafka_delivery_t dv;
        sc_kafka_delivery_init(&dv);
        assert_non_null(buf);
        for (int i = 0; i < n; i++) {
                snprintf(buf, size, "%d", i);
                assert_int_equal(sc_kafka_produce(rk, topic, 0, NULL, 0, buf, size, "h", "v", 1, 0,
                                                  &dv, 5000, errstr, sizeof(errstr)),
                                 SC_OK);
                rd_kafka_poll(rk, 0);
        }
        assert_int_equal(sc_kafka_delivery_wait(rk, &dv, 20000, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(dv.dv_delivered, n);
        assert_int_equal(dv.dv_failed, 0);
        assert_int_equal(dv.dv_last_offset, n - 1);
        free(buf);
}

/* Reads topic partition 0 until EOF through gp; returns records read. */
static int64_t drain(rd_kafka_t *rk, sc_kafka_gap_t *gp, int *out_of_range)
{
        int64_t n = 0;
        for (int idle = 0; idle < 200;) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 50);
                if (!m) {
                        idle++;
                        continue;
                }
                if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                        rd_kafka_message_destroy(m);
                        break;
                }
                if (m->err) {
                        if (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ||
                            m->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) {
                                *out_of_range = 1;
                                rd_kafka_message_destroy(m);
                                break;
                        }
                        fail_msg("consume: %s", rd_kafka_message_errstr(m));
                }
                sc_kafka_gap_observe(gp, m->offset);
                n++;
                rd_kafka_message_destroy(m);
        }
        return n;
}

static void retention_loss_is_counted(void **state)
{
        char errstr[256];
        const int n = 8000;
        sc_broker_t *broker = NULL;
        assert_int_equal(sc_broker_new(&broker, 1, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(sc_broker_topic_create(broker, "ret", 1, errstr, sizeof(errstr)), SC_OK);
        const char *bs = sc_broker_bootstraps(broker);
        rd_kafka_t *prk = producer(bs);
        produce_many(prk, "ret", n, 1000); /* ~8 MB into one partition */

        int64_t low = -1, high = -1;
        assert_int_equal(rd_kafka_query_watermark_offsets(prk, "ret", 0, &low, &high, 5000),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(high, n);
        /* The embedded broker keeps about 5 MiB per partition. */
        assert_true(low > 0);
        assert_true((high - low) * 1000 > 4 * 1024 * 1024);
        assert_true((high - low) * 1000 < 6 * 1024 * 1024);
        print_message("embedded broker retained %" PRId64 " of %d 1000-byte records (%.2f MB)\n",
                      high - low, n, (double)(high - low) * 1000 / 1e6);

        /* The same end offsets as a fetch learns them. */
        sc_conf_t rconf;
        char rjson[256];
        snprintf(rjson, sizeof(rjson), "{\"kafka\": {\"bootstrap.servers\": \"%s\"}}", bs);
        assert_int_equal(sc_conf_parse(&rconf, rjson, "t", errstr, sizeof(errstr)), SC_OK);
        rd_kafka_t *rrk = NULL;
        assert_int_equal(sc_kafka_reader_new(&rrk, &rconf, "end-reader", errstr, sizeof(errstr)),
                         SC_OK);
        int64_t elo = -1, ehi = -1;
        assert_int_equal(
            sc_kafka_end_offsets(rrk, "ret", 0, 5000, &elo, &ehi, errstr, sizeof(errstr)), SC_OK);
        print_message("end offsets by fetch: [%" PRId64 ", %" PRId64 ")\n", elo, ehi);
        assert_int_equal(ehi, n);
        assert_int_equal(elo, low);
        /* A partition that does not exist: an error naming it, in bounded time. */
        assert_int_equal(
            sc_kafka_end_offsets(rrk, "ret", 7, 1000, &elo, &ehi, errstr, sizeof(errstr)),
            SC_ERR_IO);
        assert_non_null(strstr(errstr, "ret [7]"));
        rd_kafka_destroy(rrk);
        sc_conf_free(&rconf);

        /* auto.offset.reset=error: the consumer is told, resyncs, counts. */
        rd_kafka_t *crk = consumer(bs, "error");
        sc_kafka_gap_t gp;
        sc_kafka_gap_init(&gp, 0);
        assign_at(crk, "ret", 0);
        int oor = 0;
        assert_int_equal(drain(crk, &gp, &oor), 0);
        assert_true(oor);
        int64_t lost = -1;
        assert_int_equal(
            sc_kafka_gap_resync(crk, "ret", 0, &gp, 5000, &lost, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(lost, low);
        assign_at(crk, "ret", gp.gp_next);
        oor = 0;
        int64_t read = drain(crk, &gp, &oor);
        assert_false(oor);
        assert_int_equal(read + gp.gp_lost, n);
        assert_int_equal(gp.gp_events, 1);
        rd_kafka_destroy(crk);

        /* auto.offset.reset=earliest jumps silently; the first offset shows it. */
        crk = consumer(bs, "earliest");
        sc_kafka_gap_init(&gp, 0);
        assign_at(crk, "ret", 0);
        read = drain(crk, &gp, &oor);
        assert_int_equal(gp.gp_lost, low);
        assert_int_equal(read + gp.gp_lost, n);
        rd_kafka_destroy(crk);

        rd_kafka_destroy(prk);
        sc_broker_destroy(broker);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(conf_from_json_sets_scalars),
            cmocka_unit_test(conf_from_json_errors_name_the_key),
            cmocka_unit_test(conf_check_matches_apply),
            cmocka_unit_test(conf_set_kv),
            cmocka_unit_test(client_conf_per_type),
            cmocka_unit_test(log_bridge_forwards),
            cmocka_unit_test(cooperative_without_protocol),
            cmocka_unit_test(gap_observe_counts_skips),
            cmocka_unit_test(produce_sync_and_probe),
            cmocka_unit_test(retention_loss_is_counted),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
