/* test_kafka_admin.c — a job's topic specs, and creating / checking them on
 * the embedded broker: idempotent when they exist, a configuration error
 * naming both counts when a partition count is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "sc_broker.h"
#include "sc_kafka_admin.h"

static void job_topic_specs(void **state)
{
        sc_kafka_topic_spec_t t[SC_JOB__NTOPICS];
        char errstr[256], name[300];
        assert_int_equal(sc_kafka_admin_job_topics("j1", 6, 1, t, errstr, sizeof(errstr)), SC_OK);
        assert_string_equal(t[SC_JOB_GRAD].name, "j1.grad");
        assert_string_equal(t[SC_JOB_MODEL].name, "j1.model");
        assert_string_equal(t[SC_JOB_INJECT].name, "j1.inject");
        assert_string_equal(t[SC_JOB_CTL].name, "j1.ctl");
        assert_string_equal(t[SC_JOB_BCAST].name, "j1.bcast");
        assert_int_equal(t[SC_JOB_BCAST].partitions, 6);
        assert_true(t[SC_JOB_BCAST].exact && !t[SC_JOB_BCAST].compact);
        assert_int_equal(t[SC_JOB_GRAD].partitions, 6);
        assert_int_equal(t[SC_JOB_MODEL].partitions, 6);
        assert_true(t[SC_JOB_GRAD].exact && t[SC_JOB_MODEL].exact);
        assert_true(!t[SC_JOB_INJECT].exact && !t[SC_JOB_CTL].exact);
        assert_true(t[SC_JOB_MODEL].compact && !t[SC_JOB_GRAD].compact);
        assert_true(t[SC_JOB_CTL].retention_ms > 0);
        assert_int_equal(sc_kafka_admin_job_topics("j1", 0, 1, t, errstr, sizeof(errstr)),
                         SC_ERR_INVAL);
        /* -1: the broker's default replication factor; 0 and below -1 are errors. */
        assert_int_equal(sc_kafka_admin_job_topics("j1", 2, -1, t, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(t[SC_JOB_GRAD].replication, -1);
        assert_int_equal(sc_kafka_admin_job_topics("j1", 2, 0, t, errstr, sizeof(errstr)),
                         SC_ERR_INVAL);
        assert_non_null(strstr(errstr, "replication (0)"));
        assert_int_equal(sc_kafka_admin_job_topics("j1", 2, -2, t, errstr, sizeof(errstr)),
                         SC_ERR_INVAL);
        memset(name, 'a', 245);
        name[245] = '\0';
        assert_int_equal(sc_kafka_admin_job_topics(name, 1, 1, t, errstr, sizeof(errstr)),
                         SC_ERR_INVAL);
}

static rd_kafka_t *producer(const sc_broker_t *broker)
{
        char errstr[256];
        rd_kafka_conf_t *kc = rd_kafka_conf_new();
        rd_kafka_conf_set(kc, "bootstrap.servers", sc_broker_bootstraps(broker), NULL, 0);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, errstr, sizeof(errstr));
        assert_non_null(rk);
        return rk;
}

static void ensure_creates_and_checks(void **state)
{
        sc_kafka_topic_spec_t t[SC_JOB__NTOPICS];
        sc_broker_t *broker = NULL;
        char errstr[512];
        int parts = -1, created = -1;

        assert_int_equal(sc_broker_new(&broker, 1, errstr, sizeof(errstr)), SC_OK);
        rd_kafka_t *rk = producer(broker);

        /* 4 shards: the embedded broker's auto-created topics fit */
        assert_int_equal(
            sc_kafka_admin_job_topics("a", SC_BROKER_AUTO_PARTITIONS, 1, t, errstr, sizeof(errstr)),
            SC_OK);
        assert_int_equal(
            sc_kafka_admin_partitions(rk, "a.grad", 5000, &parts, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(parts, 0);
        assert_int_equal(
            sc_kafka_admin_ensure(rk, t, SC_JOB__NTOPICS, 5000, &created, errstr, sizeof(errstr)),
            SC_OK);
        assert_int_equal(created, 0); /* auto-created, not through CreateTopics */
        for (int i = 0; i < SC_JOB__NTOPICS; i++) {
                assert_int_equal(
                    sc_kafka_admin_partitions(rk, t[i].name, 5000, &parts, errstr, sizeof(errstr)),
                    SC_OK);
                assert_int_equal(parts, SC_BROKER_AUTO_PARTITIONS);
        }
        /* again: idempotent */
        assert_int_equal(
            sc_kafka_admin_ensure(rk, t, SC_JOB__NTOPICS, 5000, NULL, errstr, sizeof(errstr)),
            SC_OK);

        /* 2 shards: a pre-created J.grad:2 is accepted, an auto-created
         * J.model with 4 partitions is an error naming both counts */
        assert_int_equal(sc_broker_topic_create(broker, "b.grad", 2, errstr, sizeof(errstr)),
                         SC_OK);
        assert_int_equal(sc_kafka_admin_job_topics("b", 2, 1, t, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(
            sc_kafka_admin_ensure(rk, t, SC_JOB__NTOPICS, 5000, NULL, errstr, sizeof(errstr)),
            SC_ERR_CONFIG);
        if (!strstr(errstr, "b.model has 4 partitions, the job needs 2"))
                fail_msg("unexpected message: %s", errstr);
        /* with J.grad and J.model pre-created, J.bcast is still auto-created */
        assert_int_equal(sc_broker_topic_create(broker, "c.grad", 2, errstr, sizeof(errstr)),
                         SC_OK);
        assert_int_equal(sc_broker_topic_create(broker, "c.model", 2, errstr, sizeof(errstr)),
                         SC_OK);
        assert_int_equal(sc_kafka_admin_job_topics("c", 2, 1, t, errstr, sizeof(errstr)), SC_OK);
        assert_int_equal(
            sc_kafka_admin_ensure(rk, t, SC_JOB__NTOPICS, 5000, NULL, errstr, sizeof(errstr)),
            SC_ERR_CONFIG); /* c.bcast auto-created with 4 */
        if (!strstr(errstr, "c.bcast has 4 partitions, the job needs 2"))
                fail_msg("unexpected message: %s", errstr);
        /* with J.grad, J.model and J.bcast pre-created it passes */
        assert_int_equal(sc_kafka_admin_job_topics("d", 2, 1, t, errstr, sizeof(errstr)), SC_OK);
        for (int i = 0; i < SC_JOB__NTOPICS; i++)
                if (t[i].exact)
                        assert_int_equal(
                            sc_broker_topic_create(broker, t[i].name, 2, errstr, sizeof(errstr)),
                            SC_OK);
        assert_int_equal(
            sc_kafka_admin_ensure(rk, t, SC_JOB__NTOPICS, 5000, NULL, errstr, sizeof(errstr)),
            SC_OK);

        rd_kafka_destroy(rk);
        sc_broker_destroy(broker);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(job_topic_specs),
            cmocka_unit_test(ensure_creates_and_checks),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
