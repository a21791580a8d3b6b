/* bench_worker.c — records/s of the standalone worker's path without a
 * broker, on the CPU time of the process (so that other load on the
 * machine counts less): raw 784-byte records (the label in the key) over 4
 * partitions of one topic,
 *   ingest   decoded into the stream, batches of 256 drawn through a
 *            shuffle buffer of 64, acknowledged, offsets collected (no
 *            training): the record path alone;
 *   worker   sc_worker_push + sc_worker_poll of a standalone worker
 *            (softmax regression 784-10, fixed batches of 64, shuffle 256):
 *            the record path with a light model's training;
 *   metrics  the same worker with its Prometheus endpoint on
 *            (metrics.listen; metrics.interval 1 on the bench's clock of
 *            1e-4 s per record, a snapshot every 10,000 records) and a
 *            thread of this process scraping /metrics every 50 ms: the
 *            endpoint's whole cost, the scraping client's included.
 * Each case runs `rounds` times, worker and metrics alternating; the best
 * and the median are printed, and the median of the per-round ratios
 * metrics / worker.
 * Usage: bench_worker [records per round, default 200000] [rounds, default 5]. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sc_batch.h"
#include "sc_conf.h"
#include "sc_decode.h"
#include "sc_rng.h"
#include "sc_stream.h"
#include "sc_worker.h"

#define NUMEL 784
#define NREC 1024

static double cpu_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static unsigned char px[NREC][NUMEL];
static char keys[NREC][2];

static void make_records(void)
{
        sc_rng_t rng;
        sc_rng_seed(&rng, 1);
        for (int r = 0; r < NREC; r++) {
                for (int i = 0; i < NUMEL; i++)
                        px[r][i] = (unsigned char)sc_rng_below(&rng, 256);
                keys[r][0] = (char)('0' + sc_rng_below(&rng, 10));
        }
}

/* The record path alone: decode into the ring slot, push, take, ack. */
static double run_ingest(long n)
{
        sc_stream_spec_t ss;
        sc_batch_spec_t bs;
        sc_decode_spec_t ds;
        sc_stream_t *s = NULL;
        sc_batcher_t *bt = NULL;
        sc_batch_t *b = NULL;
        sc_offsets_commit_t c[16];
        char err[256];
        double rate = 0;

        sc_stream_spec_defaults(&ss);
        sc_batch_spec_defaults(&bs);
        bs.mode = SC_BATCH_FIXED;
        bs.b = 256;
        bs.shuffle = 64;
        sc_decode_spec_defaults(&ds, SC_DECODE_RAW);
        ds.numel = NUMEL;
        ds.scale = 1.0f / 255;
        if (sc_stream_new(&s, &ss, NUMEL, err, sizeof(err)) ||
            sc_batcher_new(&bt, &bs, &s, 1, 1, err, sizeof(err)) || sc_batch_new(&b, 256, NUMEL)) {
                fprintf(stderr, "bench_worker: %s\n", err);
                goto out;
        }
        double t = 0, c0 = cpu_s();
        for (long i = 0; i < n; i++) {
                const int r = (int)(i % NREC);
                sc_record_t rec = {keys[r], 1, px[r], NUMEL, NULL, 0};
                int32_t label;
                float *x = sc_stream_slot(s);
                if (!x || sc_decode_record(&ds, &rec, x, &label, err, sizeof(err)) ||
                    sc_stream_push_slot(s, label, (int32_t)(i % 4), i / 4, t, err, sizeof(err))) {
                        fprintf(stderr, "bench_worker: record %ld not taken\n", i);
                        goto out;
                }
                t += 1e-5;
                while (sc_batcher_ready(bt, t, NULL)) {
                        if (sc_batcher_take(bt, t, b, err, sizeof(err)) ||
                            sc_batcher_ack(bt, b->id, err, sizeof(err))) {
                                fprintf(stderr, "bench_worker: %s\n", err);
                                goto out;
                        }
                        while (sc_stream_commits(s, c, 16) == 16)
                                ;
                }
        }
        rate = (double)n / (cpu_s() - c0);
out:
        sc_batch_destroy(b);
        sc_batcher_destroy(bt);
        sc_stream_destroy(s);
        return rate;
}

static const char worker_conf[] =
    "{\"model\": {\"input\": [1, 28, 28], \"layers\": [{\"type\": \"flatten\"},"
    " {\"type\": \"dense\", \"units\": 10}]},"
    " \"optim\": {\"lr\": 0.05}, \"train\": {\"seed\": 1},"
    " \"source\": {\"topics\": [{\"topic\": \"t\"}]},"
    " \"streams\": {\"format\": \"raw\", \"label\": \"key\", \"scale\": 0.0039},"
    " \"worker\": {\"batch\": \"fixed\", \"b\": 64, \"shuffle\": 256, \"eval\": false,"
    "  \"progress_interval\": 0}}";

/* The scraper: GET /metrics on port every 50 ms until stop. */
typedef struct scraper {
        int port;
        volatile int stop;
        long scrapes, bytes;
} scraper_t;

static void *scrape(void *arg)
{
        scraper_t *sc = arg;
        static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
        char buf[8192];
        while (!sc->stop) {
                struct sockaddr_in a = {.sin_family = AF_INET,
                                        .sin_port = htons((uint16_t)sc->port)};
                a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                int fd = socket(AF_INET, SOCK_STREAM, 0);
                if (fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof(a)) &&
                    write(fd, req, sizeof(req) - 1) == (ssize_t)(sizeof(req) - 1)) {
                        ssize_t got;
                        while ((got = read(fd, buf, sizeof(buf))) > 0)
                                sc->bytes += got;
                        sc->scrapes++;
                }
                if (fd >= 0)
                        close(fd);
                usleep(50000);
        }
        return NULL;
}

/* Takes the endpoint's port from the worker's "metrics on http://..." line. */
static void on_log(void *opaque, int level, const char *line)
{
        const char *at = strstr(line, "metrics on http://");
        const char *colon = at ? strchr(at + 18, ':') : NULL;
        (void)level;
        if (colon)
                ((scraper_t *)opaque)->port = atoi(colon + 1);
}

/* A standalone push-fed worker: push, poll (trains and acknowledges); with
 * metrics, its endpoint on and scraped. */
static double run_worker(long n, int metrics, long *scrapes)
{
        sc_conf_t conf;
        sc_worker_spec_t spec;
        sc_worker_t *w = NULL;
        char err[512];
        double rate = 0;
        scraper_t sc = {0};
        pthread_t th;
        int started = 0;

        memset(&conf, 0, sizeof(conf));
        if (sc_conf_parse(&conf, worker_conf, "bench", err, sizeof(err)) ||
            (metrics && (sc_conf_set(&conf, "metrics.listen=\"127.0.0.1:0\"", err, sizeof(err)) ||
                         sc_conf_set(&conf, "metrics.interval=1", err, sizeof(err))))) {
                fprintf(stderr, "bench_worker: %s\n", err);
                return 0;
        }
        sc_worker_spec_defaults(&spec);
        spec.conf = &conf;
        spec.input = SC_WORKER_INPUT_PUSH;
        spec.log = on_log;
        spec.log_opaque = &sc;
        if (sc_worker_new(&w, &spec, err, sizeof(err))) {
                fprintf(stderr, "bench_worker: %s\n", err);
                goto out;
        }
        if (metrics && !(started = sc.port > 0 && !pthread_create(&th, NULL, scrape, &sc))) {
                fprintf(stderr, "bench_worker: the metrics endpoint did not start\n");
                goto out;
        }
        double t = 1, c0 = cpu_s();
        for (long i = 0; i < n; i++) {
                const int r = (int)(i % NREC);
                sc_err_t e;
                while ((e = sc_worker_push(w, "t", (int32_t)(i % 4), i / 4, keys[r], 1, px[r],
                                           NUMEL, NULL, 0, 0, err, sizeof(err))) == SC_ERR_AGAIN)
                        if (sc_worker_poll(w, t += 1e-4, 0, err, sizeof(err)))
                                goto fail;
                if (e)
                        goto fail;
                if (i % 64 == 63 && sc_worker_poll(w, t += 1e-4, 0, err, sizeof(err)))
                        goto fail;
        }
        rate = (double)n / (cpu_s() - c0);
        goto out;
fail:
        fprintf(stderr, "bench_worker: %s\n", err);
out:
        if (started) {
                sc.stop = 1;
                pthread_join(th, NULL);
                *scrapes += sc.scrapes;
        }
        sc_worker_destroy(w);
        sc_conf_free(&conf);
        return rate;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
        long n = argc > 1 ? strtol(argv[1], NULL, 10) : 200000;
        int rounds = argc > 2 ? atoi(argv[2]) : 5;
        double r[3][64], ratio[64];
        long scrapes = 0;

        if (n < 1000)
                n = 1000;
        if (rounds < 1 || rounds > 64)
                rounds = 5;
        make_records();
        for (int k = 0; k < rounds; k++) {
                r[0][k] = run_ingest(n);
                r[1][k] = run_worker(n, 0, &scrapes);
                r[2][k] = run_worker(n, 1, &scrapes);
                ratio[k] = r[1][k] > 0 ? r[2][k] / r[1][k] : 0;
        }
        printf("standalone worker path, %d features per record, records/s of CPU time over %ld "
               "records, %d rounds\n",
               NUMEL, n, rounds);
        printf("%-8s %12s %12s\n", "case", "best", "median");
        const char *names[] = {"ingest", "worker", "metrics"};
        for (int c = 0; c < 3; c++) {
                qsort(r[c], (size_t)rounds, sizeof(double), cmp_double);
                printf("%-8s %12.0f %12.0f\n", names[c], r[c][rounds - 1], r[c][rounds / 2]);
        }
        qsort(ratio, (size_t)rounds, sizeof(double), cmp_double);
        printf("metrics on / off: median ratio %.3f (rounds %.3f .. %.3f), %ld scrapes\n",
               ratio[rounds / 2], ratio[0], ratio[rounds - 1], scrapes);
        return 0;
}
