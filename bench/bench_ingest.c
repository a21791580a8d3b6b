/* bench_ingest.c — records/s of decoding and of decode + push into a stream
 * buffer (with the buffer drained in batches of 256 and acknowledged), per
 * decoder, for 784-feature samples: raw uint8 (784 bytes, label in the key),
 * json ({"pixels": [784 ints], "label": n}) and csv ("label,p0,...,p783").
 * Usage: bench_ingest [seconds per case, default 0.5]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sc_decode.h"
#include "sc_rng.h"
#include "sc_stream.h"

#define NUMEL 784
#define NREC 512

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct bench_rec {
        char key[4];
        size_t key_size;
        char *value;
        size_t size;
} bench_rec_t;

static void make_records(sc_decode_format_t f, bench_rec_t *recs, sc_rng_t *rng)
{
        for (int r = 0; r < NREC; r++) {
                unsigned char px[NUMEL];
                int label = (int)sc_rng_below(rng, 10);
                for (int i = 0; i < NUMEL; i++)
                        px[i] = (unsigned char)sc_rng_below(rng, 256);
                recs[r].key_size = (size_t)snprintf(recs[r].key, sizeof(recs[r].key), "%d", label);
                if (f == SC_DECODE_RAW) {
                        recs[r].value = malloc(NUMEL);
                        memcpy(recs[r].value, px, NUMEL);
                        recs[r].size = NUMEL;
                        continue;
                }
                char *buf = malloc(NUMEL * 4 + 64), *p = buf;
                if (f == SC_DECODE_JSON) {
                        p += sprintf(p, "{\"pixels\": [");
                        for (int i = 0; i < NUMEL; i++)
                                p += sprintf(p, i ? ",%d" : "%d", px[i]);
                        p += sprintf(p, "], \"label\": %d}", label);
                } else {
                        p += sprintf(p, "%d", label);
                        for (int i = 0; i < NUMEL; i++)
                                p += sprintf(p, ",%d", px[i]);
                        p += sprintf(p, "\n");
                }
                recs[r].value = buf;
                recs[r].size = (size_t)(p - buf);
        }
}

/* Runs for about `secs`; returns records/s. With s, pushes and drains. */
static double run(const sc_decode_spec_t *spec, const bench_rec_t *recs, sc_stream_t *s,
                  double secs, int64_t *offset)
{
        static float x[NUMEL], bx[256 * NUMEL];
        static int32_t bl[256];
        static sc_stream_ref_t br[256];
        char err[160];
        long n = 0, faults = 0;
        double t0 = now_s(), t = t0;

        while (t - t0 < secs) {
                for (int k = 0; k < 1024; k++, n++) {
                        const bench_rec_t *r = &recs[n % NREC];
                        sc_record_t rec = {.key = r->key,
                                           .key_size = r->key_size,
                                           .value = r->value,
                                           .value_size = r->size};
                        int32_t label;
                        float *dst = s ? sc_stream_slot(s) : x;
                        if (sc_decode_record(spec, &rec, dst, &label, err, sizeof(err)) !=
                            SC_DECODE_OK) {
                                faults++;
                                continue;
                        }
                        if (!s)
                                continue;
                        if (sc_stream_push_slot(s, label, 0, (*offset)++, t, err, sizeof(err)))
                                faults++;
                        if (sc_stream_count(s) >= 4096) {
                                size_t got = sc_stream_take(s, 256, bx, bl, br, t);
                                for (size_t i = 0; i < got; i++)
                                        sc_stream_done(s, &br[i], NULL, 0);
                        }
                }
                t = now_s();
        }
        if (faults)
                fprintf(stderr, "bench_ingest: %ld records failed: %s\n", faults, err);
        return (double)n / (t - t0);
}

int main(int argc, char **argv)
{
        double secs = argc > 1 ? atof(argv[1]) : 0.5;
        const sc_decode_format_t formats[] = {SC_DECODE_RAW, SC_DECODE_JSON, SC_DECODE_CSV};
        sc_rng_t rng;
        char err[160];

        sc_rng_seed(&rng, 1);
        printf("%-6s %12s %12s %14s %10s\n", "format", "bytes/rec", "decode/s", "decode+push/s",
               "MB/s");
        for (int fi = 0; fi < 3; fi++) {
                sc_decode_format_t f = formats[fi];
                bench_rec_t recs[NREC];
                sc_decode_spec_t spec;
                sc_stream_spec_t sspec;
                sc_stream_t *s;
                int64_t offset = 0;
                double bytes = 0;

                make_records(f, recs, &rng);
                for (int r = 0; r < NREC; r++)
                        bytes += (double)recs[r].size;
                sc_decode_spec_defaults(&spec, f);
                spec.numel = NUMEL;
                spec.scale = 1.0f / 255.0f;
                spec.mean = 0.2860f;
                spec.std = 0.3530f;
                strcpy(spec.features_path, "$.pixels");
                if (sc_decode_spec_check(&spec, err, sizeof(err))) {
                        fprintf(stderr, "bench_ingest: %s\n", err);
                        return 1;
                }
                sc_stream_spec_defaults(&sspec);
                sspec.cap = 8192;
                if (sc_stream_new(&s, &sspec, NUMEL, err, sizeof(err))) {
                        fprintf(stderr, "bench_ingest: %s\n", err);
                        return 1;
                }
                double dec = run(&spec, recs, NULL, secs, &offset);
                double push = run(&spec, recs, s, secs, &offset);
                printf("%-6s %12.0f %12.0f %14.0f %10.1f\n", sc_decode_format_name(f), bytes / NREC,
                       dec, push, push * bytes / NREC / 1e6);
                if (sc_stream_check(s, err, sizeof(err)))
                        fprintf(stderr, "bench_ingest: %s\n", err);
                sc_stream_destroy(s);
                for (int r = 0; r < NREC; r++)
                        free(recs[r].value);
        }
        return 0;
}
