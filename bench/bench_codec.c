/* bench_codec.c — encode and decode throughput of every gradient codec on a
 * flat buffer of 10M normal floats (GB/s of float32 input), with the bytes
 * per message and the compression ratio, timed on the thread's CPU clock.
 * Usage: bench_codec [n] [tensors]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sc_codec.h"
#include "sc_wire.h"

/* Thread CPU time: the figures stay meaningful on a machine shared with
 * other jobs (memory contention still shows). */
static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct bench_case {
        const char *label;
        sc_codec_id_t id;
        double ratio;
        int ef;
        int stochastic;
} bench_case_t;

int main(int argc, char **argv)
{
        size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
        int ntensors = argc > 2 ? atoi(argv[2]) : 1;
        const bench_case_t cases[] = {
            {"none", SC_CODEC_NONE, 0.01, 0, 0},
            {"topk 1%", SC_CODEC_TOPK, 0.01, 0, 0},
            {"topk 1% +EF", SC_CODEC_TOPK, 0.01, 1, 0},
            {"topk 10% +EF", SC_CODEC_TOPK, 0.1, 1, 0},
            {"randk 1%", SC_CODEC_RANDK, 0.01, 0, 0},
            {"adacomp 1%", SC_CODEC_ADACOMP, 0.01, 0, 0},
            {"adaptive 10% +EF", SC_CODEC_ADAPTIVE, 0.1, 1, 0},
            {"q8", SC_CODEC_Q8, 0.01, 0, 0},
            {"q8 stochastic", SC_CODEC_Q8, 0.01, 0, 1},
            {"fp16", SC_CODEC_FP16, 0.01, 0, 0},
        };
        const int reps = 3;
        char errstr[256];
        float *g, *acc;
        sc_tensor_view_t *views;
        sc_rng_t rng;
        sc_buf_t buf;

        if (n == 0 || ntensors < 1 || (size_t)ntensors > n) {
                fprintf(stderr, "usage: bench_codec [n] [tensors]\n");
                return 2;
        }
        g = malloc(n * sizeof(*g));
        acc = calloc(n, sizeof(*acc));
        views = calloc((size_t)ntensors, sizeof(*views));
        if (!g || !acc || !views)
                return 1;
        sc_rng_seed(&rng, 1);
        for (size_t i = 0; i < n; i++)
                g[i] = 0.01f * sc_rng_normal(&rng);
        for (int t = 0; t < ntensors; t++) {
                snprintf(views[t].name, sizeof(views[t].name), "t%d", t);
                views[t].offset = n / (size_t)ntensors * (size_t)t;
                views[t].numel = t == ntensors - 1 ? n - views[t].offset : n / (size_t)ntensors;
        }
        sc_buf_init(&buf);
        printf("codec bench: %zu floats (%.1f MB) in %d tensor(s), best of %d, thread CPU time\n",
               n, 4e-6 * (double)n, ntensors, reps);
        printf("%-18s %10s %10s %12s %9s\n", "codec", "enc GB/s", "dec GB/s", "bytes/msg", "ratio");
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
                const bench_case_t *bc = &cases[c];
                sc_codec_params_t p;
                sc_codec_t *codec;
                double enc = 1e30, dec = 1e30;

                sc_codec_params_default(&p, bc->id);
                p.ratio = bc->ratio;
                p.error_feedback = bc->ef;
                p.stochastic = bc->stochastic;
                if (sc_codec_new(&codec, bc->id, &p, n, views, ntensors, errstr, sizeof(errstr))) {
                        fprintf(stderr, "%s: %s\n", bc->label, errstr);
                        return 1;
                }
                for (int r = 0; r < reps; r++) {
                        double t0 = now_s();
                        buf.len = 0;
                        if (sc_codec_encode(codec, g, &rng, &buf, errstr, sizeof(errstr))) {
                                fprintf(stderr, "%s: %s\n", bc->label, errstr);
                                return 1;
                        }
                        double t1 = now_s();
                        if (sc_codec_decode_add(buf.data, buf.len, acc, n, 1.0f, errstr,
                                                sizeof(errstr))) {
                                fprintf(stderr, "%s: %s\n", bc->label, errstr);
                                return 1;
                        }
                        double t2 = now_s();
                        enc = t1 - t0 < enc ? t1 - t0 : enc;
                        dec = t2 - t1 < dec ? t2 - t1 : dec;
                }
                printf("%-18s %10.2f %10.2f %12zu %9.1f\n", bc->label, 4e-9 * (double)n / enc,
                       4e-9 * (double)n / dec, buf.len, 4.0 * (double)n / (double)buf.len);
                sc_codec_destroy(codec);
        }
        /* Wire framing: a model shard message with all n parameters (CRC32C over
         * every byte on both sides) and its decode. */
        {
                sc_wire_model_t m = {
                    .shard = 0, .version = 1, .count = (uint32_t)n, .grad_offset = -1, .params = g};
                sc_wire_msg_t msg;
                double enc = 1e30, dec = 1e30;
                for (int r = 0; r < reps; r++) {
                        double t0 = now_s();
                        buf.len = 0;
                        if (sc_wire_encode_model(&buf, &m, errstr, sizeof(errstr))) {
                                fprintf(stderr, "wire model: %s\n", errstr);
                                return 1;
                        }
                        double t1 = now_s();
                        if (sc_wire_decode(buf.data, buf.len, &msg, errstr, sizeof(errstr))) {
                                fprintf(stderr, "wire model: %s\n", errstr);
                                return 1;
                        }
                        sc_wire_get_f32s(acc, msg.u.model.params, n);
                        double t2 = now_s();
                        enc = t1 - t0 < enc ? t1 - t0 : enc;
                        dec = t2 - t1 < dec ? t2 - t1 : dec;
                }
                printf("%-18s %10.2f %10.2f %12zu %9.1f\n", "wire model msg",
                       4e-9 * (double)n / enc, 4e-9 * (double)n / dec, buf.len,
                       4.0 * (double)n / (double)buf.len);
        }
        printf("(an update message adds %d bytes of framing to its codec payload)\n",
               SC_WIRE_UPDATE_OVERHEAD);
        sc_buf_free(&buf);
        free(views);
        free(acc);
        free(g);
        return 0;
}
