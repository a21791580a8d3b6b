/* bench_broker.c — measures the embedded broker's behaviour that docs/BROKERS.md
 * relies on: end-to-end latency versus fetch.wait.max.ms, per-partition
 * retention for Fashion-MNIST-sized records, and transaction isolation.
 * Usage: bench_broker [BOOTSTRAP]  (default: a fresh embedded broker). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sc_broker.h"
#include "sc_kafka_util.h"

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
        struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
        nanosleep(&ts, NULL);
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *bs, const char *const *kv, int n_kv)
{
        char errstr[512];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        sc_err_t err =
            sc_kafka_conf_set(conf, "bootstrap.servers", bs, "bootstrap", errstr, sizeof(errstr));
        for (int i = 0; !err && i < n_kv; i++)
                err = sc_kafka_conf_set_kv(conf, kv[i], errstr, sizeof(errstr));
        if (err) {
                fprintf(stderr, "bench_broker: %s\n", errstr);
                exit(1);
        }
        if (type == RD_KAFKA_PRODUCER)
                sc_kafka_conf_delivery(conf);
        rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof(errstr));
        if (!rk) {
                fprintf(stderr, "bench_broker: %s\n", errstr);
                exit(1);
        }
        if (type == RD_KAFKA_CONSUMER)
                rd_kafka_poll_set_consumer(rk);
        return rk;
}

static void assign0(rd_kafka_t *rk, const char *topic, int64_t offset)
{
        rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(tp, topic, 0)->offset = offset;
        rd_kafka_assign(rk, tp);
        rd_kafka_topic_partition_list_destroy(tp);
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

/* Sends 20 records 20 ms apart and measures produce-to-consume latency. */
static void latency(const char *bs, const char *topic, const char *wait_ms)
{
        char errstr[512], fw[64];
        enum { N = 20 };
        double lat[N];
        snprintf(fw, sizeof(fw), "fetch.wait.max.ms=%s", wait_ms);
        const char *pkv[] = {"linger.ms=0", "enable.idempotence=true"};
        const char *ckv[] = {"group.id=bench", fw, "enable.partition.eof=false"};
        rd_kafka_t *p = client(RD_KAFKA_PRODUCER, bs, pkv, 2);
        rd_kafka_t *c = client(RD_KAFKA_CONSUMER, bs, ckv, 3);
        /* Warm up: topic exists, consumer is fetching at the end. */
        int64_t warm = -1;
        if (sc_kafka_produce_sync(p, topic, 0, NULL, 0, "w", 1, 5000, NULL, &warm, errstr,
                                  sizeof(errstr))) {
                fprintf(stderr, "bench_broker: %s\n", errstr);
                exit(1);
        }
        assign0(c, topic, warm + 1);
        for (double t = now_s(); now_s() - t < 1.0;) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 50);
                if (m)
                        rd_kafka_message_destroy(m);
        }
        int got = 0;
        for (int i = 0; i < N; i++) {
                double sent = now_s();
                sc_kafka_delivery_t dv;
                sc_kafka_delivery_init(&dv);
                sc_kafka_produce(p, topic, 0, NULL, 0, &sent, sizeof(sent), NULL, NULL, 0, 0, &dv,
                                 1000, errstr, sizeof(errstr));
                rd_kafka_poll(p, 0);
                for (double t0 = now_s(); now_s() - t0 < 3.0;) {
                        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 5);
                        if (!m)
                                continue;
                        if (!m->err && m->len == sizeof(double)) {
                                double s;
                                memcpy(&s, m->payload, sizeof(s));
                                lat[got++] = (now_s() - s) * 1000.0;
                                rd_kafka_message_destroy(m);
                                break;
                        }
                        rd_kafka_message_destroy(m);
                }
                if (sc_kafka_delivery_wait(p, &dv, 5000, errstr, sizeof(errstr)))
                        printf("latency: record %d: %s\n", i, errstr);
                sleep_s(0.02);
        }
        qsort(lat, (size_t)got, sizeof(double), cmp_double);
        if (got)
                printf(
                    "latency fetch.wait.max.ms=%-4s  n=%d (%d not back within 3 s)  p50 %.1f ms  "
                    "p90 %.1f ms  max %.1f ms\n",
                    wait_ms, got, N - got, lat[got / 2], lat[got * 9 / 10], lat[got - 1]);
        else
                printf("latency fetch.wait.max.ms=%-4s  no record came back\n", wait_ms);
        rd_kafka_destroy(c);
        rd_kafka_destroy(p);
}

/* Fills one partition with 784-byte records until the log start moves. */
static void retention(const char *bs, const char *topic)
{
        char errstr[512], val[784];
        const char *pkv[] = {"linger.ms=5", "enable.idempotence=true"};
        rd_kafka_t *p = client(RD_KAFKA_PRODUCER, bs, pkv, 2);
        sc_kafka_delivery_t dv;
        sc_kafka_delivery_init(&dv);
        memset(val, 7, sizeof(val));
        const int n = 12000;
        for (int i = 0; i < n; i++) {
                sc_kafka_produce(p, topic, 0, "3", 1, val, sizeof(val), "label", "3", 1, 0, &dv,
                                 5000, errstr, sizeof(errstr));
                rd_kafka_poll(p, 0);
        }
        sc_kafka_delivery_wait(p, &dv, 30000, errstr, sizeof(errstr));
        int64_t lo = -1, hi = -1;
        rd_kafka_query_watermark_offsets(p, topic, 0, &lo, &hi, 5000);
        printf("retention: %d raw Fashion-MNIST records (784 B + key + header) into one "
               "partition: offsets %" PRId64 "..%" PRId64 " kept = %" PRId64 " records (%.2f MB "
               "of values)\n",
               n, lo, hi, hi - lo, (double)(hi - lo) * 784 / 1e6);
        rd_kafka_destroy(p);
}

/* Aborts one transaction and commits another; counts what a read_committed
 * consumer sees (Kafka: only the committed 10). */
static void transactions(const char *bs, const char *topic)
{
        char errstr[512];
        const char *pkv[] = {"transactional.id=bench-tx", "linger.ms=0"};
        rd_kafka_t *p = client(RD_KAFKA_PRODUCER, bs, pkv, 2);
        rd_kafka_error_t *e = rd_kafka_init_transactions(p, 10000);
        if (e) {
                printf("transactions: init failed: %s\n", rd_kafka_error_string(e));
                rd_kafka_error_destroy(e);
                rd_kafka_destroy(p);
                return;
        }
        for (int round = 0; round < 2; round++) {
                rd_kafka_error_destroy(rd_kafka_begin_transaction(p));
                for (int i = 0; i < 10; i++)
                        sc_kafka_produce(p, topic, 0, NULL, 0, round ? "commit" : "abort",
                                         round ? 6 : 5, NULL, NULL, 0, 0, NULL, 1000, errstr,
                                         sizeof(errstr));
                rd_kafka_flush(p, 5000);
                e = round ? rd_kafka_commit_transaction(p, 10000)
                          : rd_kafka_abort_transaction(p, 10000);
                if (e) {
                        printf("transactions: %s failed: %s\n", round ? "commit" : "abort",
                               rd_kafka_error_string(e));
                        rd_kafka_error_destroy(e);
                }
        }
        rd_kafka_destroy(p);
        const char *ckv[] = {"group.id=bench-tx", "isolation.level=read_committed",
                             "fetch.wait.max.ms=10", "enable.partition.eof=true"};
        rd_kafka_t *c = client(RD_KAFKA_CONSUMER, bs, ckv, 4);
        assign0(c, topic, RD_KAFKA_OFFSET_BEGINNING);
        int aborted = 0, committed = 0;
        for (double t0 = now_s(); now_s() - t0 < 5.0;) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 50);
                if (!m)
                        continue;
                int eof = m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF;
                if (!m->err) {
                        aborted += m->len == 5;
                        committed += m->len == 6;
                }
                rd_kafka_message_destroy(m);
                if (eof)
                        break;
        }
        printf("transactions: read_committed consumer saw %d aborted and %d committed records "
               "(Kafka: 0 and 10)\n",
               aborted, committed);
        rd_kafka_destroy(c);
}

int main(int argc, char **argv)
{
        char errstr[512];
        sc_broker_t *broker = NULL;
        const char *bs = argc > 1 ? argv[1] : NULL;
        char tl[64], tr[64], tt[64];
        snprintf(tl, sizeof(tl), "bench.lat.%ld", (long)time(NULL));
        snprintf(tr, sizeof(tr), "bench.ret.%ld", (long)time(NULL));
        snprintf(tt, sizeof(tt), "bench.tx.%ld", (long)time(NULL));
        if (!bs) {
                if (sc_broker_new(&broker, 1, errstr, sizeof(errstr)) ||
                    sc_broker_topic_create(broker, tl, 1, errstr, sizeof(errstr)) ||
                    sc_broker_topic_create(broker, tr, 1, errstr, sizeof(errstr)) ||
                    sc_broker_topic_create(broker, tt, 1, errstr, sizeof(errstr))) {
                        fprintf(stderr, "bench_broker: %s\n", errstr);
                        sc_broker_destroy(broker);
                        return 1;
                }
                bs = sc_broker_bootstraps(broker);
                printf("embedded broker at %s (librdkafka %s)\n", bs, rd_kafka_version_str());
        } else {
                printf("broker at %s (librdkafka %s)\n", bs, rd_kafka_version_str());
        }
        latency(bs, tl, "500");
        latency(bs, tl, "100");
        latency(bs, tl, "10");
        retention(bs, tr);
        transactions(bs, tt);
        sc_broker_destroy(broker);
        return 0;
}
