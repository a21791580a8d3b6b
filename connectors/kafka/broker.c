/* broker.c — the embedded Kafka broker: wraps librdkafka's mock cluster. */
#include "sc_broker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

struct sc_broker {
        rd_kafka_t *br_rk; /* owns the cluster's bookkeeping; serves no client */
        rd_kafka_mock_cluster_t *br_cluster;
        int br_brokers;
};

sc_err_t sc_broker_new(sc_broker_t **brokerp, int n_brokers, char *errstr, size_t errstr_size)
{
        char why[512];
        if (n_brokers < 1 || n_brokers > 16)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "brokers: %d is outside 1..16",
                               n_brokers);
        sc_broker_t *broker = calloc(1, sizeof(*broker));
        if (!broker)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        if (!conf)
                goto out_nomem;
        if (rd_kafka_conf_set(conf, "log_level", "4", why, sizeof(why)) != RD_KAFKA_CONF_OK) {
                rd_kafka_conf_destroy(conf);
                sc_errf(SC_ERR_IO, errstr, errstr_size, "embedded broker: %s", why);
                goto out_free;
        }
        broker->br_rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof(why));
        if (!broker->br_rk) {
                rd_kafka_conf_destroy(conf);
                sc_errf(SC_ERR_IO, errstr, errstr_size, "embedded broker: %s", why);
                goto out_free;
        }
        broker->br_cluster = rd_kafka_mock_cluster_new(broker->br_rk, n_brokers);
        if (!broker->br_cluster) {
                sc_errf(SC_ERR_IO, errstr, errstr_size,
                        "embedded broker: could not start %d mock broker(s) (no free port?)",
                        n_brokers);
                goto out_rk;
        }
        broker->br_brokers = n_brokers;
        *brokerp = broker;
        return SC_OK;

out_rk:
        rd_kafka_destroy(broker->br_rk);
out_free:
        free(broker);
        return SC_ERR_IO;
out_nomem:
        free(broker);
        return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
}

void sc_broker_destroy(sc_broker_t *broker)
{
        if (!broker)
                return;
        if (broker->br_cluster)
                rd_kafka_mock_cluster_destroy(broker->br_cluster);
        if (broker->br_rk)
                rd_kafka_destroy(broker->br_rk);
        free(broker);
}

const char *sc_broker_bootstraps(const sc_broker_t *broker)
{
        return rd_kafka_mock_cluster_bootstraps(broker->br_cluster);
}

/* Kafka's rule for topic names: 1..249 of [a-zA-Z0-9._-], not "." or "..". */
static int sc_broker_topic_name_ok(const char *name, size_t len)
{
        if (len == 0 || len > 249)
                return 0;
        if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
                return 0;
        for (size_t i = 0; i < len; i++) {
                char c = name[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-'))
                        return 0;
        }
        return 1;
}

sc_err_t sc_broker_topic_create(sc_broker_t *broker, const char *topic, int partitions,
                                char *errstr, size_t errstr_size)
{
        if (!topic || !sc_broker_topic_name_ok(topic, strlen(topic)))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "topic '%s': names are 1..249 characters of [a-zA-Z0-9._-]",
                               topic ? topic : "(null)");
        if (partitions < 1 || partitions > 10000)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "topic '%s': %d partitions is outside 1..10000", topic, partitions);
        int rf = broker->br_brokers < 3 ? broker->br_brokers : 3;
        rd_kafka_resp_err_t kerr =
            rd_kafka_mock_topic_create(broker->br_cluster, topic, partitions, rf);
        if (kerr)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size, "topic '%s': %s", topic,
                               rd_kafka_err2str(kerr));
        return SC_OK;
}

sc_err_t sc_broker_topic_parse(const char *spec, char *name, size_t name_size, int *partitionsp,
                               char *errstr, size_t errstr_size)
{
        const char *colon = strchr(spec, ':');
        size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
        int partitions = SC_BROKER_AUTO_PARTITIONS;
        if (!sc_broker_topic_name_ok(spec, len))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "--topic %s: a name is 1..249 characters of [a-zA-Z0-9._-]", spec);
        if (len >= name_size)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "--topic %s: name too long",
                               spec);
        if (colon) {
                char *end;
                errno = 0;
                long v = strtol(colon + 1, &end, 10);
                if (errno || end == colon + 1 || *end || v < 1 || v > 10000)
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "--topic %s: partitions must be an integer in 1..10000",
                                       spec);
                partitions = (int)v;
        }
        memcpy(name, spec, len);
        name[len] = '\0';
        *partitionsp = partitions;
        return SC_OK;
}

sc_err_t sc_broker_write_bootstrap(const sc_broker_t *broker, const char *path, char *errstr,
                                   size_t errstr_size)
{
        size_t n = strlen(path) + 32;
        char *tmp = malloc(n);
        if (!tmp)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        snprintf(tmp, n, "%s.tmp.%ld", path, (long)getpid());
        FILE *f = fopen(tmp, "w");
        if (!f) {
                sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: %s", tmp, strerror(errno));
                free(tmp);
                return SC_ERR_IO;
        }
        int bad = fprintf(f, "%s\n", sc_broker_bootstraps(broker)) < 0;
        bad |= fclose(f) != 0;
        if (bad || rename(tmp, path) != 0) {
                sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: %s", path, strerror(errno));
                unlink(tmp);
                free(tmp);
                return SC_ERR_IO;
        }
        free(tmp);
        return SC_OK;
}
