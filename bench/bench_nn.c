/* bench_nn.c — training throughput of the MLP 784-256-128-10 and the small
 * CNN on 1x28x28 inputs: samples/s of a full step (forward, loss, backward,
 * SGD update; the best of 5 windows); the GFLOP/s of the products the steps
 * actually did (gflops: conv2d's sparse backward pass skips the zeros of its
 * output gradient, and only the multiply-adds it did count); the same
 * steps counted as dense products (dense_gflops: what a dense
 * implementation, PyTorch's included, has to do for the same samples/s); and
 * the GFLOP/s of plain cblas_sgemm calls of the dense shapes (OpenBLAS
 * threaded over the same thread count) as an upper bound.
 *
 * With --forward 1 it times inference instead (sc_model_eval_batch: the
 * forward pass of `scadles eval` and `scadles predict`), against sgemm
 * calls of the forward shapes only: the ceiling of a predictor's records/s
 * on that many threads (gflops there is dense_gflops: inference does the
 * dense products).
 *
 * Usage: bench_nn [--seconds S] [--models mlp,cnn] [--batches 16,64,256]
 *                 [--threads 1,2] [--repeat N] [--forward 0|1]
 * The thread counts of one model and batch run back to back, so on a shared
 * machine they see the same load; --repeat runs the whole sweep N times.
 * Each line: "nn model=<m> batch=<B> threads=<T> samples_per_s=<x>
 * step_ms=<x> gflops=<x> dense_gflops=<x> sgemm_gflops=<x>" ("nn-forward"
 * with --forward 1). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sc_nn.h"
#include "sc_optim.h"
#include "sc_rng.h"

static double now(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void mlp_spec(sc_model_spec_t *s)
{
        memset(s, 0, sizeof(*s));
        s->input = (sc_shape_t){1, 28, 28};
        s->loss = SC_LOSS_SOFTMAX_XENT;
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_FLATTEN};
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 256};
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_RELU};
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 128};
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_RELU};
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 10};
}

static void cnn_spec(sc_model_spec_t *s)
{
        memset(s, 0, sizeof(*s));
        s->input = (sc_shape_t){1, 28, 28};
        s->loss = SC_LOSS_SOFTMAX_XENT;
        s->layers[s->n_layers++] =
            (sc_layer_spec_t){.kind = SC_LAYER_CONV2D, .filters = 32, .kernel = 3, .padding = 1};
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_RELU};
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_MAXPOOL2D, .kernel = 2};
        s->layers[s->n_layers++] =
            (sc_layer_spec_t){.kind = SC_LAYER_CONV2D, .filters = 64, .kernel = 3, .padding = 1};
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_RELU};
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_MAXPOOL2D, .kernel = 2};
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_FLATTEN};
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 128};
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_RELU};
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 10};
}

/* The sgemm shapes (M, N, K) of one training step, with whole-batch convs. */
typedef struct shape3 {
        int m, n, k;
} shape3_t;

/* The sgemm shapes of a step, or of the forward pass alone (forward). */
static int step_gemms(const char *model, int B, int forward, shape3_t *g)
{
        int n = 0;
        if (!strcmp(model, "mlp")) {
                const int d[4] = {784, 256, 128, 10};
                for (int i = 0; i < 3; i++) {
                        g[n++] = (shape3_t){d[i + 1], B, d[i]}; /* forward */
                        if (forward)
                                continue;
                        g[n++] = (shape3_t){d[i + 1], d[i], B}; /* weight grad */
                        if (i)
                                g[n++] = (shape3_t){d[i], B, d[i + 1]}; /* input grad */
                }
        } else if (forward) {
                g[n++] = (shape3_t){32, B * 784, 9};
                g[n++] = (shape3_t){64, B * 196, 288};
                g[n++] = (shape3_t){128, B, 3136};
                g[n++] = (shape3_t){10, B, 128};
        } else {
                g[n++] = (shape3_t){32, B * 784, 9};
                g[n++] = (shape3_t){32, 9, B * 784};
                g[n++] = (shape3_t){64, B * 196, 288};
                g[n++] = (shape3_t){64, 288, B * 196};
                g[n++] = (shape3_t){288, B * 196, 64};
                g[n++] = (shape3_t){128, B, 3136};
                g[n++] = (shape3_t){128, 3136, B};
                g[n++] = (shape3_t){3136, B, 128};
                g[n++] = (shape3_t){10, B, 128};
                g[n++] = (shape3_t){10, 128, B};
                g[n++] = (shape3_t){128, B, 10};
        }
        return n;
}

static double gemm_flops(const shape3_t *g, int n)
{
        double f = 0;
        for (int i = 0; i < n; i++)
                f += 2.0 * g[i].m * g[i].n * g[i].k;
        return f;
}

/* GFLOP/s of plain sgemm calls of the step's shapes. */
static double sgemm_rate(const shape3_t *g, int n, double seconds)
{
        size_t big = 0;
        for (int i = 0; i < n; i++) {
                size_t a = (size_t)g[i].m * g[i].k, b = (size_t)g[i].k * g[i].n;
                size_t c = (size_t)g[i].m * g[i].n;
                big = a > big ? a : big;
                big = b > big ? b : big;
                big = c > big ? c : big;
        }
        float *A = calloc(big, sizeof(float)), *Bm = calloc(big, sizeof(float));
        float *C = calloc(big, sizeof(float));
        if (!A || !Bm || !C) {
                free(A);
                free(Bm);
                free(C);
                return 0;
        }
        for (size_t i = 0; i < big; i++) {
                A[i] = 0.001f * (float)(i % 13);
                Bm[i] = 0.002f * (float)(i % 7);
        }
        double best = 1e30;
        for (int w = 0; w < 3; w++) {
                long reps = 0;
                double t0 = now(), dt;
                do {
                        for (int i = 0; i < n; i++)
                                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g[i].m,
                                            g[i].n, g[i].k, 1.0f, A, g[i].k, Bm, g[i].n, 0.0f, C,
                                            g[i].n);
                        reps++;
                        dt = now() - t0;
                } while (dt < seconds / 3);
                if (dt / (double)reps < best)
                        best = dt / (double)reps;
        }
        free(A);
        free(Bm);
        free(C);
        return gemm_flops(g, n) / best / 1e9;
}

/* One timed window of seconds: training steps, or forward passes into
 * out (forward); the seconds per step and the multiply-adds of a step, or
 * -1 when a step failed (out of memory: the model returns NaN). */
static double window(sc_model_t *m, sc_sgd_t *sgd, const float *x, const int32_t *y, int B,
                     sc_rng_t *rng, float *out, double seconds, double *macs_per_step)
{
        long steps = 0;
        double t0 = now(), dt, macs = 0;
        do {
                if (out) {
                        if (isnan(sc_model_eval_batch(m, x, NULL, NULL, B, NULL, out)))
                                return -1;
                } else {
                        if (isnan(sc_model_train_batch(m, x, y, NULL, B, rng, NULL)))
                                return -1;
                        macs += sc_model_last_step_macs(m);
                        sc_sgd_step(sgd, sc_model_params(m), sc_model_grads(m), 0.01f);
                }
                steps++;
                dt = now() - t0;
        } while (dt < seconds);
        *macs_per_step = macs / (double)steps;
        return dt / (double)steps;
}

static int run(const char *name, int B, int threads, int forward, double seconds)
{
        sc_model_spec_t spec;
        sc_model_t *m = NULL;
        sc_sgd_t sgd = {0};
        sc_rng_t rng;
        char err[256];
        shape3_t g[16];

        if (!strcmp(name, "mlp"))
                mlp_spec(&spec);
        else
                cnn_spec(&spec);
        sc_nn_set_threads(threads);
        if (sc_model_new(&m, &spec, err, sizeof(err))) {
                fprintf(stderr, "bench_nn: %s\n", err);
                return 1;
        }
        sc_rng_seed(&rng, 1);
        sc_model_init(m, &rng);
        sc_sgd_init(&sgd, &(sc_sgd_spec_t){.momentum = 0.9}, sc_model_nparams(m));
        float *x = malloc(sizeof(float) * 784 * (size_t)B);
        int32_t *y = malloc(sizeof(int32_t) * (size_t)B);
        float *out = forward ? malloc(sizeof(float) * 10 * (size_t)B) : NULL;
        if (!x || !y || (forward && !out)) {
                fprintf(stderr, "bench_nn: out of memory for a batch of %d\n", B);
                free(x);
                free(y);
                free(out);
                sc_model_destroy(m);
                return 1;
        }
        for (int i = 0; i < 784 * B; i++)
                x[i] = sc_rng_normal(&rng);
        for (int i = 0; i < B; i++)
                y[i] = (int32_t)sc_rng_below(&rng, 10);
        for (int i = 0; i < 3; i++) {
                sc_model_train_batch(m, x, y, NULL, B, &rng, NULL);
                sc_sgd_step(&sgd, sc_model_params(m), sc_model_grads(m), 0.01f);
        }
        /* Best of 5 windows: on a shared machine the least disturbed one. */
        double best = 1e30, best_macs = 0;
        for (int w = 0; w < 5; w++) {
                double macs, dt = window(m, &sgd, x, y, B, &rng, out, seconds / 5, &macs);
                if (dt < 0) {
                        fprintf(stderr, "bench_nn: %s at batch %d: out of memory\n", name, B);
                        free(x);
                        free(y);
                        free(out);
                        sc_sgd_free(&sgd);
                        sc_model_destroy(m);
                        return 1;
                }
                if (dt < best) {
                        best = dt;
                        best_macs = macs;
                }
        }
        int ng = step_gemms(name, B, forward, g);
        double flops = gemm_flops(g, ng) / B; /* per sample, dense */
        /* Inference does the dense products: gflops is dense_gflops. */
        if (forward)
                best_macs = flops * B / 2;
        double sps = B / best;
        /* The reference is OpenBLAS's own threading over the same threads
         * (the models split products across their pools and keep OpenBLAS
         * on one thread). */
        openblas_set_num_threads(threads);
        double ref = sgemm_rate(g, ng, seconds / 3);
        sc_nn_set_threads(threads);
        printf("%s model=%s batch=%d threads=%d samples_per_s=%.1f step_ms=%.3f gflops=%.2f "
               "dense_gflops=%.2f sgemm_gflops=%.2f\n",
               forward ? "nn-forward" : "nn", name, B, threads, sps, 1e3 * best,
               2.0 * best_macs / best / 1e9, sps * flops / 1e9, ref);
        fflush(stdout);
        free(x);
        free(y);
        free(out);
        sc_sgd_free(&sgd);
        sc_model_destroy(m);
        return 0;
}

static int parse_list(const char *s, int *v, int max)
{
        int n = 0;
        while (*s && n < max) {
                char *end;
                long x = strtol(s, &end, 10);
                if (end == s || x < 1 || x > 1 << 20)
                        return -1;
                v[n++] = (int)x;
                s = *end == ',' ? end + 1 : end;
                if (*end && *end != ',')
                        return -1;
        }
        return *s ? -1 : n; /* more items than max */
}

static int usage(void)
{
        fprintf(stderr, "usage: bench_nn [--seconds S] [--models mlp,cnn] [--batches 16,64,256] "
                        "[--threads 1,2] [--repeat N] [--forward 0|1]\n");
        return 2;
}

int main(int argc, char **argv)
{
        double seconds = 0.5;
        const char *models = "mlp,cnn";
        int batches[8] = {16, 64, 256}, nb = 3, threads[8] = {1, 2}, nt = 2, repeat = 1;
        int forward = 0;

        if (argc % 2 == 0)
                return usage(); /* an option without its value */
        for (int i = 1; i + 1 < argc; i += 2) {
                char *end = NULL;
                if (!strcmp(argv[i], "--seconds"))
                        seconds = strtod(argv[i + 1], &end);
                else if (!strcmp(argv[i], "--models"))
                        models = argv[i + 1];
                else if (!strcmp(argv[i], "--batches"))
                        nb = parse_list(argv[i + 1], batches, 8);
                else if (!strcmp(argv[i], "--threads"))
                        nt = parse_list(argv[i + 1], threads, 8);
                else if (!strcmp(argv[i], "--repeat"))
                        repeat = parse_list(argv[i + 1], &repeat, 1) == 1 ? repeat : 0;
                else if (!strcmp(argv[i], "--forward"))
                        forward = !strcmp(argv[i + 1], "1")   ? 1
                                  : !strcmp(argv[i + 1], "0") ? 0
                                                              : -1;
                else
                        nb = -1;
                if (nb < 1 || nt < 1 || repeat < 1 || forward < 0 || (end && *end) ||
                    !(seconds > 0 && seconds < 1e6))
                        return usage();
        }
        /* models: a comma-separated list of mlp and cnn */
        int want[2] = {0, 0};
        for (const char *s = models; *s;) {
                size_t n = strcspn(s, ",");
                if (n == 3 && !strncmp(s, "mlp", 3))
                        want[0] = 1;
                else if (n == 3 && !strncmp(s, "cnn", 3))
                        want[1] = 1;
                else
                        return usage();
                s += n + (s[n] == ',');
        }
        const char *names[2] = {"mlp", "cnn"};
        for (int r = 0; r < repeat; r++) {
                for (int mi = 0; mi < 2; mi++) {
                        if (!want[mi])
                                continue;
                        for (int b = 0; b < nb; b++)
                                for (int t = 0; t < nt; t++)
                                        if (run(names[mi], batches[b], threads[t], forward,
                                                seconds))
                                                return 1;
                }
        }
        return 0;
}
