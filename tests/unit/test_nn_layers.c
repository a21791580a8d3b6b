/* test_nn_layers.c — every layer and both losses: backward passes against
 * central finite differences, conv2d against the direct reference, sgemm
 * against the naive gemm, batchnorm's statistics in training and evaluation,
 * and loss values against hand-computed ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_nn.h"
#include "../../core/nn/nn_impl.h"

/* ---- helpers ---------------------------------------------------------- */

static sc_layer_spec_t L(sc_layer_kind_t kind)
{
        return (sc_layer_spec_t){.kind = kind};
}

static sc_layer_spec_t dense(int units)
{
        return (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = units};
}

static sc_layer_spec_t conv(int filters, int k, int stride, int pad)
{
        return (sc_layer_spec_t){.kind = SC_LAYER_CONV2D,
                                 .filters = filters,
                                 .kernel = k,
                                 .stride = stride,
                                 .padding = pad};
}

static sc_layer_spec_t pool(int k, int stride)
{
        return (sc_layer_spec_t){.kind = SC_LAYER_MAXPOOL2D, .kernel = k, .stride = stride};
}

static void fill_normal(float *v, size_t n, sc_rng_t *rng, float sd)
{
        for (size_t i = 0; i < n; i++)
                v[i] = sd * sc_rng_normal(rng);
}

/* One model with its batch: inputs, labels or targets, and the rng state
 * dropout starts from, so every loss evaluation sees the same masks. */
typedef struct fd_case {
        sc_model_t *m;
        int B;
        float *x, *t;
        int32_t *y;
        sc_rng_t drop;
} fd_case_t;

static float fd_loss(fd_case_t *c)
{
        sc_rng_t r = c->drop;
        return sc_model_train_batch(c->m, c->x, c->y, c->t, c->B, &r, NULL);
}

/* Builds spec over input, inits from seed, and checks every parameter (or
 * up to 48 per tensor, spread out) against central differences. */
static void check_grads(sc_shape_t input, const sc_layer_spec_t *layers, int n, sc_loss_kind_t loss,
                        int B, uint64_t seed, float eps, float rtol)
{
        sc_model_spec_t spec = {.input = input, .n_layers = n, .loss = loss};
        fd_case_t c = {.B = B};
        char err[256] = "";
        sc_rng_t rng;

        memcpy(spec.layers, layers, sizeof(*layers) * (size_t)n);
        assert_int_equal(sc_model_new(&c.m, &spec, err, sizeof(err)), SC_OK);
        sc_rng_seed(&rng, seed);
        sc_model_init(c.m, &rng);
        /* Non-zero biases so kinks do not line up with zero inputs. */
        for (int t = 0; t < sc_model_ntensors(c.m); t++) {
                const sc_tensor_view_t *v = sc_model_tensor(c.m, t);
                if (strstr(v->name, "bias"))
                        fill_normal(sc_model_params(c.m) + v->offset, v->numel, &rng, 0.1f);
        }
        size_t nin = sc_shape_numel(input), nout = sc_shape_numel(sc_model_output_shape(c.m));
        c.x = malloc(sizeof(float) * nin * B);
        c.t = malloc(sizeof(float) * nout * B);
        c.y = malloc(sizeof(int32_t) * B);
        assert_non_null(c.x);
        assert_non_null(c.t);
        assert_non_null(c.y);
        fill_normal(c.x, nin * B, &rng, 1.0f);
        fill_normal(c.t, nout * B, &rng, 1.0f);
        for (int i = 0; i < B; i++)
                c.y[i] = (int32_t)sc_rng_below(&rng, (uint32_t)nout);
        if (loss == SC_LOSS_SOFTMAX_XENT) {
                free(c.t);
                c.t = NULL;
        } else {
                free(c.y);
                c.y = NULL;
        }
        sc_rng_seed(&c.drop, seed + 1);

        size_t np = sc_model_nparams(c.m);
        float *g = malloc(sizeof(float) * np);
        assert_non_null(g);
        float l0 = fd_loss(&c);
        assert_false(isnan(l0));
        memcpy(g, sc_model_grads(c.m), sizeof(float) * np);
        float *p = sc_model_params(c.m);
        double gmax = 0;
        for (size_t i = 0; i < np; i++)
                gmax = fmax(gmax, fabs(g[i]));
        assert_true(gmax > 0);
        int bad = 0, checked = 0;
        for (int t = 0; t < sc_model_ntensors(c.m); t++) {
                const sc_tensor_view_t *v = sc_model_tensor(c.m, t);
                size_t step = v->numel > 48 ? v->numel / 48 : 1;
                for (size_t j = 0; j < v->numel; j += step) {
                        size_t i = v->offset + j;
                        float keep = p[i];
                        p[i] = keep + eps;
                        double lp = fd_loss(&c);
                        p[i] = keep - eps;
                        double lm = fd_loss(&c);
                        p[i] = keep;
                        double num = (lp - lm) / (2.0 * eps);
                        double tol = rtol * fmax(fabs(num), fabs(g[i])) + 2e-3 * gmax;
                        checked++;
                        if (fabs(num - g[i]) > tol) {
                                if (bad < 5)
                                        fprintf(stderr, "  %s[%zu]: analytic %g numeric %g\n",
                                                v->name, j, (double)g[i], num);
                                bad++;
                        }
                }
        }
        assert_true(checked > 0);
        if (bad)
                fprintf(stderr, "  seed %llu: %d of %d differ\n", (unsigned long long)seed, bad,
                        checked);
        assert_int_equal(bad, 0);
        free(g);
        free(c.x);
        free(c.t);
        free(c.y);
        sc_model_destroy(c.m);
}

/* ---- finite differences per layer ------------------------------------ */

static void dense_grads(void **state)
{
        sc_layer_spec_t a[] = {dense(5)};
        check_grads((sc_shape_t){7, 1, 1}, a, 1, SC_LOSS_MSE, 3, 1, 1e-2f, 1e-2f);
        /* Second dense reads a feature-major input; its dx reaches the first. */
        sc_layer_spec_t b[] = {dense(6), dense(4), dense(3)};
        check_grads((sc_shape_t){5, 1, 1}, b, 3, SC_LOSS_MSE, 4, 2, 1e-2f, 1e-2f);
        /* Big enough that sgemm (with transposed operands) runs instead of
         * the small-batch kernel. */
        sc_layer_spec_t c[] = {dense(70), L(SC_LAYER_TANH), dense(90), dense(5)};
        check_grads((sc_shape_t){100, 1, 1}, c, 4, SC_LOSS_MSE, 90, 3, 1e-2f, 2e-2f);
}

static void conv2d_grads(void **state)
{
        for (int stride = 1; stride <= 2; stride++) {
                for (int pad = 0; pad <= 1; pad++) {
                        sc_layer_spec_t a[] = {conv(3, 3, stride, pad), conv(2, 3, stride, pad),
                                               L(SC_LAYER_FLATTEN), dense(3)};
                        check_grads((sc_shape_t){2, 9, 8}, a, 4, SC_LOSS_MSE, 3,
                                    10 + stride * 2 + pad, 1e-2f, 1e-2f);
                }
        }
        /* Conv output straight into the loss (feature-major MSE). */
        sc_layer_spec_t b[] = {conv(2, 2, 1, 0), conv(3, 2, 1, 1)};
        check_grads((sc_shape_t){1, 5, 5}, b, 2, SC_LOSS_MSE, 2, 20, 1e-2f, 1e-2f);
}

static void maxpool_grads(void **state)
{
        sc_layer_spec_t a[] = {conv(2, 3, 1, 1), pool(2, 0), L(SC_LAYER_FLATTEN), dense(3)};
        check_grads((sc_shape_t){1, 6, 6}, a, 4, SC_LOSS_MSE, 3, 30, 1e-3f, 2e-2f);
        /* Overlapping windows, odd sizes. */
        sc_layer_spec_t b[] = {conv(2, 2, 1, 0), pool(3, 2), L(SC_LAYER_FLATTEN), dense(2)};
        check_grads((sc_shape_t){2, 8, 7}, b, 4, SC_LOSS_MSE, 2, 31, 1e-3f, 2e-2f);
}

static void relu_grads(void **state)
{
        /* Fused into dense, then standalone after a pool. */
        sc_layer_spec_t a[] = {dense(8), L(SC_LAYER_RELU), dense(3)};
        check_grads((sc_shape_t){6, 1, 1}, a, 3, SC_LOSS_MSE, 4, 40, 1e-3f, 2e-2f);
        sc_layer_spec_t b[] = {conv(3, 3, 1, 1), L(SC_LAYER_RELU),    pool(2, 0),
                               L(SC_LAYER_RELU), L(SC_LAYER_FLATTEN), dense(2)};
        check_grads((sc_shape_t){1, 6, 6}, b, 6, SC_LOSS_MSE, 2, 41, 1e-3f, 2e-2f);
}

static void tanh_sigmoid_grads(void **state)
{
        sc_layer_kind_t kinds[2] = {SC_LAYER_TANH, SC_LAYER_SIGMOID};
        for (int i = 0; i < 2; i++) {
                sc_layer_spec_t a[] = {dense(7), L(kinds[i]), dense(3), L(kinds[i])};
                check_grads((sc_shape_t){5, 1, 1}, a, 4, SC_LOSS_MSE, 3, 50 + i, 1e-2f, 1e-2f);
                /* Not in place: after a pool. */
                sc_layer_spec_t b[] = {conv(2, 3, 1, 1), pool(2, 0), L(kinds[i]),
                                       L(SC_LAYER_FLATTEN), dense(2)};
                check_grads((sc_shape_t){1, 4, 4}, b, 5, SC_LOSS_MSE, 2, 52 + i, 1e-3f, 2e-2f);
        }
}

static void dropout_grads(void **state)
{
        sc_layer_spec_t a[] = {dense(10), (sc_layer_spec_t){.kind = SC_LAYER_DROPOUT, .rate = 0.3f},
                               dense(3)};
        check_grads((sc_shape_t){6, 1, 1}, a, 3, SC_LOSS_MSE, 4, 60, 1e-2f, 1e-2f);
        sc_layer_spec_t b[] = {conv(2, 3, 1, 1), pool(2, 0),
                               (sc_layer_spec_t){.kind = SC_LAYER_DROPOUT, .rate = 0.5f},
                               L(SC_LAYER_FLATTEN), dense(2)};
        check_grads((sc_shape_t){1, 4, 4}, b, 5, SC_LOSS_MSE, 2, 61, 1e-3f, 2e-2f);
}

static void flatten_and_xent_grads(void **state)
{
        /* Flatten of a batch-major input (alias), then xent. */
        sc_layer_spec_t a[] = {L(SC_LAYER_FLATTEN), dense(6), L(SC_LAYER_TANH), dense(4)};
        check_grads((sc_shape_t){2, 3, 2}, a, 4, SC_LOSS_SOFTMAX_XENT, 5, 70, 1e-2f, 1e-2f);
        /* Flatten of a feature-major flat vector (alias). */
        sc_layer_spec_t b[] = {dense(5), L(SC_LAYER_FLATTEN), dense(3)};
        check_grads((sc_shape_t){4, 1, 1}, b, 3, SC_LOSS_SOFTMAX_XENT, 3, 71, 1e-2f, 1e-2f);
}

static void batchnorm_grads(void **state)
{
        const sc_layer_spec_t bn = L(SC_LAYER_BATCHNORM);
        /* Over the features of a dense output (feature-major), then tanh. */
        sc_layer_spec_t a[] = {dense(6), bn, L(SC_LAYER_TANH), dense(3)};
        check_grads((sc_shape_t){5, 1, 1}, a, 4, SC_LOSS_MSE, 5, 80, 1e-2f, 2e-2f);
        /* Over conv channels (B * H * W values each), then relu and a pool. */
        sc_layer_spec_t b[] = {conv(3, 3, 1, 1),    bn,      L(SC_LAYER_RELU), pool(2, 0),
                               L(SC_LAYER_FLATTEN), dense(2)};
        check_grads((sc_shape_t){2, 4, 4}, b, 6, SC_LOSS_MSE, 3, 81, 1e-3f, 3e-2f);
        /* Batch-major inputs: after flatten (per feature) and on the model
         * input itself (per channel over H * W), into softmax xent. */
        sc_layer_spec_t c[] = {conv(2, 3, 1, 1), pool(2, 0), L(SC_LAYER_FLATTEN), bn, dense(4)};
        check_grads((sc_shape_t){1, 4, 4}, c, 5, SC_LOSS_SOFTMAX_XENT, 4, 82, 1e-2f, 2e-2f);
        sc_layer_spec_t f[] = {bn, L(SC_LAYER_FLATTEN), dense(3)};
        check_grads((sc_shape_t){2, 3, 3}, f, 3, SC_LOSS_SOFTMAX_XENT, 3, 85, 1e-2f, 2e-2f);
        /* A flat feature-major input (flatten aliases it), and between convs. */
        sc_layer_spec_t d[] = {dense(4), L(SC_LAYER_FLATTEN), bn, dense(3)};
        check_grads((sc_shape_t){3, 1, 1}, d, 4, SC_LOSS_SOFTMAX_XENT, 6, 83, 1e-2f, 2e-2f);
        sc_layer_spec_t e[] = {conv(2, 2, 1, 0), bn, conv(2, 2, 1, 0)};
        check_grads((sc_shape_t){1, 4, 4}, e, 3, SC_LOSS_MSE, 2, 84, 1e-2f, 2e-2f);
}

/* ---- standardize statistics ----------------------------------------- */

/* A standardize layer before a dense one: the warm-up's statistics are the
 * exact mean and population variance of its samples (merged batch by
 * batch), each warm-up batch is standardized with the statistics so far,
 * then they are frozen (decay 0) or move by decay; evaluation standardizes
 * with them; gradients flow through (finite differences). */
static void standardize_warmup_freeze_and_decay(void **state)
{
        sc_model_spec_t spec = {.input = {3, 1, 1}, .n_layers = 2, .loss = SC_LOSS_MSE};
        sc_model_t *m = NULL;
        sc_rng_t rng;
        char err[160];
        enum { B = 4, N = 40 };
        float x[N * 3], t[B * 2] = {0}, out[B * 3];

        sc_rng_seed(&rng, 7);
        for (int i = 0; i < N; i++) {
                x[i * 3 + 0] = 100.0f + 10.0f * sc_rng_normal(&rng);
                x[i * 3 + 1] = -3.0f + 0.01f * sc_rng_normal(&rng);
                x[i * 3 + 2] = (float)(i % 5);
        }
        spec.layers[0] = (sc_layer_spec_t){.kind = SC_LAYER_STANDARDIZE, .warmup = 20};
        spec.layers[1] = dense(2);
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_model_nstate(m), 7);
        assert_int_equal(sc_model_nparams(m), 8); /* the dense layer's only */
        sc_model_init(m, &rng);
        float *st = sc_model_state(m);
        assert_true(st[0] == 0.0f && st[3] == 1.0f && st[6] == 0.0f);

        /* the first batch is standardized with its own statistics */
        sc_model_train_batch(m, x, NULL, t, B, &rng, NULL);
        assert_true(st[6] == (float)B);
        for (int c = 0; c < 3; c++) {
                double s = 0, ss = 0;
                for (int i = 0; i < B; i++)
                        s += x[i * 3 + c];
                for (int i = 0; i < B; i++)
                        ss += (x[i * 3 + c] - s / B) * (x[i * 3 + c] - s / B);
                assert_true(fabs(st[c] - s / B) < 1e-4 * fmax(1, fabs(s / B)));
                assert_true(fabs(st[3 + c] - ss / B) < 1e-4 * fmax(1, ss / B));
        }
        /* through the warm-up: the statistics of its 20 samples, exactly */
        for (int k = 1; k < 5; k++)
                sc_model_train_batch(m, x + k * B * 3, NULL, t, B, &rng, NULL);
        assert_true(st[6] == 20.0f);
        float frozen[7];
        for (int c = 0; c < 3; c++) {
                double s = 0, ss = 0;
                for (int i = 0; i < 20; i++)
                        s += x[i * 3 + c];
                for (int i = 0; i < 20; i++)
                        ss += (x[i * 3 + c] - s / 20) * (x[i * 3 + c] - s / 20);
                assert_true(fabs(st[c] - s / 20) < 1e-4 * fmax(1, fabs(s / 20)));
                assert_true(fabs(st[3 + c] - ss / 20) < 1e-3 * fmax(1e-3, ss / 20));
        }
        memcpy(frozen, st, sizeof(frozen));
        /* frozen: later batches change nothing */
        for (int k = 5; k < 10; k++)
                sc_model_train_batch(m, x + k * B * 3, NULL, t, B, &rng, NULL);
        assert_memory_equal(frozen, st, sizeof(frozen));
        /* evaluation: (x - mean) / sqrt(var + eps), through the layer alone */
        sc_model_destroy(m);
        spec.n_layers = 1;
        spec.loss = SC_LOSS_MSE;
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        sc_model_init(m, &rng);
        memcpy(sc_model_state(m), frozen, sizeof(frozen));
        float t3[B * 3] = {0};
        sc_model_eval_batch(m, x, NULL, t3, B, NULL, out);
        for (int i = 0; i < B * 3; i++) {
                int c = i % 3;
                float want = (x[i] - frozen[c]) / sqrtf(frozen[3 + c] + 1e-5f);
                assert_true(fabsf(out[i] - want) < 1e-4f * fmaxf(1.0f, fabsf(want)));
        }
        sc_model_destroy(m);

        /* decay 0.5 after the warm-up: half way to each batch's statistics */
        spec.n_layers = 2;
        spec.layers[0].decay = 0.5f;
        spec.layers[0].warmup = 4;
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        sc_model_init(m, &rng);
        st = sc_model_state(m);
        sc_model_train_batch(m, x, NULL, t, B, &rng, NULL);
        float m0 = st[0];
        sc_model_train_batch(m, x + B * 3, NULL, t, B, &rng, NULL);
        double s = 0;
        for (int i = B; i < 2 * B; i++)
                s += x[i * 3];
        assert_true(fabs(st[0] - (0.5 * m0 + 0.5 * s / B)) < 1e-3);
        assert_true(st[6] == (float)B); /* counting stops with the warm-up */
        sc_model_destroy(m);

        /* recalibration keeps the learned statistics (they are the input's
         * scale, not batch statistics) */
        spec.layers[0].decay = 0;
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        sc_model_init(m, &rng);
        sc_model_train_batch(m, x, NULL, t, B, &rng, NULL);
        memcpy(frozen, sc_model_state(m), sizeof(frozen));
        assert_int_equal(sc_model_recalibrate(m, x + 8 * 3, 8, 4), SC_OK);
        assert_memory_equal(frozen, sc_model_state(m), sizeof(frozen));
        sc_model_train_batch(m, x + 12 * 3, NULL, t, B, &rng, NULL); /* still frozen (warmup 4) */
        assert_memory_equal(frozen, sc_model_state(m), sizeof(frozen));
        sc_model_destroy(m);
        /* a feature that did not vary keeps its scale */
        assert_true(sc_nn_standardize_var(0.0f, 0.0f) == 1.0f);
        assert_true(sc_nn_standardize_var(1000.0f, 1e-3f) == 1.0f);
        assert_true(sc_nn_standardize_var(0.0f, 0.5f) == 0.5f);
        assert_true(sc_nn_standardize_var(1.0f, 1e-4f) == 1e-4f);

        /* bad warm-up / decay name the layer */
        spec.layers[0].decay = 1.0f;
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_ERR_SHAPE);
        assert_non_null(strstr(err, "layers[0] (standardize): decay"));
        spec.layers[0].decay = 0;
        spec.layers[0].warmup = -1;
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_ERR_SHAPE);
        assert_non_null(strstr(err, "warmup"));

        /* gradients through it, after a warm-up and frozen */
        const sc_layer_spec_t sd = {.kind = SC_LAYER_STANDARDIZE, .warmup = 1};
        sc_layer_spec_t a[] = {dense(5), sd, L(SC_LAYER_TANH), dense(3)};
        check_grads((sc_shape_t){4, 1, 1}, a, 4, SC_LOSS_SOFTMAX_XENT, 3, 11, 1e-2f, 5e-2f);
        sc_layer_spec_t b[] = {conv(2, 3, 1, 1), sd, L(SC_LAYER_FLATTEN), dense(3)};
        check_grads((sc_shape_t){1, 4, 4}, b, 4, SC_LOSS_MSE, 2, 12, 1e-2f, 5e-2f);
}

/* ---- batchnorm statistics -------------------------------------------- */

/* One batchnorm layer on a (2, 1, 2) input (2 channels of 2 positions),
 * batch of 3: training output, running statistics, evaluation output. */
static void batchnorm_train_eval_and_state(void **state)
{
        sc_model_spec_t spec = {.input = {2, 1, 2}, .n_layers = 1, .loss = SC_LOSS_MSE};
        sc_model_t *m = NULL;
        sc_rng_t rng;
        char err[128];
        /* (B, C, 1, W): channel 0 holds 1..6, channel 1 holds 10, 10, 20, 20, 30, 30. */
        const float x[12] = {1, 2, 10, 10, 3, 4, 20, 20, 5, 6, 30, 30};
        float t[12] = {0}, out[12];

        spec.layers[0] = (sc_layer_spec_t){.kind = SC_LAYER_BATCHNORM, .momentum = 0.5f};
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_model_nparams(m), 4);
        assert_int_equal(sc_model_nstate(m), 4);
        float *st = sc_model_state(m), *p = sc_model_params(m);
        assert_true(st[0] == 0.0f && st[1] == 0.0f && st[2] == 1.0f && st[3] == 1.0f);
        sc_rng_seed(&rng, 1);
        sc_model_init(m, &rng);
        assert_true(p[0] == 1.0f && p[1] == 1.0f && p[2] == 0.0f && p[3] == 0.0f);
        /* gamma 2 and beta 1 on channel 1. */
        p[1] = 2.0f;
        p[3] = 1.0f;
        /* Training: channel 0 mean 3.5, biased var 35/12; channel 1 mean 20,
         * biased var 200/3. Normalized outputs have mean 0 and variance
         * var / (var + eps) ~ 1, so with zero targets the loss is
         * 0.5 * (6 * 1 + 6 * (4 + 1)) / 3 = 6 (channel 1: gamma^2 + beta^2). */
        float loss = sc_model_train_batch(m, x, NULL, t, 3, &rng, NULL);
        assert_true(fabsf(loss - 6.0f) < 1e-3f);
        /* Running statistics moved half way (momentum 0.5), unbiased variance. */
        assert_true(fabsf(st[0] - 0.5f * 3.5f) < 1e-5f);
        assert_true(fabsf(st[1] - 0.5f * 20.0f) < 1e-4f);
        assert_true(fabsf(st[2] - (0.5f + 0.5f * 3.5f)) < 1e-5f);  /* 17.5 / 5 */
        assert_true(fabsf(st[3] - (0.5f + 0.5f * 80.0f)) < 1e-3f); /* 400 / 5 */
        /* Evaluation normalizes with the running statistics. */
        sc_model_eval_batch(m, x, NULL, t, 3, NULL, out);
        for (int b = 0; b < 3; b++)
                for (int c = 0; c < 2; c++)
                        for (int k = 0; k < 2; k++) {
                                float v = x[b * 4 + c * 2 + k];
                                float want = c == 0
                                                 ? (v - st[0]) / sqrtf(st[2] + 1e-5f)
                                                 : 2.0f * (v - st[1]) / sqrtf(st[3] + 1e-5f) + 1.0f;
                                assert_true(fabsf(out[b * 4 + c * 2 + k] - want) < 1e-4f);
                        }
        /* Evaluation leaves the state alone; init resets it. */
        assert_true(fabsf(st[0] - 1.75f) < 1e-5f);
        sc_model_init(m, &rng);
        assert_true(st[0] == 0.0f && st[1] == 0.0f && st[2] == 1.0f && st[3] == 1.0f);
        sc_model_destroy(m);

        /* Bad momentum / eps name the layer; 0 means the default. */
        spec.layers[0].momentum = 1.5f;
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_ERR_SHAPE);
        assert_non_null(strstr(err, "layers[0] (batchnorm): momentum"));
        spec.layers[0].momentum = 0.0f;
        spec.layers[0].eps = -1.0f;
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_ERR_SHAPE);
        assert_non_null(strstr(err, "eps"));
        spec.layers[0].eps = 0.0f;
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        assert_true(sc_model_spec(m)->layers[0].momentum == 0.0f); /* the caller's spec */
        sc_rng_seed(&rng, 2);
        sc_model_init(m, &rng);
        sc_model_train_batch(m, x, NULL, t, 3, &rng, NULL);
        assert_true(fabsf(sc_model_state(m)[1] - 0.1f * 20.0f) < 1e-4f); /* momentum 0.1 */
        sc_model_destroy(m);
}

/* Recalibration: the running statistics become the mean over full batches
 * of the batch mean and unbiased variance; parameters, gradients and the
 * configured momentum are untouched. */
static void batchnorm_recalibrate(void **state)
{
        (void)state;
        sc_model_spec_t spec = {.input = {2, 1, 1}, .n_layers = 2, .loss = SC_LOSS_MSE};
        spec.layers[0] = (sc_layer_spec_t){.kind = SC_LAYER_BATCHNORM};
        spec.layers[1] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 1};
        sc_model_t *m = NULL;
        sc_rng_t rng;
        char err[128];
        enum { N = 43, B = 10 }; /* 4 full batches; the last 3 samples unused */
        float x[N * 2];

        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        sc_rng_seed(&rng, 9);
        sc_model_init(m, &rng);
        for (int i = 0; i < N; i++) {
                x[2 * i] = 3.0f + 2.0f * sc_rng_normal(&rng);
                x[2 * i + 1] = -1.0f + 0.5f * sc_rng_normal(&rng) + 0.1f * (float)(i / B);
        }
        size_t np = sc_model_nparams(m);
        float *p = sc_model_params(m), *g = sc_model_grads(m), *st = sc_model_state(m);
        float p0[16], g0[16];
        assert_true(np <= 16);
        for (size_t i = 0; i < np; i++)
                g[i] = 0.25f * (float)i;
        memcpy(p0, p, np * sizeof(float));
        memcpy(g0, g, np * sizeof(float));
        st[0] = 100.0f; /* whatever was there is replaced */
        assert_int_equal(sc_model_recalibrate(m, x, N, B), SC_OK);
        for (int c = 0; c < 2; c++) {
                double mean = 0, var = 0;
                for (int k = 0; k < N / B; k++) {
                        double s = 0, ss = 0;
                        for (int b = 0; b < B; b++)
                                s += x[2 * (k * B + b) + c];
                        s /= B;
                        for (int b = 0; b < B; b++) {
                                double d = x[2 * (k * B + b) + c] - s;
                                ss += d * d;
                        }
                        mean += s / (N / B);
                        var += ss / (B - 1) / (N / B);
                }
                assert_true(fabs(st[c] - mean) < 1e-4);
                assert_true(fabs(st[2 + c] - var) < 1e-3 * var);
        }
        assert_memory_equal(p, p0, np * sizeof(float));
        assert_memory_equal(g, g0, np * sizeof(float));
        /* the configured momentum (0.1) is back: a training step moves the
         * running mean a tenth of the way */
        float before = st[0], t[B] = {0};
        sc_model_train_batch(m, x, NULL, t, B, NULL, NULL);
        double bm = 0;
        for (int b = 0; b < B; b++)
                bm += x[2 * b] / B;
        assert_true(fabs(st[0] - (0.9 * before + 0.1 * bm)) < 1e-4);
        /* fewer samples than B: one batch of all of them */
        assert_int_equal(sc_model_recalibrate(m, x, 4, B), SC_OK);
        assert_true(fabsf(st[0] - (x[0] + x[2] + x[4] + x[6]) / 4.0f) < 1e-5f);
        /* bad arguments */
        assert_int_equal(sc_model_recalibrate(m, NULL, N, B), SC_ERR_INVAL);
        assert_int_equal(sc_model_recalibrate(m, x, 0, B), SC_ERR_INVAL);
        assert_int_equal(sc_model_recalibrate(m, x, N, 0), SC_ERR_INVAL);
        sc_model_destroy(m);

        /* a model without state: nothing to do */
        spec.n_layers = 1;
        spec.layers[0] = spec.layers[1];
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_model_nstate(m), 0);
        assert_int_equal(sc_model_recalibrate(m, x, N, B), SC_OK);
        sc_model_destroy(m);
}

/* ---- dropout statistics ---------------------------------------------- */

static void dropout_masks_and_scales(void **state)
{
        sc_model_spec_t spec = {.input = {1000, 1, 1}, .n_layers = 1, .loss = SC_LOSS_MSE};
        sc_model_t *m = NULL;
        sc_rng_t rng;
        char err[128];
        float x[1000], t[1000], out[1000];

        spec.layers[0] = (sc_layer_spec_t){.kind = SC_LAYER_DROPOUT, .rate = 0.25f};
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        for (int i = 0; i < 1000; i++) {
                x[i] = 1.0f;
                t[i] = 0.0f;
        }
        /* Eval is the identity. */
        sc_model_eval_batch(m, x, NULL, t, 1, NULL, out);
        for (int i = 0; i < 1000; i++)
                assert_true(out[i] == 1.0f);
        /* Training: loss = 0.5 * kept * (1/0.75)^2, so kept fraction ~ 0.75. */
        sc_rng_seed(&rng, 5);
        float loss = sc_model_train_batch(m, x, NULL, t, 1, &rng, NULL);
        double kept = loss / (0.5 / (0.75 * 0.75));
        assert_true(kept > 700 && kept < 800);
        sc_model_destroy(m);
}

/* ---- conv2d against the direct reference ----------------------------- */

typedef struct conv_bufs {
        sc_layer_t l;
        float *w, *b, *dw, *db, *ws;
} conv_bufs_t;

static void conv_layer(conv_bufs_t *cb, int C, int H, int W, int F, int k, int s, int p, int B,
                       int in_fm, sc_rng_t *rng)
{
        char err[128];
        memset(cb, 0, sizeof(*cb));
        cb->l.ops = &sc_nn_conv2d_ops;
        cb->l.spec = conv(F, k, s, p);
        cb->l.in = (sc_shape_t){C, H, W};
        cb->l.in_fm = in_fm;
        cb->l.out_fm = 1;
        assert_int_equal(cb->l.ops->setup(&cb->l, err, sizeof(err)), SC_OK);
        cb->w = malloc(sizeof(float) * cb->l.nw);
        cb->b = malloc(sizeof(float) * cb->l.nb);
        cb->dw = malloc(sizeof(float) * cb->l.nw);
        cb->db = malloc(sizeof(float) * cb->l.nb);
        cb->ws = malloc(sizeof(float) * (cb->l.ops->workspace(&cb->l, B) + 1));
        fill_normal(cb->w, cb->l.nw, rng, 0.5f);
        fill_normal(cb->b, cb->l.nb, rng, 0.5f);
        cb->l.w = cb->w;
        cb->l.b = cb->b;
        cb->l.dw = cb->dw;
        cb->l.db = cb->db;
        cb->l.ws = cb->ws;
}

static void conv_free(conv_bufs_t *cb)
{
        free(cb->w);
        free(cb->b);
        free(cb->dw);
        free(cb->db);
        free(cb->ws);
}

/* (B, C, HW) <-> (C, B, HW). */
static void swap_bc(const float *src, float *dst, int B, int C, int hw)
{
        for (int b = 0; b < B; b++)
                for (int c = 0; c < C; c++)
                        memcpy(dst + ((size_t)c * B + b) * hw, src + ((size_t)b * C + c) * hw,
                               sizeof(float) * hw);
}

static void assert_close(const float *a, const float *b, size_t n, float tol)
{
        for (size_t i = 0; i < n; i++) {
                float d = fabsf(a[i] - b[i]);
                if (d > tol * (1.0f + fabsf(b[i]))) {
                        fprintf(stderr, "  [%zu]: %g vs reference %g\n", i, (double)a[i],
                                (double)b[i]);
                        fail();
                }
        }
}

static void conv2d_matches_reference(void **state)
{
        /* (kernel, stride, padding): stride 1 / 2, padding 0 / 1, and the
         * "same" shapes that take the whole-plane im2col path. */
        const int cfg[][3] = {{3, 1, 0}, {3, 1, 1}, {3, 2, 0}, {3, 2, 1},
                              {5, 1, 2}, {1, 1, 0}, {2, 1, 1}, {4, 2, 2}};
        const int C = 4, H = 9, W = 7, F = 4, B = 5;
        sc_rng_t rng;
        sc_rng_seed(&rng, 80);
        for (size_t ci = 0; ci < sizeof(cfg) / sizeof(cfg[0]); ci++) {
                const int k = cfg[ci][0], s = cfg[ci][1], p = cfg[ci][2];
                {
                        for (int fm = 0; fm <= 1; fm++) {
                                conv_bufs_t cb;
                                conv_layer(&cb, C, H, W, F, k, s, p, B, fm, &rng);
                                const int OH = cb.l.out.h, OW = cb.l.out.w;
                                assert_int_equal(OH, (H + 2 * p - k) / s + 1);
                                assert_int_equal(OW, (W + 2 * p - k) / s + 1);
                                size_t nin = (size_t)B * C * H * W, nout = (size_t)B * F * OH * OW;
                                float *x = malloc(sizeof(float) * nin);
                                float *xl = malloc(sizeof(float) * nin);
                                float *y = malloc(sizeof(float) * nout);
                                float *yl = malloc(sizeof(float) * nout);
                                float *yr = malloc(sizeof(float) * nout);
                                float *dy = malloc(sizeof(float) * nout);
                                float *dyl = malloc(sizeof(float) * nout);
                                float *dx = malloc(sizeof(float) * nin);
                                float *dxl = malloc(sizeof(float) * nin);
                                float *dxr = malloc(sizeof(float) * nin);
                                float *dwr = malloc(sizeof(float) * cb.l.nw);
                                float *dbr = malloc(sizeof(float) * F);
                                fill_normal(x, nin, &rng, 1.0f);
                                fill_normal(dy, nout, &rng, 1.0f);
                                if (fm)
                                        swap_bc(x, xl, B, C, H * W);
                                else
                                        memcpy(xl, x, sizeof(float) * nin);
                                cb.l.ops->forward(&cb.l, xl, yl, B, 1, NULL);
                                swap_bc(yl, y, F, B, OH * OW); /* (F, B) -> (B, F) */
                                sc_nn_conv2d_ref_forward(x, B, C, H, W, cb.w, cb.b, F, k, s, p, yr);
                                assert_close(y, yr, nout, 1e-4f);

                                swap_bc(dy, dyl, B, F, OH * OW);
                                cb.l.ops->backward(&cb.l, xl, yl, dyl, dxl, B);
                                if (fm)
                                        swap_bc(dxl, dx, C, B, H * W);
                                else
                                        memcpy(dx, dxl, sizeof(float) * nin);
                                sc_nn_conv2d_ref_backward(x, B, C, H, W, cb.w, F, k, s, p, dy, dwr,
                                                          dbr, dxr);
                                assert_close(cb.dw, dwr, cb.l.nw, 1e-4f);
                                assert_close(cb.db, dbr, (size_t)F, 1e-4f);
                                assert_close(dx, dxr, nin, 1e-4f);
                                free(x);
                                free(xl);
                                free(y);
                                free(yl);
                                free(yr);
                                free(dy);
                                free(dyl);
                                free(dx);
                                free(dxl);
                                free(dxr);
                                free(dwr);
                                free(dbr);
                                conv_free(&cb);
                        }
                }
        }
}

/* Large enough that the layer splits the batch into several im2col chunks. */
static void conv2d_chunks_match_reference(void **state)
{
        const int C = 8, H = 20, W = 20, F = 6, k = 3, B = 40;
        sc_rng_t rng;
        conv_bufs_t cb;

        sc_rng_seed(&rng, 81);
        conv_layer(&cb, C, H, W, F, k, 1, 1, B, 0, &rng);
        size_t nin = (size_t)B * C * H * W, nout = (size_t)B * F * H * W;
        float *x = malloc(sizeof(float) * nin), *yl = malloc(sizeof(float) * nout);
        float *y = malloc(sizeof(float) * nout), *yr = malloc(sizeof(float) * nout);
        float *dwr = malloc(sizeof(float) * cb.l.nw), *dbr = malloc(sizeof(float) * F);
        fill_normal(x, nin, &rng, 1.0f);
        cb.l.ops->forward(&cb.l, x, yl, B, 1, NULL);
        swap_bc(yl, y, F, B, H * W);
        sc_nn_conv2d_ref_forward(x, B, C, H, W, cb.w, cb.b, F, k, 1, 1, yr);
        assert_close(y, yr, nout, 1e-4f);
        /* dy = reference output: dw and db against the reference. */
        swap_bc(yr, yl, B, F, H * W);
        cb.l.ops->backward(&cb.l, x, yl, yl, NULL, B);
        sc_nn_conv2d_ref_backward(x, B, C, H, W, cb.w, F, k, 1, 1, yr, dwr, dbr, NULL);
        assert_close(cb.dw, dwr, cb.l.nw, 1e-3f);
        assert_close(cb.db, dbr, (size_t)F, 1e-3f);
        free(x);
        free(yl);
        free(y);
        free(yr);
        free(dwr);
        free(dbr);
        conv_free(&cb);
}

/* ---- conv2d's sparse backward path ------------------------------------ */

/* Zeroes dy (B, F, OH, OW) as relu + 2x2 maxpool would leave it: in every
 * window of every plane one random position keeps its value, and of those
 * a fraction relu_zero is zeroed too. */
static void pool_mask(float *dy, int planes, int OH, int OW, float relu_zero, sc_rng_t *rng)
{
        for (int p = 0; p < planes; p++) {
                float *d = dy + (size_t)p * OH * OW;
                for (int y = 0; y < OH; y += 2)
                        for (int x = 0; x < OW; x += 2) {
                                int wy = y + 1 < OH ? 2 : 1, wx = x + 1 < OW ? 2 : 1;
                                int keep = (int)sc_rng_below(rng, (uint32_t)(wy * wx));
                                int drop = sc_rng_uniform(rng) < relu_zero;
                                for (int i = 0; i < wy; i++)
                                        for (int j = 0; j < wx; j++)
                                                if (drop || i * wx + j != keep)
                                                        d[(y + i) * OW + x + j] = 0.0f;
                        }
        }
}

/* Runs the layer's backward pass on dy (B, F, OH, OW, batch-major) with
 * the sparse path forced on (sparse 1) or off, into dw, db and dx
 * (batch-major; NULL: no input gradient); returns the path taken. */
static int conv_backward_on(conv_bufs_t *cb, const float *x, const float *dy, int B, int sparse,
                            float *dw, float *db, float *dx)
{
        const sc_layer_t *l = &cb->l;
        const int C = l->in.c, HW = l->in.h * l->in.w, F = l->out.c, OHW = l->out.h * l->out.w;
        size_t nin = (size_t)B * C * HW, nout = (size_t)B * F * OHW;
        float *xl = malloc(sizeof(float) * nin), *dyl = malloc(sizeof(float) * nout);
        float *yl = malloc(sizeof(float) * nout), *dxl = malloc(sizeof(float) * nin);
        assert_true(xl && dyl && yl && dxl);
        if (l->in_fm)
                swap_bc(x, xl, B, C, HW);
        else
                memcpy(xl, x, sizeof(float) * nin);
        swap_bc(dy, dyl, B, F, OHW);
        cb->l.sparse_below = sparse ? 1e9f : 0.0f;
        cb->l.ops->forward(&cb->l, xl, yl, B, 1, NULL);
        cb->l.ops->backward(&cb->l, xl, yl, dyl, dx ? dxl : NULL, B);
        memcpy(dw, cb->dw, sizeof(float) * l->nw);
        memcpy(db, cb->db, sizeof(float) * l->nb);
        if (dx && l->in_fm)
                swap_bc(dxl, dx, C, B, HW);
        else if (dx)
                memcpy(dx, dxl, sizeof(float) * nin);
        free(xl);
        free(dyl);
        free(yl);
        free(dxl);
        return l->bwd_sparse;
}

/* Sparse path against the dense path and the direct reference. mask: 0
 * keeps a random quarter of dy, 1 applies pool_mask. */
static void conv_sparse_case(int C, int H, int W, int F, int k, int s, int p, int B, int fm,
                             int mask, int with_dx, uint64_t seed)
{
        sc_rng_t rng;
        conv_bufs_t cb;

        sc_rng_seed(&rng, seed);
        conv_layer(&cb, C, H, W, F, k, s, p, B, fm, &rng);
        const int OH = cb.l.out.h, OW = cb.l.out.w;
        size_t nin = (size_t)B * C * H * W, nout = (size_t)B * F * OH * OW;
        float *x = malloc(sizeof(float) * nin), *dy = malloc(sizeof(float) * nout);
        float *dx[3], *dw[3], *db[3];
        for (int i = 0; i < 3; i++) {
                dx[i] = malloc(sizeof(float) * nin);
                dw[i] = malloc(sizeof(float) * cb.l.nw);
                db[i] = malloc(sizeof(float) * F);
        }
        fill_normal(x, nin, &rng, 1.0f);
        fill_normal(dy, nout, &rng, 1.0f);
        if (mask) {
                pool_mask(dy, B * F, OH, OW, 0.3f, &rng);
        } else {
                for (size_t i = 0; i < nout; i++)
                        if (sc_rng_uniform(&rng) >= 0.25f)
                                dy[i] = 0.0f;
        }
        size_t nnz = 0;
        for (size_t i = 0; i < nout; i++)
                nnz += dy[i] != 0.0f;
        assert_true(nnz > 0 && nnz < nout * 3 / 10);

        assert_int_equal(conv_backward_on(&cb, x, dy, B, 1, dw[0], db[0], with_dx ? dx[0] : NULL),
                         1);
        assert_int_equal(conv_backward_on(&cb, x, dy, B, 0, dw[1], db[1], with_dx ? dx[1] : NULL),
                         0);
        sc_nn_conv2d_ref_backward(x, B, C, H, W, cb.w, F, k, s, p, dy, dw[2], db[2],
                                  with_dx ? dx[2] : NULL);
        for (int ref = 1; ref <= 2; ref++) {
                assert_close(dw[0], dw[ref], cb.l.nw, 1e-4f);
                assert_close(db[0], db[ref], (size_t)F, 1e-4f);
                if (with_dx)
                        assert_close(dx[0], dx[ref], nin, 1e-4f);
        }
        free(x);
        free(dy);
        for (int i = 0; i < 3; i++) {
                free(dx[i]);
                free(dw[i]);
                free(db[i]);
        }
        conv_free(&cb);
}

static void conv2d_sparse_matches_dense(void **state)
{
        /* conv2 of the Fashion-MNIST CNN, in several chunks, behind a pool. */
        conv_sparse_case(32, 14, 14, 64, 3, 1, 1, 5, 1, 1, 1, 120);
        conv_sparse_case(32, 14, 14, 64, 3, 1, 1, 3, 1, 0, 1, 121);
        /* Batch-major input, channels not a multiple of 16, stride 2, no
         * padding, odd sizes; a 5x5 kernel; no input gradient. */
        conv_sparse_case(12, 9, 7, 5, 3, 2, 0, 4, 0, 0, 1, 122);
        conv_sparse_case(12, 9, 7, 5, 3, 1, 1, 4, 0, 1, 1, 123);
        conv_sparse_case(8, 8, 8, 17, 5, 1, 2, 2, 1, 1, 1, 124);
        conv_sparse_case(16, 10, 10, 24, 3, 1, 1, 3, 1, 1, 0, 125);
}

/* The path switches where the layer says, and both sides of the switch
 * give the reference's gradients. */
static void conv2d_sparse_threshold(void **state)
{
        const int C = 16, H = 6, W = 6, F = 4, k = 3, B = 2;
        sc_rng_t rng;
        conv_bufs_t cb;

        sc_rng_seed(&rng, 126);
        conv_layer(&cb, C, H, W, F, k, 1, 1, B, 1, &rng);
        size_t nin = (size_t)B * C * H * W, nout = (size_t)B * F * H * W;
        /* The smallest count of non-zeros that is not below the threshold. */
        size_t edge = (size_t)ceil(SC_NN_CONV_SPARSE_DENSITY * (double)nout / sc_nn_threads_get());
        /* The default (without AVX-512 the path is off: set it anyway). */
        assert_float_equal(cb.l.sparse_below, sc_nn_avx512() ? SC_NN_CONV_SPARSE_DENSITY : 0.0,
                           0.0);
        cb.l.sparse_below = SC_NN_CONV_SPARSE_DENSITY;
        assert_true(sc_nn_conv_use_sparse(&cb.l, edge - 1, nout));
        assert_false(sc_nn_conv_use_sparse(&cb.l, edge, nout));
        float *x = malloc(sizeof(float) * nin), *dy = malloc(sizeof(float) * nout);
        float *xl = malloc(sizeof(float) * nin), *dyl = malloc(sizeof(float) * nout);
        float *yl = malloc(sizeof(float) * nout), *dxl = malloc(sizeof(float) * nin);
        float *dx = malloc(sizeof(float) * nin), *dxr = malloc(sizeof(float) * nin);
        float *dwr = malloc(sizeof(float) * cb.l.nw), *dbr = malloc(sizeof(float) * F);
        size_t *order = malloc(sizeof(size_t) * nout);
        fill_normal(x, nin, &rng, 1.0f);
        swap_bc(x, xl, B, C, H * W);
        for (size_t i = 0; i < nout; i++)
                order[i] = i;
        for (size_t i = nout - 1; i > 0; i--) {
                size_t j = sc_rng_below(&rng, (uint32_t)(i + 1)), t = order[i];
                order[i] = order[j];
                order[j] = t;
        }
        for (int side = 0; side < 2; side++) {
                size_t nnz = edge - 1 + (size_t)side;
                memset(dy, 0, sizeof(float) * nout);
                for (size_t i = 0; i < nnz; i++)
                        dy[order[i]] = 0.5f + sc_rng_uniform(&rng);
                swap_bc(dy, dyl, B, F, H * W);
                cb.l.ops->forward(&cb.l, xl, yl, B, 1, NULL);
                cb.l.ops->backward(&cb.l, xl, yl, dyl, dxl, B);
                assert_int_equal(cb.l.bwd_sparse, side == 0);
                swap_bc(dxl, dx, C, B, H * W);
                sc_nn_conv2d_ref_backward(x, B, C, H, W, cb.w, F, k, 1, 1, dy, dwr, dbr, dxr);
                assert_close(cb.dw, dwr, cb.l.nw, 1e-4f);
                assert_close(cb.db, dbr, (size_t)F, 1e-4f);
                assert_close(dx, dxr, nin, 1e-4f);
        }
        free(x);
        free(dy);
        free(xl);
        free(dyl);
        free(yl);
        free(dxl);
        free(dx);
        free(dxr);
        free(dwr);
        free(dbr);
        free(order);
        conv_free(&cb);
}

static void transpose_matches_naive(void **state)
{
        const int sizes[][2] = {{1, 1}, {16, 16}, {17, 3}, {37, 29}, {5, 40}, {64, 392}};
        for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
                const int R = sizes[t][0], Cc = sizes[t][1];
                const size_t lds = (size_t)Cc + 3, ldd = (size_t)R + 5;
                float *a = malloc(sizeof(float) * R * lds), *b = malloc(sizeof(float) * Cc * ldd);
                for (size_t i = 0; i < (size_t)R * lds; i++)
                        a[i] = (float)i;
                for (size_t i = 0; i < (size_t)Cc * ldd; i++)
                        b[i] = -1.0f;
                sc_nn_transpose(a, R, Cc, lds, b, ldd);
                for (int i = 0; i < R; i++)
                        for (int j = 0; j < Cc; j++)
                                assert_true(b[(size_t)j * ldd + i] == a[(size_t)i * lds + j]);
                /* The gaps between destination rows stay untouched. */
                for (int j = 0; j < Cc; j++)
                        for (size_t i = (size_t)R; i < ldd; i++)
                                assert_true(b[(size_t)j * ldd + i] == -1.0f);
                assert_int_equal(sc_nn_count_nonzero(a, R, Cc, lds), (size_t)R * Cc - 1);
                free(a);
                free(b);
        }
}

/* ---- maxpool against a naive loop, with ties ---------------------------- */

static void maxpool_matches_naive(void **state)
{
        const int shapes[][4] = {{2, 3, 8, 8}, {1, 2, 7, 9}, {2, 1, 6, 40}, {3, 2, 5, 5}};
        sc_rng_t rng;
        char err[128];

        sc_rng_seed(&rng, 95);
        for (size_t t = 0; t < sizeof(shapes) / sizeof(shapes[0]); t++) {
                const int B = shapes[t][0], C = shapes[t][1], H = shapes[t][2], W = shapes[t][3];
                for (int k = 2; k <= 3; k++) {
                        sc_layer_t l = {.ops = &sc_nn_maxpool2d_ops,
                                        .spec = pool(k, k == 2 ? 2 : 1),
                                        .in = {C, H, W}};
                        assert_int_equal(l.ops->setup(&l, err, sizeof(err)), SC_OK);
                        const int OH = l.out.h, OW = l.out.w;
                        const size_t nin = (size_t)B * C * H * W, nout = (size_t)B * C * OH * OW;
                        float *x = malloc(sizeof(float) * nin), *y = malloc(sizeof(float) * nout);
                        float *dy = malloc(sizeof(float) * nout), *dx = malloc(sizeof(float) * nin);
                        float *ref = calloc(nin, sizeof(float));
                        l.ws = malloc(sizeof(float) * l.ops->workspace(&l, B));
                        /* Small integers: many ties; the first maximum wins. */
                        for (size_t i = 0; i < nin; i++)
                                x[i] = (float)sc_rng_below(&rng, 4);
                        for (size_t i = 0; i < nout; i++)
                                dy[i] = (float)(i % 7) + 1.0f;
                        l.ops->forward(&l, x, y, B, 1, NULL);
                        l.ops->backward(&l, x, y, dy, dx, B);
                        const int s = l.spec.stride;
                        for (int p = 0; p < B * C; p++) {
                                for (int oy = 0; oy < OH; oy++) {
                                        for (int ox = 0; ox < OW; ox++) {
                                                size_t best = (size_t)p * H * W +
                                                              (size_t)(oy * s) * W + ox * s;
                                                for (int i = 0; i < k; i++)
                                                        for (int j = 0; j < k; j++) {
                                                                size_t at =
                                                                    (size_t)p * H * W +
                                                                    (size_t)(oy * s + i) * W +
                                                                    ox * s + j;
                                                                if (x[at] > x[best])
                                                                        best = at;
                                                        }
                                                size_t o = ((size_t)p * OH + oy) * OW + ox;
                                                assert_true(y[o] == x[best]);
                                                ref[best] += dy[o];
                                        }
                                }
                        }
                        for (size_t i = 0; i < nin; i++)
                                assert_true(dx[i] == ref[i]);
                        free(x);
                        free(y);
                        free(dy);
                        free(dx);
                        free(ref);
                        free(l.ws);
                }
        }
}

/* ---- gemm ------------------------------------------------------------- */

static void gemm_matches_naive(void **state)
{
        const int M = 7, N = 5, K = 6;
        float A[64], Bm[64], C1[64], C2[64];
        sc_rng_t rng;

        sc_rng_seed(&rng, 90);
        for (int ta = 0; ta <= 1; ta++) {
                for (int tb = 0; tb <= 1; tb++) {
                        fill_normal(A, 64, &rng, 1.0f);
                        fill_normal(Bm, 64, &rng, 1.0f);
                        fill_normal(C1, 64, &rng, 1.0f);
                        memcpy(C2, C1, sizeof(C1));
                        int lda = ta ? M : K, ldb = tb ? K : N, ldc = N + 1;
                        sc_nn_gemm(ta, tb, M, N, K, 0.5f, A, lda, Bm, ldb, 0.25f, C1, ldc);
                        sc_nn_gemm_ref(ta, tb, M, N, K, 0.5f, A, lda, Bm, ldb, 0.25f, C2, ldc);
                        assert_close(C1, C2, 64, 1e-5f);
                }
        }
        /* Hand-computed: [1 2; 3 4] * [5; 6] = [17; 39]. */
        float a[4] = {1, 2, 3, 4}, b[2] = {5, 6}, c[2];
        sc_nn_gemm(0, 0, 2, 1, 2, 1.0f, a, 2, b, 1, 0.0f, c, 1);
        assert_true(c[0] == 17.0f && c[1] == 39.0f);
}

/* Shapes around the skinny kernel's block edges (16-row blocks, 16-float
 * vectors, 64-float panels), both A layouts, beta 0 and 1. */
static void gemm_skinny_edges(void **state)
{
        const int Ms[] = {1, 3, 4, 5, 10, 17, 33}, Ns[] = {1, 15, 16, 17, 40, 64, 70, 130};
        const int K = 9;
        sc_rng_t rng;
        float *A = malloc(sizeof(float) * 33 * K), *Bm = malloc(sizeof(float) * K * 130);
        float *C1 = malloc(sizeof(float) * 33 * 130), *C2 = malloc(sizeof(float) * 33 * 130);

        sc_rng_seed(&rng, 91);
        fill_normal(A, 33 * K, &rng, 1.0f);
        fill_normal(Bm, K * 130, &rng, 1.0f);
        for (size_t mi = 0; mi < sizeof(Ms) / sizeof(Ms[0]); mi++) {
                for (size_t ni = 0; ni < sizeof(Ns) / sizeof(Ns[0]); ni++) {
                        for (int ta = 0; ta <= 1; ta++) {
                                for (int beta = 0; beta <= 1; beta++) {
                                        int M = Ms[mi], N = Ns[ni];
                                        fill_normal(C1, 33 * 130, &rng, 1.0f);
                                        memcpy(C2, C1, sizeof(float) * 33 * 130);
                                        sc_nn_gemm(ta, 0, M, N, K, 1.0f, A, ta ? M : K, Bm, N,
                                                   (float)beta, C1, 130);
                                        sc_nn_gemm_ref(ta, 0, M, N, K, 1.0f, A, ta ? M : K, Bm, N,
                                                       (float)beta, C2, 130);
                                        /* Also checks nothing past N in a row was written. */
                                        assert_close(C1, C2, 33 * 130, 1e-5f);
                                }
                        }
                }
        }
        /* Long-K products with a small C (the dot-product kernel), tails in
         * every dimension. */
        const int dims[][3] = {{5, 7, 300}, {4, 4, 256}, {1, 9, 1000}, {32, 9, 517}};
        for (size_t d = 0; d < sizeof(dims) / sizeof(dims[0]); d++) {
                const int M = dims[d][0], N = dims[d][1], KK = dims[d][2];
                float *a = malloc(sizeof(float) * M * KK), *b = malloc(sizeof(float) * N * KK);
                fill_normal(a, (size_t)M * KK, &rng, 1.0f);
                fill_normal(b, (size_t)N * KK, &rng, 1.0f);
                for (int beta = 0; beta <= 1; beta++) {
                        fill_normal(C1, 33 * 130, &rng, 1.0f);
                        memcpy(C2, C1, sizeof(float) * 33 * 130);
                        sc_nn_gemm(0, 1, M, N, KK, 1.0f, a, KK, b, KK, (float)beta, C1, 130);
                        sc_nn_gemm_ref(0, 1, M, N, KK, 1.0f, a, KK, b, KK, (float)beta, C2, 130);
                        assert_close(C1, C2, 33 * 130, 1e-4f);
                }
                free(a);
                free(b);
        }
        free(A);
        free(Bm);
        free(C1);
        free(C2);
}

/* ---- loss values ------------------------------------------------------ */

static void xent_values(void **state)
{
        /* logits (B=2, n=3) batch-major. */
        float z[6] = {0.0f, 0.0f, 0.0f, 1000.0f, 0.0f, -1000.0f}, d[6];
        int32_t y[2] = {1, 0};
        int correct = -1;
        float l = sc_nn_xent(z, 0, 3, 2, y, d, &correct);
        /* Sample 0: log 3; sample 1: ~0 (no overflow). */
        assert_true(fabsf(l - (float)(log(3.0) / 2)) < 1e-5f);
        assert_int_equal(correct, 1); /* sample 0's argmax is class 0, not 1 */
        assert_true(fabsf(d[0] - 1.0f / 6) < 1e-6f && fabsf(d[1] - (1.0f / 3 - 1) / 2) < 1e-6f);
        assert_true(fabsf(d[3]) < 1e-6f && isfinite(d[5]));
        /* The same logits feature-major give the same loss. */
        float zt[6] = {0.0f, 1000.0f, 0.0f, 0.0f, 0.0f, -1000.0f};
        assert_true(fabsf(sc_nn_xent(zt, 1, 3, 2, y, NULL, NULL) - l) < 1e-6f);
        /* A label outside [0, n) is an error. */
        int32_t bad[2] = {1, 3};
        assert_true(isnan(sc_nn_xent(z, 0, 3, 2, bad, NULL, NULL)));
}

static void mse_values(void **state)
{
        float o[4] = {1, 2, 3, 5}, t[4] = {1, 0, 3, 1}, d[4];
        /* 0.5 * (0 + 4) and 0.5 * (0 + 16), mean over B=2: 5. */
        float l = sc_nn_mse(o, 0, (sc_shape_t){2, 1, 1}, 2, t, d);
        assert_true(fabsf(l - 5.0f) < 1e-6f);
        assert_true(d[1] == 1.0f && d[3] == 2.0f && d[0] == 0.0f);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(dense_grads),
            cmocka_unit_test(conv2d_grads),
            cmocka_unit_test(maxpool_grads),
            cmocka_unit_test(relu_grads),
            cmocka_unit_test(tanh_sigmoid_grads),
            cmocka_unit_test(dropout_grads),
            cmocka_unit_test(flatten_and_xent_grads),
            cmocka_unit_test(batchnorm_grads),
            cmocka_unit_test(batchnorm_train_eval_and_state),
            cmocka_unit_test(batchnorm_recalibrate),
            cmocka_unit_test(standardize_warmup_freeze_and_decay),
            cmocka_unit_test(dropout_masks_and_scales),
            cmocka_unit_test(conv2d_matches_reference),
            cmocka_unit_test(conv2d_chunks_match_reference),
            cmocka_unit_test(conv2d_sparse_matches_dense),
            cmocka_unit_test(conv2d_sparse_threshold),
            cmocka_unit_test(transpose_matches_naive),
            cmocka_unit_test(maxpool_matches_naive),
            cmocka_unit_test(gemm_matches_naive),
            cmocka_unit_test(gemm_skinny_edges),
            cmocka_unit_test(xent_values),
            cmocka_unit_test(mse_values),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
