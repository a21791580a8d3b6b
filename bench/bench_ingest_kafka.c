/* bench_ingest_kafka.c — records/s and MB/s from Kafka into stream buffers
 * through the Kafka source, per decoder, on the embedded broker and (when
 * SCADLES_KAFKA names a bootstrap or scripts/kafka.sh status says running)
 * on a real Apache Kafka, next to the decode-only figure of the same records.
 *
 * Per format (raw uint8 with the label in the key; json {"label":n,
 * "pixels":[...]}; csv "label,p0,...,p783"; 784 features), the backlog is
 * produced first, then one source consumes it. The clock starts at the first
 * record (the group join is not counted) and stops when every record is in
 * the streams. Two trainers take the batches:
 *   drain   every ready batch of 256 is taken and acknowledged at once, so the
 *           figure is fetch + decode + buffer + batch + commit bookkeeping;
 *   paced   rate batches of at most 256 every 1 ms (at most 256k samples/s),
 *           slower than the fetches: the stream fills and persistence
 *           backpressure (holding, pausing, resuming partitions) is timed too.
 * decode is sc_decode_record + push + take on the same records in memory.
 * The embedded broker keeps about 5 MB per partition: its topics get enough
 * partitions (4 MB each) for the backlog; the real Kafka's get 4 and are
 * deleted afterwards.
 * Usage: bench_ingest_kafka [raw records, default 200000; json/csv get a
 * quarter]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "sc_broker.h"
#include "sc_conf.h"
#include "sc_decode.h"
#include "sc_kafka_admin.h"
#include "sc_kafka_source.h"
#include "sc_kafka_util.h"
#include "sc_rng.h"
#include "sc_stream.h"

#define NUMEL 784
#define NSAMPLE 2048 /* distinct records; the backlog repeats them */
#define REC_MAX (8 * NUMEL)

typedef struct sample {
        char key[8];
        size_t key_size;
        char *value;
        size_t size;
} sample_t;

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

static int make_samples(const char *f, sample_t *s)
{
        sc_rng_t rng;
        sc_rng_seed(&rng, 7);
        for (int i = 0; i < NSAMPLE; i++) {
                int label = i % 10;
                s[i].key_size = (size_t)snprintf(s[i].key, sizeof(s[i].key), "%d", label);
                if (!(s[i].value = malloc(REC_MAX)))
                        return -1;
                s[i].size = encode(f, &rng, label, s[i].value);
        }
        return 0;
}

/* Average record size of the samples in bytes. */
static double sample_bytes(const sample_t *s)
{
        double b = 0;
        for (int i = 0; i < NSAMPLE; i++)
                b += (double)s[i].size;
        return b / NSAMPLE;
}

/* Decode-only: sc_decode_record + push + take of n records; records/s. */
static double decode_only(const char *f, const sample_t *s, long n)
{
        static float bx[256 * NUMEL];
        static int32_t bl[256];
        static sc_stream_ref_t br[256];
        char err[256];
        sc_decode_spec_t spec;
        sc_stream_spec_t sspec;
        sc_stream_t *st = NULL;
        sc_decode_spec_defaults(&spec, !strcmp(f, "raw")    ? SC_DECODE_RAW
                                       : !strcmp(f, "json") ? SC_DECODE_JSON
                                                            : SC_DECODE_CSV);
        spec.numel = NUMEL;
        spec.n_classes = 10;
        spec.scale = 1.0f / 255.0f;
        strcpy(spec.features_path, "$.pixels");
        sc_stream_spec_defaults(&sspec);
        sspec.cap = 8192;
        if (sc_decode_spec_check(&spec, err, sizeof(err)) ||
            sc_stream_new(&st, &sspec, NUMEL, err, sizeof(err)))
                return 0;
        double t0 = now_s();
        for (long i = 0; i < n; i++) {
                const sample_t *r = &s[i % NSAMPLE];
                sc_record_t rec = {r->key, r->key_size, r->value, r->size, NULL, 0};
                int32_t label;
                float *x = sc_stream_slot(st);
                if (sc_decode_record(&spec, &rec, x, &label, err, sizeof(err)) == SC_DECODE_OK)
                        sc_stream_push_slot(st, label, 0, i, t0, err, sizeof(err));
                if (sc_stream_count(st) >= 4096) {
                        size_t got = sc_stream_take(st, 256, bx, bl, br, t0);
                        for (size_t k = 0; k < got; k++)
                                sc_stream_done(st, &br[k], NULL, 0);
                }
        }
        double el = now_s() - t0;
        sc_stream_destroy(st);
        return (double)n / el;
}

/* Deletes topic from a real Kafka (the backlog is large). */
static void delete_topic(const char *bs, const char *topic)
{
        char err[512];
        rd_kafka_conf_t *kc = rd_kafka_conf_new();
        if (sc_kafka_conf_set(kc, "bootstrap.servers", bs, "bs", err, sizeof(err))) {
                rd_kafka_conf_destroy(kc);
                return;
        }
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, err, sizeof(err));
        if (!rk) {
                rd_kafka_conf_destroy(kc);
                return;
        }
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_DeleteTopic_t *dt = rd_kafka_DeleteTopic_new(topic);
        rd_kafka_DeleteTopics(rk, &dt, 1, NULL, q);
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 10000);
        if (!ev || rd_kafka_event_error(ev))
                fprintf(stderr, "bench_ingest_kafka: deleting %s: %s\n", topic,
                        ev ? rd_kafka_event_error_string(ev) : "timed out");
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_DeleteTopic_destroy(dt);
        rd_kafka_queue_destroy(q);
        rd_kafka_destroy(rk);
}

/* Creates topic (on the embedded broker when broker is given) and produces
 * n records to it, round-robin over its partitions. */
static int produce(sc_broker_t *broker, const char *bs, const char *topic, int partitions,
                   const sample_t *s, long n)
{
        char err[512];
        if (broker && sc_broker_topic_create(broker, topic, partitions, err, sizeof(err))) {
                fprintf(stderr, "bench_ingest_kafka: %s\n", err);
                return -1;
        }
        rd_kafka_conf_t *kc = rd_kafka_conf_new();
        if (sc_kafka_conf_set(kc, "bootstrap.servers", bs, "bs", err, sizeof(err)) ||
            sc_kafka_conf_set(kc, "linger.ms", "20", "linger", err, sizeof(err)) ||
            sc_kafka_conf_set(kc, "batch.size", "1000000", "batch", err, sizeof(err))) {
                rd_kafka_conf_destroy(kc);
                return -1;
        }
        sc_kafka_conf_delivery(kc);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, err, sizeof(err));
        if (!rk) {
                rd_kafka_conf_destroy(kc);
                return -1;
        }
        sc_kafka_topic_spec_t ts;
        memset(&ts, 0, sizeof(ts));
        snprintf(ts.name, sizeof(ts.name), "%s", topic);
        ts.partitions = partitions;
        ts.replication = 1;
        int rc = 0;
        if (!broker && sc_kafka_admin_ensure(rk, &ts, 1, 10000, NULL, err, sizeof(err)))
                rc = -1;
        sc_kafka_delivery_t dv;
        sc_kafka_delivery_init(&dv);
        /* Keys round-robin over partitions: each partition gets every label. */
        for (long i = 0; !rc && i < n; i++) {
                const sample_t *r = &s[i % NSAMPLE];
                if (sc_kafka_produce(rk, topic, (int32_t)(i % partitions), r->key, r->key_size,
                                     r->value, r->size, NULL, NULL, 0, 0, &dv, 10000, err,
                                     sizeof(err)))
                        rc = -1;
        }
        if (!rc && sc_kafka_delivery_wait(rk, &dv, 120000, err, sizeof(err)))
                rc = -1;
        if (rc)
                fprintf(stderr, "bench_ingest_kafka: %s: %s\n", topic, err);
        rd_kafka_destroy(rk);
        return rc;
}

/* Consumes n records of topic; returns records/s (0 on failure), *pauses. */
static double consume(const char *bs, const char *topic, const char *f, long n, int paced,
                      unsigned long long *pauses)
{
        char err[512], text[1536];
        sc_conf_t conf;
        sc_kafka_source_t *src = NULL;
        sc_batch_t *batch = NULL;
        double rate = 0;

        snprintf(text, sizeof(text),
                 "{\"source\": {\"group_id\": \"%s.g%d\", \"topics\": [{\"topic\": \"%s\"}]}, "
                 "\"streams\": {\"format\": \"%s\", \"features_path\": \"$.pixels\", "
                 "\"scale\": 0.00392156862745098, \"cap\": 8192}, "
                 "\"worker\": {%s, \"b_min\": 1, \"b_max\": 256, \"shuffle\": 64}, "
                 "\"kafka\": {\"bootstrap.servers\": \"%s\", \"log_level\": %s%s}}",
                 topic, paced, topic, f,
                 paced ? "\"batch\": \"rate\", \"window\": 0.001"
                       : "\"batch\": \"fixed\", \"b\": 256",
                 bs, getenv("BENCH_KAFKA_LOG") ? getenv("BENCH_KAFKA_LOG") : "0",
                 getenv("BENCH_KAFKA_EXTRA") ? getenv("BENCH_KAFKA_EXTRA") : "");
        if (sc_conf_parse(&conf, text, "bench", err, sizeof(err))) {
                fprintf(stderr, "bench_ingest_kafka: %s\n", err);
                return 0;
        }
        if (sc_kafka_source_new(&src, &conf, NUMEL, 10, 1, NULL, NULL, err, sizeof(err)) ||
            sc_batch_new(&batch, 256, NUMEL)) {
                fprintf(stderr, "bench_ingest_kafka: %s: %s\n", topic, err);
                goto out;
        }
        double t0 = 0, t_end = now_s() + 120;
        sc_stream_stats_t s;
        memset(&s, 0, sizeof(s));
        while ((long)s.consumed < n && now_s() < t_end) {
                size_t got = 0;
                double tb = now_s();
                if (sc_kafka_source_poll(src, tb, 1, 4096, &got, err, sizeof(err))) {
                        fprintf(stderr, "bench_ingest_kafka: %s: %s\n", topic, err);
                        break;
                }
                if (got && t0 == 0)
                        t0 = tb; /* the poll that brought the first records decoded them */
                if (got && getenv("BENCH_TRACE"))
                        fprintf(stderr, "%s %.4f s: %zu records, %llu consumed\n", topic,
                                now_s() - t0, got, (unsigned long long)s.consumed);
                sc_batcher_t *bt = sc_kafka_source_batcher(src);
                while (bt && sc_batcher_ready(bt, now_s(), NULL) &&
                       sc_batcher_take(bt, now_s(), batch, err, sizeof(err)) == SC_OK)
                        sc_kafka_source_ack(src, batch->id, err, sizeof(err));
                sc_kafka_source_totals(src, &s);
        }
        if ((long)s.consumed >= n && t0 > 0)
                rate = (double)n / (now_s() - t0);
        else
                fprintf(stderr, "bench_ingest_kafka: %s: %llu of %ld records consumed\n", topic,
                        (unsigned long long)s.consumed, n);
        *pauses = sc_kafka_source_stats(src)->ks_pauses;
out:
        sc_batch_destroy(batch);
        sc_kafka_source_destroy(src);
        sc_conf_free(&conf);
        return rate;
}

static void report(const char *broker, const char *f, const char *trainer, long n, double rate,
                   double bytes, double decode, unsigned long long pauses)
{
        if (rate > 0)
                printf("%-8s %-5s %-6s %8ld %10.0f %8.1f %10.0f %7llu\n", broker, f, trainer, n,
                       rate, rate * bytes / 1e6, decode, pauses);
        else
                printf("%-8s %-5s %-6s %8ld %10s %8s %10.0f %7s\n", broker, f, trainer, n, "failed",
                       "-", decode, "-");
}

/* The real Kafka's bootstrap: SCADLES_KAFKA, else scripts/kafka.sh status. */
static int real_kafka(char *bs, size_t size)
{
        const char *e = getenv("SCADLES_KAFKA");
        if (e && *e) {
                snprintf(bs, size, "%s", e);
                return 1;
        }
        FILE *p = popen("scripts/kafka.sh status 2>/dev/null", "r");
        char line[512] = "", addr[256];
        if (!p)
                return 0;
        if (!fgets(line, sizeof(line), p))
                line[0] = 0;
        int rc = pclose(p);
        if (rc != 0 || sscanf(line, "running %255s", addr) != 1)
                return 0;
        snprintf(bs, size, "%s", addr);
        return 1;
}

int main(int argc, char **argv)
{
        char err[512], topic[128], bs_real[256];
        long n_raw = argc > 1 ? strtol(argv[1], NULL, 10) : 200000;
        static const char *const formats[] = {"raw", "json", "csv"};
        sample_t samples[NSAMPLE];

        if (n_raw < 4000)
                n_raw = 4000;
        int have_real = real_kafka(bs_real, sizeof(bs_real));
        printf("Kafka source ingest into stream buffers, %d features per record, one consumer "
               "thread\n",
               NUMEL);
        printf("%-8s %-5s %-6s %8s %10s %8s %10s %7s\n", "broker", "fmt", "train", "records",
               "records/s", "MB/s", "decode/s", "pauses");
        for (int fi = 0; fi < 3; fi++) {
                const char *f = formats[fi];
                long n = fi == 0 ? n_raw : n_raw / 4;
                if (make_samples(f, samples)) {
                        fprintf(stderr, "bench_ingest_kafka: out of memory\n");
                        return 1;
                }
                double bytes = sample_bytes(samples);
                double decode = decode_only(f, samples, n < 50000 ? n : 50000);
                int parts = (int)ceil((double)n * bytes / (4 << 20));
                if (parts < 4)
                        parts = 4;
                for (int b = 0; b < 2; b++) {
                        sc_broker_t *broker = NULL;
                        const char *bs = bs_real;
                        if (b == 0) {
                                if (sc_broker_new(&broker, 1, err, sizeof(err))) {
                                        fprintf(stderr, "bench_ingest_kafka: %s\n", err);
                                        return 1;
                                }
                                bs = sc_broker_bootstraps(broker);
                        } else if (!have_real) {
                                continue;
                        }
                        snprintf(topic, sizeof(topic), "bench-ingest.%ld.%s", (long)getpid(), f);
                        if (produce(broker, bs, topic, b ? 4 : parts, samples, n) == 0) {
                                unsigned long long pauses = 0;
                                const char *name = b ? "kafka" : "embedded";
                                double r = consume(bs, topic, f, n, 0, &pauses);
                                report(name, f, "drain", n, r, bytes, decode, pauses);
                                if (fi == 0) {
                                        r = consume(bs, topic, f, n, 1, &pauses);
                                        report(name, f, "paced", n, r, bytes, decode, pauses);
                                }
                        } else {
                                report(b ? "kafka" : "embedded", f, "drain", n, 0, bytes, decode,
                                       0);
                        }
                        if (b)
                                delete_topic(bs, topic);
                        sc_broker_destroy(broker);
                }
                for (int i = 0; i < NSAMPLE; i++)
                        free(samples[i].value);
        }
        if (have_real)
                printf("real Kafka: %s (4 partitions)\n", bs_real);
        return 0;
}
