/* txn_feed.c — a test tool for tests/integration/align_txn_real_kafka.sh
 * (built as build/tools/txn_feed, not installed): makes TOPIC with two
 * partitions, commits one transaction of --old records to partition 0 with
 * timestamps an hour old, then produces --live records to partition 1 at
 * --rate records/s with the current time, not in a transaction. Every value
 * is 784 bytes of 100 with the label "3" or "5" as the key (the raw format
 * of examples/worker-fmnist.json).
 *
 *   txn_feed -b ADDR --topic TOPIC [--old N] [--live M] [--rate R]
 *
 * Exit 0 when every record was delivered and the transaction committed. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

static rd_kafka_t *txn_client(const char *bs, const char *txid)
{
        char err[512];
        rd_kafka_conf_t *c = rd_kafka_conf_new();
        if (rd_kafka_conf_set(c, "bootstrap.servers", bs, err, sizeof(err)) ||
            (txid && rd_kafka_conf_set(c, "transactional.id", txid, err, sizeof(err)))) {
                fprintf(stderr, "txn_feed: %s\n", err);
                exit(2);
        }
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
        if (!rk) {
                fprintf(stderr, "txn_feed: %s\n", err);
                exit(2);
        }
        return rk;
}

static int txn_fail(const char *what, rd_kafka_error_t *e)
{
        fprintf(stderr, "txn_feed: %s: %s\n", what, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return 1;
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
            {"topic", required_argument, NULL, 't'},
            {"old", required_argument, NULL, 'o'},
            {"live", required_argument, NULL, 'l'},
            {"rate", required_argument, NULL, 'r'},
            {NULL, 0, NULL, 0},
        };
        const char *bs = NULL, *topic = NULL;
        int old = 50, live = 500, c;
        double rate = 50;
        while ((c = getopt_long(argc, argv, "b:", opts, NULL)) != -1) {
                switch (c) {
                case 'b':
                        bs = optarg;
                        break;
                case 't':
                        topic = optarg;
                        break;
                case 'o':
                        old = atoi(optarg);
                        break;
                case 'l':
                        live = atoi(optarg);
                        break;
                case 'r':
                        rate = atof(optarg);
                        break;
                default:
                        return 2;
                }
        }
        if (!bs || !topic || old < 0 || live < 0 || rate <= 0) {
                fprintf(stderr, "usage: txn_feed -b ADDR --topic TOPIC [--old N] [--live M] "
                                "[--rate R]\n");
                return 2;
        }
        unsigned char v[784];
        memset(v, 100, sizeof(v));
        char err[512];
        rd_kafka_t *tx = txn_client(bs, "scadles-txn-feed");
        rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, 2, -1, err, sizeof(err));
        rd_kafka_queue_t *q = rd_kafka_queue_new(tx);
        rd_kafka_CreateTopics(tx, &nt, 1, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 15000);
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        rd_kafka_NewTopic_destroy(nt);
        rd_kafka_error_t *e;
        if ((e = rd_kafka_init_transactions(tx, 30000)))
                return txn_fail("init_transactions", e);
        if ((e = rd_kafka_begin_transaction(tx)))
                return txn_fail("begin_transaction", e);
        int64_t now = (int64_t)time(NULL) * 1000;
        for (int i = 0; i < old; i++)
                if (rd_kafka_producev(tx, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
                                      RD_KAFKA_V_KEY("3", 1), RD_KAFKA_V_VALUE(v, sizeof(v)),
                                      RD_KAFKA_V_TIMESTAMP(now - 3600 * 1000 + i * 100),
                                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END))
                        return 1;
        if ((e = rd_kafka_commit_transaction(tx, 30000)))
                return txn_fail("commit_transaction", e);
        rd_kafka_destroy(tx);
        rd_kafka_t *p = txn_client(bs, NULL);
        for (int i = 0; i < live; i++) {
                if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(1),
                                      RD_KAFKA_V_KEY("5", 1), RD_KAFKA_V_VALUE(v, sizeof(v)),
                                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END))
                        return 1;
                rd_kafka_poll(p, 0);
                usleep((useconds_t)(1e6 / rate));
        }
        int left = rd_kafka_flush(p, 10000) ? rd_kafka_outq_len(p) : 0;
        rd_kafka_destroy(p);
        printf("txn_feed: %d old records in a transaction, %d live, %d undelivered\n", old, live,
               left);
        return left ? 1 : 0;
}
