/* test_broker.c — the embedded broker: start/stop, topic creation and name
 * rules, "name:partitions" parsing, the bootstrap file, auto-creation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "sc_broker.h"
#include "sc_kafka_util.h"

static void new_checks_broker_count(void **state)
{
        char errstr[256];
        sc_broker_t *broker = NULL;
        assert_int_equal(sc_broker_new(&broker, 0, errstr, sizeof(errstr)), SC_ERR_INVAL);
        assert_non_null(strstr(errstr, "1..16"));
        assert_int_equal(sc_broker_new(&broker, 17, errstr, sizeof(errstr)), SC_ERR_INVAL);
        assert_null(broker);
        sc_broker_destroy(NULL);
}

static int count_char(const char *s, char c)
{
        int n = 0;
        for (; *s; s++)
                n += *s == c;
        return n;
}

static void three_brokers_and_topics(void **state)
{
        char errstr[256];
        sc_broker_t *broker = NULL;
        assert_int_equal(sc_broker_new(&broker, 3, errstr, sizeof(errstr)), SC_OK);
        const char *bs = sc_broker_bootstraps(broker);
        assert_int_equal(count_char(bs, ','), 2);
        assert_int_equal(strncmp(bs, "127.0.0.1:", 10), 0);

        assert_int_equal(sc_broker_topic_create(broker, "a.b_c-1", 6, errstr, sizeof(errstr)),
                         SC_OK);
        assert_int_equal(sc_broker_topic_create(broker, "a.b_c-1", 6, errstr, sizeof(errstr)),
                         SC_ERR_STATE);
        assert_non_null(strstr(errstr, "a.b_c-1"));
        static const char *bad[] = {"", ".", "..", "has space", "slash/x", "ümlaut"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(sc_broker_topic_create(broker, bad[i], 1, errstr, sizeof(errstr)),
                                 SC_ERR_INVAL);
        assert_int_equal(sc_broker_topic_create(broker, "p0", 0, errstr, sizeof(errstr)),
                         SC_ERR_INVAL);

        /* Metadata shows the created topic with its partitions, and a topic a
         * producer asks for is auto-created with SC_BROKER_AUTO_PARTITIONS. */
        char why[256];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        assert_int_equal(
            sc_kafka_conf_set(conf, "bootstrap.servers", bs, "test", errstr, sizeof(errstr)),
            SC_OK);
        sc_kafka_conf_delivery(conf);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof(why));
        assert_non_null(rk);
        assert_int_equal(sc_kafka_produce_sync(rk, "auto.made", RD_KAFKA_PARTITION_UA, NULL, 0, "x",
                                               1, 5000, NULL, NULL, errstr, sizeof(errstr)),
                         SC_OK);
        const struct rd_kafka_metadata *md = NULL;
        assert_int_equal(rd_kafka_metadata(rk, 1, NULL, &md, 5000), RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(md->broker_cnt, 3);
        int seen = 0;
        for (int i = 0; i < md->topic_cnt; i++) {
                if (!strcmp(md->topics[i].topic, "a.b_c-1")) {
                        assert_int_equal(md->topics[i].partition_cnt, 6);
                        seen |= 1;
                }
                if (!strcmp(md->topics[i].topic, "auto.made")) {
                        assert_int_equal(md->topics[i].partition_cnt, SC_BROKER_AUTO_PARTITIONS);
                        seen |= 2;
                }
        }
        assert_int_equal(seen, 3);
        rd_kafka_metadata_destroy(md);
        rd_kafka_destroy(rk);
        sc_broker_destroy(broker);
}

static void topic_parse(void **state)
{
        char errstr[256], name[32];
        int parts = 0;
        assert_int_equal(
            sc_broker_topic_parse("grad:8", name, sizeof(name), &parts, errstr, sizeof(errstr)),
            SC_OK);
        assert_string_equal(name, "grad");
        assert_int_equal(parts, 8);
        assert_int_equal(
            sc_broker_topic_parse("data", name, sizeof(name), &parts, errstr, sizeof(errstr)),
            SC_OK);
        assert_string_equal(name, "data");
        assert_int_equal(parts, SC_BROKER_AUTO_PARTITIONS);
        static const char *bad[] = {"x:0", "x:", "x:3y", ":4", "a b:1", "x:10001", "x:-2"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                assert_int_equal(sc_broker_topic_parse(bad[i], name, sizeof(name), &parts, errstr,
                                                       sizeof(errstr)),
                                 SC_ERR_CONFIG);
                assert_non_null(strstr(errstr, bad[i]));
        }
        /* Too long for the caller's buffer. */
        assert_int_equal(sc_broker_topic_parse("abcdefghijklmnopqrstuvwxyz0123456789:1", name,
                                               sizeof(name), &parts, errstr, sizeof(errstr)),
                         SC_ERR_CONFIG);
}

static void bootstrap_file(void **state)
{
        char errstr[256], path[64], line[256];
        sc_broker_t *broker = NULL;
        assert_int_equal(sc_broker_new(&broker, 1, errstr, sizeof(errstr)), SC_OK);
        snprintf(path, sizeof(path), "/tmp/sc_test_broker.%ld", (long)getpid());
        assert_int_equal(sc_broker_write_bootstrap(broker, path, errstr, sizeof(errstr)), SC_OK);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        assert_non_null(fgets(line, sizeof(line), f));
        fclose(f);
        unlink(path);
        line[strcspn(line, "\n")] = '\0';
        assert_string_equal(line, sc_broker_bootstraps(broker));
        assert_int_equal(
            sc_broker_write_bootstrap(broker, "/nonexistent-dir/x", errstr, sizeof(errstr)),
            SC_ERR_IO);
        assert_non_null(strstr(errstr, "/nonexistent-dir/x"));
        sc_broker_destroy(broker);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(new_checks_broker_count),
            cmocka_unit_test(three_brokers_and_topics),
            cmocka_unit_test(topic_parse),
            cmocka_unit_test(bootstrap_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
