/* test_interceptor.c — the librdkafka interceptor plugin driven through
 * librdkafka's own configuration and client calls (conf_init called the way
 * librdkafka calls it after dlopen): scadles.* properties accepted or
 * rejected by rd_kafka_conf_set, settings kept across rd_kafka_conf_dup,
 * producers left alone, a consumer on the embedded broker whose
 * consumed records are trained, with the final statistics written, and a
 * consumer whose worker cannot start failing with librdkafka's fatal error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "sc_broker.h"

/* The plugin entry point (plugin/interceptor.c). */
rd_kafka_resp_err_t conf_init(rd_kafka_conf_t *conf, void **plug_opaquep, char *errstr,
                              size_t errstr_size);

static const char *const job_json =
    "{\"model\": {\"input\": [1, 2, 2], \"layers\": [{\"type\": \"flatten\"},"
    " {\"type\": \"dense\", \"units\": 2}]},"
    " \"optim\": {\"lr\": 0.1},"
    " \"streams\": {\"format\": \"raw\", \"label\": \"key\", \"scale\": 0.0039},"
    " \"worker\": {\"batch\": \"fixed\", \"b\": 4, \"shuffle\": 0, \"eval\": false,"
    "  \"progress_interval\": 0}}";

typedef struct fixture {
        char dir[64], job[128], summary[128];
} fixture_t;

static int setup(void **state)
{
        fixture_t *f = calloc(1, sizeof(*f));
        snprintf(f->dir, sizeof(f->dir), "/tmp/sc_ic_XXXXXX");
        if (!f || !mkdtemp(f->dir))
                return -1;
        snprintf(f->job, sizeof(f->job), "%s/job.json", f->dir);
        snprintf(f->summary, sizeof(f->summary), "%s/summary.json", f->dir);
        FILE *fp = fopen(f->job, "w");
        if (!fp)
                return -1;
        fputs(job_json, fp);
        fclose(fp);
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        fixture_t *f = *state;
        unlink(f->job);
        unlink(f->summary);
        rmdir(f->dir);
        free(f);
        return 0;
}

static rd_kafka_conf_t *plugin_conf(void)
{
        char err[512];
        void *plug = NULL;
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        assert_int_equal(conf_init(conf, &plug, err, sizeof(err)), RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_non_null(plug);
        return conf;
}

static void properties(void **state)
{
        fixture_t *f = *state;
        char err[512];
        rd_kafka_conf_t *conf = plugin_conf();
        /* Overrides before the file are replayed over it; bad ones are refused. */
        assert_int_equal(rd_kafka_conf_set(conf, "scadles.optim.lr", "0.5", err, sizeof(err)),
                         RD_KAFKA_CONF_OK);
        assert_int_equal(rd_kafka_conf_set(conf, "scadles.config", f->job, err, sizeof(err)),
                         RD_KAFKA_CONF_OK);
        assert_int_equal(rd_kafka_conf_set(conf, "scadles.optim.lr", "fast", err, sizeof(err)),
                         RD_KAFKA_CONF_INVALID);
        assert_non_null(strstr(err, "scadles.optim.lr"));
        assert_int_equal(rd_kafka_conf_set(conf, "scadles.nosuch.key", "1", err, sizeof(err)),
                         RD_KAFKA_CONF_INVALID);
        assert_non_null(strstr(err, "scadles.nosuch.key"));
        assert_int_equal(
            rd_kafka_conf_set(conf, "scadles.config", "/nonexistent.json", err, sizeof(err)),
            RD_KAFKA_CONF_INVALID);
        assert_non_null(strstr(err, "/nonexistent.json"));
        assert_int_equal(rd_kafka_conf_set(conf, "scadles.kafka.plugin.library.paths", "libscadles",
                                           err, sizeof(err)),
                         RD_KAFKA_CONF_INVALID);
        assert_int_equal(rd_kafka_conf_set(conf, "scadles.log.level", "9", err, sizeof(err)),
                         RD_KAFKA_CONF_INVALID);
        /* The interceptor's own properties are the table's "plugin" rows. */
        assert_non_null(strstr(err, "scadles.log.level: \"9\": expected integer in [0, 7]"));
        assert_int_equal(
            rd_kafka_conf_set(conf, "scadles.flush.timeout.ms", "soon", err, sizeof(err)),
            RD_KAFKA_CONF_INVALID);
        assert_non_null(strstr(err, "scadles.flush.timeout.ms: \"soon\": expected integer"));
        char longpath[700];
        memset(longpath, 'a', sizeof(longpath) - 1);
        longpath[sizeof(longpath) - 1] = '\0';
        assert_int_equal(rd_kafka_conf_set(conf, "scadles.stats.file", longpath, err, sizeof(err)),
                         RD_KAFKA_CONF_INVALID);
        assert_non_null(strstr(err, "scadles.stats.file"));
        /* The worker's kafka properties are librdkafka's to accept, at once. */
        assert_int_equal(rd_kafka_conf_set(conf, "scadles.kafka.linger.mss", "5", err, sizeof(err)),
                         RD_KAFKA_CONF_INVALID);
        assert_non_null(strstr(err, "$.kafka.linger.mss: No such configuration property"));
        assert_int_equal(rd_kafka_conf_set(conf, "scadles.kafka.linger.ms", "5", err, sizeof(err)),
                         RD_KAFKA_CONF_OK);
        assert_int_equal(rd_kafka_conf_set(conf, "scadles.log.level", "3", err, sizeof(err)),
                         RD_KAFKA_CONF_OK);
        assert_int_equal(
            rd_kafka_conf_set(conf, "scadles.queue.full.policy", "drop", err, sizeof(err)),
            RD_KAFKA_CONF_OK);
        assert_int_equal(
            rd_kafka_conf_set(conf, "scadles.summary.file", f->summary, err, sizeof(err)),
            RD_KAFKA_CONF_OK);
        /* Other properties are librdkafka's. */
        assert_int_equal(rd_kafka_conf_set(conf, "client.id", "x", err, sizeof(err)),
                         RD_KAFKA_CONF_OK);
        assert_int_equal(rd_kafka_conf_set(conf, "no.such.property", "1", err, sizeof(err)),
                         RD_KAFKA_CONF_UNKNOWN);
        /* A copy carries the plugin's settings and is independent. */
        rd_kafka_conf_t *dup = rd_kafka_conf_dup(conf);
        assert_non_null(dup);
        rd_kafka_conf_destroy(conf);
        assert_int_equal(rd_kafka_conf_set(dup, "scadles.optim.lr", "fast", err, sizeof(err)),
                         RD_KAFKA_CONF_INVALID);
        assert_int_equal(rd_kafka_conf_set(dup, "scadles.optim.momentum", "0.5", err, sizeof(err)),
                         RD_KAFKA_CONF_OK);
        rd_kafka_conf_destroy(dup);
}

static void producer_untouched(void **state)
{
        fixture_t *f = *state;
        char err[512];
        rd_kafka_conf_t *conf = plugin_conf();
        assert_int_equal(rd_kafka_conf_set(conf, "scadles.config", f->job, err, sizeof(err)),
                         RD_KAFKA_CONF_OK);
        assert_int_equal(
            rd_kafka_conf_set(conf, "scadles.summary.file", f->summary, err, sizeof(err)),
            RD_KAFKA_CONF_OK);
        assert_int_equal(
            rd_kafka_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", err, sizeof(err)),
            RD_KAFKA_CONF_OK);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
        assert_non_null(rk);
        rd_kafka_destroy(rk);
        assert_int_equal(access(f->summary, F_OK), -1); /* no worker, no summary */
}

static void consumer_trains(void **state)
{
        fixture_t *f = *state;
        char err[512];
        sc_broker_t *broker = NULL;
        assert_int_equal(sc_broker_new(&broker, 1, err, sizeof(err)), 0);
        const char *bs = sc_broker_bootstraps(broker);
        assert_int_equal(sc_broker_topic_create(broker, "ic", 2, err, sizeof(err)), 0);

        rd_kafka_conf_t *pc = rd_kafka_conf_new();
        assert_int_equal(rd_kafka_conf_set(pc, "bootstrap.servers", bs, err, sizeof(err)),
                         RD_KAFKA_CONF_OK);
        rd_kafka_t *prod = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof(err));
        assert_non_null(prod);
        for (int i = 0; i < 400; i++) {
                unsigned char px[4] = {0};
                char key = (char)('0' + (i & 1));
                px[i & 1] = px[2 + (i & 1)] = 250;
                size_t len = i == 7 ? 3 : 4; /* one malformed record */
                assert_int_equal(
                    rd_kafka_producev(prod, RD_KAFKA_V_TOPIC("ic"), RD_KAFKA_V_PARTITION(i % 2),
                                      RD_KAFKA_V_KEY(&key, 1), RD_KAFKA_V_VALUE(px, len),
                                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                    RD_KAFKA_RESP_ERR_NO_ERROR);
        }
        assert_int_equal(rd_kafka_flush(prod, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_destroy(prod);

        rd_kafka_conf_t *conf = plugin_conf();
        const char *props[][2] = {
            {"bootstrap.servers", bs},         {"group.id", "ic"},
            {"auto.offset.reset", "earliest"}, {"enable.partition.eof", "true"},
            {"scadles.config", f->job},        {"scadles.summary.file", f->summary},
            {"scadles.queue.block.ms", "-1"},  {"scadles.log.level", "3"},
        };
        for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
                assert_int_equal(
                    rd_kafka_conf_set(conf, props[i][0], props[i][1], err, sizeof(err)),
                    RD_KAFKA_CONF_OK);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
        assert_non_null(rk);
        rd_kafka_poll_set_consumer(rk);
        rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(sub, "ic", RD_KAFKA_PARTITION_UA);
        assert_int_equal(rd_kafka_subscribe(rk, sub), RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(sub);
        int got = 0, eofs = 0;
        for (int i = 0; i < 3000 && (got < 400 || eofs < 2); i++) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
                if (!m)
                        continue;
                if (!m->err)
                        got++;
                else if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
                        eofs++;
                rd_kafka_message_destroy(m);
        }
        assert_int_equal(got, 400);
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk); /* the plugin trains what is left and writes its summary */
        sc_broker_destroy(broker);

        json_error_t je;
        json_t *s = json_load_file(f->summary, 0, &je);
        assert_non_null(s);
        json_t *q = json_object_get(s, "queue");
        assert_int_equal(json_integer_value(json_object_get(q, "pushed")), 400);
        assert_int_equal(json_integer_value(json_object_get(q, "dropped")), 0);
        assert_int_equal(json_integer_value(json_object_get(s, "consumed")), 400);
        assert_int_equal(json_integer_value(json_object_get(s, "rejected")), 1);
        assert_true(json_integer_value(json_object_get(s, "trained")) >= 399 - 4);
        assert_true(json_is_true(json_object_get(s, "final")));
        json_decref(s);
}

static void record_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
        if (err == RD_KAFKA_RESP_ERR__FATAL)
                *(int *)opaque = 1;
}

/* A consumer whose embedded worker cannot start is not a consumer that
 * silently does not train: it carries librdkafka's fatal error, naming why,
 * which the host sees from its error callback (or, for a high-level
 * consumer, its consumer poll). A legacy consumer here: librdkafka 2.0.2's
 * rd_kafka_destroy() of a group consumer in the fatal state does not return
 * (docs/PLUGIN.md). */
static void failed_worker_fails_the_consumer(void **state)
{
        fixture_t *f = *state;
        char err[512], fatal[512] = "";
        for (int variant = 0; variant < 2; variant++) {
                int fatal_seen = 0;
                rd_kafka_conf_t *conf = plugin_conf();
                assert_int_equal(
                    rd_kafka_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", err, sizeof(err)),
                    RD_KAFKA_CONF_OK);
                if (variant == 0) {
                        assert_int_equal(
                            rd_kafka_conf_set(conf, "scadles.config", f->job, err, sizeof(err)),
                            RD_KAFKA_CONF_OK);
                        assert_int_equal(rd_kafka_conf_set(conf, "scadles.stats.file",
                                                           "/nonexistent-dir/stats.jsonl", err,
                                                           sizeof(err)),
                                         RD_KAFKA_CONF_OK);
                } /* variant 1: no training configuration at all */
                rd_kafka_conf_set_error_cb(conf, record_error);
                rd_kafka_conf_set_opaque(conf, &fatal_seen);
                rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
                assert_non_null(rk);
                for (int i = 0; i < 100 && !fatal_seen; i++)
                        rd_kafka_poll(rk, 100);
                assert_true(fatal_seen);
                assert_int_equal(rd_kafka_fatal_error(rk, fatal, sizeof(fatal)),
                                 RD_KAFKA_RESP_ERR__APPLICATION);
                const char *want = variant == 0
                                       ? "scadles: scadles.stats.file /nonexistent-dir/stats.jsonl"
                                       : "scadles: no scadles.config";
                if (!strstr(fatal, want))
                        fail_msg("fatal error '%s' lacks '%s'", fatal, want);
                rd_kafka_destroy(rk);
        }
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(properties, setup, teardown),
            cmocka_unit_test_setup_teardown(producer_untouched, setup, teardown),
            cmocka_unit_test_setup_teardown(consumer_trains, setup, teardown),
            cmocka_unit_test_setup_teardown(failed_worker_fails_the_consumer, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
