/* bench_ingest_kafka.c — records/s from Kafka into stream buffers through the
 * Kafka source, per decoder, on the in-process embedded broker: N records of
 * 784 features (raw uint8 with the label in the key; json {"label":n,
 * "pixels":[...]}; csv "label,p0,...,p783") are produced to a 4-partition
 * topic first, then one source consumes them while every ready batch is
 * taken and acknowledged at once (an infinitely fast trainer), so the figure
 * is fetch + decode + buffer + batch + commit bookkeeping (the source is
 * polled with a 1 ms timeout; fetch round trips dominate: the decoders
 * alone are far faster, see bench_ingest). The clock starts
 * at the first record (the group join is not counted). The embedded broker
 * keeps about 5 MB per partition, so each format gets at most 16 MB of
 * records (about 20,000 raw, 5,500 json or csv).
 * Usage: bench_ingest_kafka [most records per format, default 20000]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "sc_broker.h"
#include "sc_conf.h"
#include "sc_kafka_source.h"
#include "sc_kafka_util.h"
#include "sc_rng.h"

#define NUMEL 784

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Encodes one random sample in format f into buf; returns its length. */
static size_t encode(const char *f, sc_rng_t *rng, int label, char *buf)
{
        unsigned char px[NUMEL];
        char *p = buf;
        for (int i = 0; i < NUMEL; i++)
                px[i] = (unsigned char)sc_rng_below(rng, 256);
        if (!strcmp(f, "raw")) {
                memcpy(buf, px, NUMEL);
                return NUMEL;
        }
        if (!strcmp(f, "json"))
                p += sprintf(p, "{\"label\":%d,\"pixels\":[", label);
        else
                p += sprintf(p, "%d", label);
        for (int i = 0; i < NUMEL; i++)
                p += sprintf(p, "%s%u", (i > 0 || !strcmp(f, "csv")) ? "," : "", px[i]);
        if (!strcmp(f, "json"))
                p += sprintf(p, "]}");
        return (size_t)(p - buf);
}

static int produce(const char *bs, const char *topic, const char *f, long n, double *bytes)
{
        char err[512], key[8], *buf = malloc(8 * NUMEL);
        sc_rng_t rng;
        sc_rng_seed(&rng, 7);
        rd_kafka_conf_t *kc = rd_kafka_conf_new();
        if (!buf || sc_kafka_conf_set(kc, "bootstrap.servers", bs, "bs", err, sizeof(err)) ||
            sc_kafka_conf_set(kc, "linger.ms", "20", "linger", err, sizeof(err))) {
                free(buf);
                rd_kafka_conf_destroy(kc);
                return -1;
        }
        sc_kafka_conf_delivery(kc);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, err, sizeof(err));
        if (!rk) {
                free(buf);
                rd_kafka_conf_destroy(kc);
                return -1;
        }
        sc_kafka_delivery_t dv;
        sc_kafka_delivery_init(&dv);
        *bytes = 0;
        for (long i = 0; i < n; i++) {
                int label = (int)(i % 10);
                int kl = snprintf(key, sizeof(key), "%d", label);
                size_t len = encode(f, &rng, label, buf);
                *bytes += (double)len;
                if (sc_kafka_produce(rk, topic, RD_KAFKA_PARTITION_UA, key, (size_t)kl, buf, len,
                                     NULL, NULL, 0, 0, &dv, 10000, err, sizeof(err))) {
                        fprintf(stderr, "bench_ingest_kafka: %s\n", err);
                        break;
                }
        }
        int rc = sc_kafka_delivery_wait(rk, &dv, 60000, err, sizeof(err)) ? -1 : 0;
        rd_kafka_destroy(rk);
        free(buf);
        return rc;
}

static void run(const char *bs, const char *f, long n)
{
        char topic[64], err[512], text[1024];
        double bytes;
        sc_conf_t conf;
        sc_kafka_source_t *src = NULL;
        sc_batch_t *batch = NULL;

        snprintf(topic, sizeof(topic), "bench.%s", f);
        if (produce(bs, topic, f, n, &bytes)) {
                printf("%-5s produce failed\n", f);
                return;
        }
        snprintf(text, sizeof(text),
                 "{\"source\": {\"group_id\": \"bench-%s\", \"topics\": [{\"topic\": \"%s\"}]}, "
                 "\"streams\": {\"format\": \"%s\", \"features_path\": \"$.pixels\", "
                 "\"scale\": 0.00392156862745098, \"cap\": 8192}, "
                 "\"worker\": {\"batch\": \"rate\", \"window\": 0.001, \"b_min\": 1, \"b_max\": "
                 "256, \"shuffle\": 0}, "
                 "\"kafka\": {\"bootstrap.servers\": \"%s\", \"log_level\": 0%s}}",
                 f, topic, f, bs, getenv("BENCH_KAFKA_EXTRA") ? getenv("BENCH_KAFKA_EXTRA") : "");
        if (sc_conf_parse(&conf, text, "bench", err, sizeof(err)) ||
            sc_kafka_source_new(&src, &conf, NUMEL, 10, 1, NULL, NULL, err, sizeof(err)) ||
            sc_batch_new(&batch, 256, NUMEL)) {
                printf("%-5s setup failed: %s\n", f, err);
                goto out;
        }
        double t0 = 0, t_end = now_s() + 60;
        sc_stream_stats_t s;
        memset(&s, 0, sizeof(s));
        while ((long)(s.trained + s.rejected) < n && now_s() < t_end) {
                size_t got = 0;
                if (sc_kafka_source_poll(src, now_s(), 1, 4096, &got, err, sizeof(err)))
                        break;
                if (got && t0 == 0)
                        t0 = now_s();
                sc_batcher_t *bt = sc_kafka_source_batcher(src);
                if (bt && (long)(s.consumed) >= n)
                        sc_batcher_drain(bt, 1);
                while (bt && sc_batcher_ready(bt, now_s(), NULL) &&
                       sc_batcher_take(bt, now_s(), batch, err, sizeof(err)) == SC_OK)
                        sc_kafka_source_ack(src, batch->id, err, sizeof(err));
                sc_kafka_source_totals(src, &s);
        }
        double el = now_s() - t0;
        printf("%-5s %7ld records  %7.0f records/s  %6.1f MB/s of values  (rejected %llu, "
               "pauses %llu)\n",
               f, (long)s.trained, (double)s.trained / el, bytes / el / 1e6,
               (unsigned long long)s.rejected,
               (unsigned long long)sc_kafka_source_stats(src)->ks_pauses);
out:
        sc_batch_destroy(batch);
        sc_kafka_source_destroy(src);
        sc_conf_free(&conf);
}

int main(int argc, char **argv)
{
        char err[512];
        long n = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
        sc_broker_t *broker = NULL;
        if (n < 1000)
                n = 1000;
        if (sc_broker_new(&broker, 1, err, sizeof(err))) {
                fprintf(stderr, "bench_ingest_kafka: %s\n", err);
                return 1;
        }
        static const char *const formats[] = {"raw", "json", "csv"};
        for (int i = 0; i < 3; i++) {
                char topic[64];
                snprintf(topic, sizeof(topic), "bench.%s", formats[i]);
                sc_broker_topic_create(broker, topic, 4, err, sizeof(err));
        }
        printf("Kafka source ingest, embedded broker, 4 partitions, %d features per record\n",
               NUMEL);
        for (int i = 0; i < 3; i++) {
                long most = (16L << 20) / (i == 0 ? NUMEL : 2900); /* retention */
                run(sc_broker_bootstraps(broker), formats[i], n < most ? n : most);
        }
        sc_broker_destroy(broker);
        return 0;
}
