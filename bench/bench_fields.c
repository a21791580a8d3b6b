/* bench_fields.c — records/s of the json decoder on named-field events
 * against the json array decoder on records of the same size, side by side
 * in one run. Named: examples/iot's machine events (8 fields: a hashed
 * device id, a categorical kind, six numeric sensors with missing
 * indicators, 4% of them null; a string status label; 33 features).
 * Array: {"features": [k numbers], "label": n} with k chosen so that the
 * records are as long as the named ones on average. Also csv with named
 * columns, and Avro framed for a Schema Registry (examples/iot's
 * machine-v1.avsc, the schema compiled once as a registry's answer would
 * be), on the same events. The goals (issue: real feeds) are named-field
 * json at least half the array decoder's rate, and Avro at least json's.
 * Usage: bench_fields [seconds per case, default 0.5]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sc_avro.h"
#include "sc_decode.h"
#include "sc_rng.h"

#define NREC 1024

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *const kinds[] = {"pump", "fan", "compressor", "valve"};
static const char *const status[] = {"ok", "overheat", "bearing_wear", "leak"};
static const char *const sensors[] = {"temp", "vib", "pressure", "current", "rpm", "humidity"};

/* One event: the same content as json, csv and Avro. */
typedef struct event {
        unsigned device, kind, status, ts;
        int null[6];
        double reading[6]; /* two decimals */
} event_t;

static void event_of(sc_rng_t *rng, event_t *e)
{
        e->device = (unsigned)sc_rng_below(rng, 300);
        e->kind = (unsigned)sc_rng_below(rng, 4);
        for (int s = 0; s < 6; s++) {
                e->null[s] = sc_rng_below(rng, 100) < 4;
                e->reading[s] = (double)sc_rng_below(rng, 100000) / 100.0;
        }
        e->status = (unsigned)sc_rng_below(rng, 4);
        e->ts = (unsigned)sc_rng_below(rng, 1u << 30);
}

static char *named_json(const event_t *e, size_t *size)
{
        char *buf = malloc(512), *p = buf;
        p += sprintf(p, "{\"device\":\"m-%04u\",\"kind\":\"%s\"", e->device, kinds[e->kind]);
        for (int s = 0; s < 6; s++) {
                p += sprintf(p, ",\"%s\":", sensors[s]);
                p += e->null[s] ? sprintf(p, "null") : sprintf(p, "%.2f", e->reading[s]);
        }
        p += sprintf(p, ",\"status\":\"%s\",\"ts\":%u}", status[e->status], e->ts);
        *size = (size_t)(p - buf);
        return buf;
}

static char *named_csv(const event_t *e, size_t *size)
{
        char *buf = malloc(512), *p = buf;
        p += sprintf(p, "%s,m-%04u,%s", status[e->status], e->device, kinds[e->kind]);
        for (int s = 0; s < 6; s++) {
                *p++ = ',';
                if (!e->null[s])
                        p += sprintf(p, "%.2f", e->reading[s]);
        }
        *size = (size_t)(p - buf);
        return buf;
}

/* examples/iot/machine-v1.avsc, as a registry would answer it. */
static const char *const avro_schema =
    "{\"type\":\"record\",\"name\":\"MachineEvent\",\"namespace\":\"example.iot\",\"fields\":["
    "{\"name\":\"device\",\"type\":\"string\"},{\"name\":\"kind\",\"type\":\"string\"},"
    "{\"name\":\"temp\",\"type\":[\"null\",\"double\"],\"default\":null},"
    "{\"name\":\"vib\",\"type\":[\"null\",\"double\"],\"default\":null},"
    "{\"name\":\"pressure\",\"type\":[\"null\",\"double\"],\"default\":null},"
    "{\"name\":\"current\",\"type\":[\"null\",\"double\"],\"default\":null},"
    "{\"name\":\"rpm\",\"type\":[\"null\",\"double\"],\"default\":null},"
    "{\"name\":\"humidity\",\"type\":[\"null\",\"double\"],\"default\":null},"
    "{\"name\":\"status\",\"type\":\"string\"},{\"name\":\"ts\",\"type\":\"long\"}]}";

/* Avro's binary encoding: zig-zag varints, strings with their length. */
static unsigned char *avro_long(unsigned char *p, long long v)
{
        unsigned long long u = ((unsigned long long)v << 1) ^ (unsigned long long)(v >> 63);
        while (u >= 0x80) {
                *p++ = (unsigned char)(u | 0x80);
                u >>= 7;
        }
        *p++ = (unsigned char)u;
        return p;
}

static unsigned char *avro_str(unsigned char *p, const char *s)
{
        size_t n = strlen(s);
        p = avro_long(p, (long long)n);
        memcpy(p, s, n);
        return p + n;
}

static char *named_avro(const event_t *e, size_t *size)
{
        unsigned char *buf = malloc(512), *p = buf;
        char dev[16];
        memcpy(p, "\0\0\0\0\1", 5); /* schema id 1 */
        p += 5;
        snprintf(dev, sizeof(dev), "m-%04u", e->device);
        p = avro_str(p, dev);
        p = avro_str(p, kinds[e->kind]);
        for (int s = 0; s < 6; s++) {
                p = avro_long(p, e->null[s] ? 0 : 1);
                if (!e->null[s]) {
                        memcpy(p, &e->reading[s], 8);
                        p += 8;
                }
        }
        p = avro_str(p, status[e->status]);
        p = avro_long(p, e->ts);
        *size = (size_t)(p - buf);
        return (char *)buf;
}

static char *array_json(sc_rng_t *rng, int k, size_t *size)
{
        char *buf = malloc(64 + 16 * (size_t)k), *p = buf;
        p += sprintf(p, "{\"features\":[");
        for (int i = 0; i < k; i++)
                p += sprintf(p, i ? ",%.2f" : "%.2f", (double)sc_rng_below(rng, 100000) / 100.0);
        p += sprintf(p, "],\"label\":%u}", (unsigned)sc_rng_below(rng, 4));
        *size = (size_t)(p - buf);
        return buf;
}

/* The iot example's fields: json paths, or csv columns 1.. (label in 0). */
static sc_fields_t *iot_fields(int csv)
{
        sc_fields_t *fs = sc_fields_new();
        sc_field_t f;
        char err[256];
        sc_field_defaults(&f);
        snprintf(f.path, sizeof(f.path), "%s", csv ? "" : "device");
        f.column = csv ? 1 : -1;
        f.kind = SC_FIELD_HASHED;
        f.missing = SC_MISSING_ZERO;
        f.buckets = 16;
        sc_fields_add(fs, &f, err, sizeof(err));
        sc_field_defaults(&f);
        snprintf(f.path, sizeof(f.path), "%s", csv ? "" : "kind");
        f.column = csv ? 2 : -1;
        f.kind = SC_FIELD_CATEGORICAL;
        f.missing = SC_MISSING_ZERO;
        f.vocab = sc_vocab_new();
        for (int i = 0; i < 4; i++)
                sc_vocab_add(f.vocab, kinds[i], strlen(kinds[i]));
        sc_fields_add(fs, &f, err, sizeof(err));
        for (int s = 0; s < 6; s++) {
                sc_field_defaults(&f);
                snprintf(f.path, sizeof(f.path), "%s", csv ? "" : sensors[s]);
                f.column = csv ? 3 + s : -1;
                f.mean = 500;
                f.std = 300;
                f.indicator = 1;
                sc_fields_add(fs, &f, err, sizeof(err));
        }
        return fs;
}

/* The processor the figures were measured on (/proc/cpuinfo's model name). */
static void print_cpu(void)
{
        char line[256];
        FILE *f = fopen("/proc/cpuinfo", "r");
        while (f && fgets(line, sizeof(line), f))
                if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
                        printf("processor:%s", strchr(line, ':') + 1);
                        break;
                }
        if (f)
                fclose(f);
}

/* Decodes the records round and round for about secs; records/s. */
static double run(const sc_decode_spec_t *spec, char **recs, const size_t *sizes, double secs)
{
        static float x[4096];
        char err[200];
        long n = 0, faults = 0;
        double t0 = now_s(), t = t0;
        while (t - t0 < secs) {
                for (int k = 0; k < 1024; k++, n++) {
                        sc_record_t rec = {.value = recs[n % NREC], .value_size = sizes[n % NREC]};
                        int32_t label;
                        if (sc_decode_record(spec, &rec, x, &label, err, sizeof(err)) !=
                            SC_DECODE_OK)
                                faults++;
                }
                t = now_s();
        }
        if (faults)
                fprintf(stderr, "bench_fields: %ld records failed: %s\n", faults, err);
        return (double)n / (t - t0);
}

int main(int argc, char **argv)
{
        double secs = argc > 1 ? atof(argv[1]) : 0.5;
        static char *named[NREC], *arr[NREC], *csv[NREC], *avro[NREC];
        static size_t nsz[NREC], asz[NREC], csz[NREC], vsz[NREC];
        double nbytes = 0, abytes = 0, cbytes = 0, vbytes = 0;
        char err[256];
        sc_rng_t rng;

        sc_rng_seed(&rng, 1);
        for (int r = 0; r < NREC; r++) {
                event_t e;
                event_of(&rng, &e);
                named[r] = named_json(&e, &nsz[r]);
                csv[r] = named_csv(&e, &csz[r]);
                avro[r] = named_avro(&e, &vsz[r]);
                nbytes += (double)nsz[r];
                cbytes += (double)csz[r];
                vbytes += (double)vsz[r];
        }
        /* "%.2f" numbers of 0..999.99 average about 6 bytes and a comma */
        int k = (int)((nbytes / NREC - 27.0) / 7.0 + 0.5);
        for (int r = 0; r < NREC; r++) {
                arr[r] = array_json(&rng, k, &asz[r]);
                abytes += (double)asz[r];
        }

        sc_vocab_t *labels = sc_vocab_new();
        for (int i = 0; i < 4; i++)
                sc_vocab_add(labels, status[i], strlen(status[i]));
        sc_fields_t *fj = iot_fields(0), *fc = iot_fields(1);
        sc_decode_spec_t sn, sa, sc, sv;
        sc_decode_spec_defaults(&sn, SC_DECODE_JSON);
        sn.fields = fj;
        sn.labels = labels;
        sn.numel = fj->width;
        sn.n_classes = 4;
        snprintf(sn.label_path, sizeof(sn.label_path), "$.status");
        sc_decode_spec_defaults(&sa, SC_DECODE_JSON);
        sa.numel = (size_t)k;
        sa.n_classes = 4;
        sc_decode_spec_defaults(&sc, SC_DECODE_CSV);
        sc.fields = fc;
        sc.labels = labels;
        sc.numel = fc->width;
        sc.n_classes = 4;
        sv = sn;
        sv.format = SC_DECODE_AVRO;
        sc_avro_cache_t *cache = sc_avro_cache_new(&sv);
        if (!cache ||
            sc_avro_cache_put(cache, 1, avro_schema, strlen(avro_schema), err, sizeof(err))) {
                fprintf(stderr, "bench_fields: avro: %s\n", cache ? err : "out of memory");
                return 1;
        }
        sv.avro = cache;
        const sc_decode_spec_t *specs[] = {&sa, &sn, &sc, &sv};
        for (int i = 0; i < 4; i++)
                if (sc_decode_spec_check(specs[i], err, sizeof(err))) {
                        fprintf(stderr, "bench_fields: %s\n", err);
                        return 1;
                }
        double ra = run(&sa, arr, asz, secs), rn = run(&sn, named, nsz, secs),
               rc = run(&sc, csv, csz, secs), rv = run(&sv, avro, vsz, secs);
        printf("%-34s %10s %12s %8s %10s\n", "records", "bytes/rec", "decode/s", "MB/s",
               "features");
        printf("%-34s %10.0f %12.0f %8.1f %10d\n", "json array (features_path)", abytes / NREC, ra,
               ra * abytes / NREC / 1e6, k);
        printf("%-34s %10.0f %12.0f %8.1f %10zu\n", "json named fields (8 fields)", nbytes / NREC,
               rn, rn * nbytes / NREC / 1e6, fj->width);
        printf("%-34s %10.0f %12.0f %8.1f %10zu\n", "csv named columns (8 fields)", cbytes / NREC,
               rc, rc * cbytes / NREC / 1e6, fc->width);
        printf("%-34s %10.0f %12.0f %8.1f %10zu\n", "avro named fields (8 fields)", vbytes / NREC,
               rv, rv * vbytes / NREC / 1e6, fj->width);
        printf("named-field json / array json: %.2f of the records/s (goal >= 0.5)\n", rn / ra);
        printf("avro / named-field json: %.2f of the records/s (goal >= 1)\n", rv / rn);
        print_cpu();
        sc_fields_unref(fj);
        sc_fields_unref(fc);
        sc_vocab_unref(labels);
        for (int r = 0; r < NREC; r++) {
                free(named[r]);
                free(arr[r]);
                free(csv[r]);
                free(avro[r]);
        }
        sc_avro_cache_free(cache);
        return 0;
}
