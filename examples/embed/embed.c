/* embed.c — a minimal program embedding scadles through its public C API:
 * reads Fashion-MNIST's training images (gzip IDX files), pushes each one as
 * a Kafka-style record (label in the key) into a worker that trains on its
 * own thread, then prints the test accuracy from the final statistics.
 *
 *   usage: embed JOB.json [PASSES] [DATA_DIR]
 *
 * Build: make -C examples/embed (uses the build directory's header and
 * library), or against an installed scadles: cc embed.c $(pkg-config
 * --cflags --libs scadles zlib). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "scadles.h"

static void on_log(const scadles_worker_t *w, int level, const char *line, void *opaque)
{
        if (level <= 5)
                fprintf(stderr, "embed: %s\n", line);
}

static void on_stats(scadles_worker_t *w, const char *json, void *opaque)
{
        if (strstr(json, "\"final\":true"))
                printf("final statistics: %s\n", json);
        else
                fprintf(stderr, "stats: %.120s...\n", json);
}

/* Reads a whole gzip file; NULL on error. */
static unsigned char *slurp(const char *path, size_t *n)
{
        gzFile f = gzopen(path, "rb");
        size_t cap = 1 << 20, len = 0;
        unsigned char *buf = malloc(cap);
        int got;
        if (!f || !buf) {
                free(buf);
                if (f)
                        gzclose(f);
                return NULL;
        }
        while ((got = gzread(f, buf + len, (unsigned)(cap - len))) > 0) {
                len += (size_t)got;
                if (len == cap) {
                        unsigned char *nb = realloc(buf, cap *= 2);
                        if (!nb) {
                                free(buf);
                                gzclose(f);
                                return NULL;
                        }
                        buf = nb;
                }
        }
        gzclose(f);
        *n = len;
        return buf;
}

int main(int argc, char **argv)
{
        char err[1024], path[1024];
        if (argc < 2) {
                fprintf(stderr, "usage: embed JOB.json [PASSES] [DATA_DIR]\n");
                return 2;
        }
        int passes = argc > 2 ? atoi(argv[2]) : 3;
        const char *dir = argc > 3 ? argv[3] : "/usr/share/datasets/fashion-mnist";
        size_t ni, nl;
        snprintf(path, sizeof(path), "%s/train-images-idx3-ubyte.gz", dir);
        unsigned char *img = slurp(path, &ni);
        snprintf(path, sizeof(path), "%s/train-labels-idx1-ubyte.gz", dir);
        unsigned char *lab = slurp(path, &nl);
        if (!img || !lab || ni < 16 || nl < 8) {
                fprintf(stderr, "embed: cannot read Fashion-MNIST from %s\n", dir);
                return 1;
        }
        size_t n = nl - 8 < (ni - 16) / 784 ? nl - 8 : (ni - 16) / 784;

        scadles_conf_t *conf = scadles_conf_new();
        if (!conf || scadles_conf_load(conf, argv[1], err, sizeof(err)) ||
            scadles_conf_set(conf, "queue.block.ms", "-1", err, sizeof(err))) {
                fprintf(stderr, "embed: %s\n", conf ? err : "out of memory");
                return 2;
        }
        scadles_conf_set_log_cb(conf, on_log);
        scadles_conf_set_stats_cb(conf, on_stats);
        scadles_conf_set(conf, "statistics.interval.ms", "5000", err, sizeof(err));
        scadles_worker_t *w = scadles_worker_new(conf, err, sizeof(err));
        if (!w) {
                fprintf(stderr, "embed: %s\n", err);
                scadles_conf_destroy(conf);
                return 2;
        }
        /* conf is the worker's now. */
        scadles_start(w);
        int64_t offset = 0;
        for (int p = 0; p < passes; p++)
                for (size_t i = 0; i < n; i++, offset++) {
                        char key = (char)('0' + lab[8 + i]);
                        scadles_resp_err_t e = scadles_push(w, "fmnist", 0, offset, &key, 1,
                                                            img + 16 + i * 784, 784, NULL, 0, -1);
                        if (e) {
                                fprintf(stderr, "embed: push: %s\n", scadles_err2str(e));
                                break;
                        }
                }
        scadles_flush(w, -1);
        int rc = scadles_finish(w, 10000, err, sizeof(err)) ? 1 : 0;
        if (rc)
                fprintf(stderr, "embed: %s\n", err);
        scadles_destroy(w);
        free(img);
        free(lab);
        return rc;
}
