/* test_nn_model.c — model building: shape errors, parameter layout and
 * views, deterministic init, batch growth, eval vs train, and tiny models
 * that learn synthetic problems. */
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
#include "sc_optim.h"

static sc_layer_spec_t L(sc_layer_kind_t kind)
{
        return (sc_layer_spec_t){.kind = kind};
}

static sc_layer_spec_t dense(int units)
{
        return (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = units};
}

static sc_layer_spec_t conv(int filters, int k, int pad)
{
        return (sc_layer_spec_t){
            .kind = SC_LAYER_CONV2D, .filters = filters, .kernel = k, .padding = pad};
}

static sc_layer_spec_t pool(int k)
{
        return (sc_layer_spec_t){.kind = SC_LAYER_MAXPOOL2D, .kernel = k};
}

static void cnn_spec(sc_model_spec_t *s)
{
        memset(s, 0, sizeof(*s));
        s->input = (sc_shape_t){1, 28, 28};
        s->loss = SC_LOSS_SOFTMAX_XENT;
        sc_layer_spec_t l[] = {
            conv(32, 3, 1), L(SC_LAYER_RELU),    pool(2),    conv(64, 3, 1),   L(SC_LAYER_RELU),
            pool(2),        L(SC_LAYER_FLATTEN), dense(128), L(SC_LAYER_RELU), dense(10)};
        s->n_layers = (int)(sizeof(l) / sizeof(l[0]));
        memcpy(s->layers, l, sizeof(l));
}

/* ---- shape errors ----------------------------------------------------- */

typedef struct bad_spec {
        sc_shape_t input;
        int n;
        sc_layer_spec_t layers[4];
        sc_loss_kind_t loss;
        const char *error; /* expected substring */
} bad_spec_t;

static void shape_errors(void **state)
{
        const bad_spec_t cases[] = {
            {{1, 8, 8}, 0, {{0}}, SC_LOSS_MSE, "layers: 0 layers"},
            {{0, 8, 8}, 1, {L(SC_LAYER_RELU)}, SC_LOSS_MSE, "input: shape 0x8x8"},
            {{1, 8, 8},
             3,
             {pool(2), L(SC_LAYER_RELU), conv(4, 5, 0)},
             SC_LOSS_MSE,
             "layers[2] (conv2d): kernel 5 larger than padded input 4x4"},
            {{4, 1, 1},
             2,
             {dense(3), {.kind = (sc_layer_kind_t)99}},
             SC_LOSS_MSE,
             "layers[1]: unknown layer kind 99"},
            {{4, 1, 1}, 1, {dense(0)}, SC_LOSS_MSE, "layers[0] (dense): units 0 must be >= 1"},
            {{1, 4, 4},
             1,
             {dense(3)},
             SC_LOSS_MSE,
             "layers[0] (dense): input 1x4x4 is not a flat vector"},
            {{1, 6, 6},
             1,
             {conv(2, 3, 0)},
             SC_LOSS_SOFTMAX_XENT,
             "loss: softmax_xent needs a flat output"},
            {{4, 1, 1}, 1, {dense(1)}, SC_LOSS_SOFTMAX_XENT, "at least 2 classes"},
            {{1, 6, 6}, 1, {conv(0, 3, 0)}, SC_LOSS_MSE, "layers[0] (conv2d): filters 0"},
            {{1, 6, 6}, 1, {conv(2, 3, -1)}, SC_LOSS_MSE, "padding -1 must be >= 0"},
            {{1, 6, 6},
             1,
             {{.kind = SC_LAYER_CONV2D, .filters = 2, .kernel = 3, .stride = -2}},
             SC_LOSS_MSE,
             "layers[0] (conv2d): stride -2 must be >= 1"},
            {{1, 3, 3}, 1, {pool(4)}, SC_LOSS_MSE, "layers[0] (maxpool2d): kernel 4 larger"},
            {{4, 1, 1},
             1,
             {{.kind = SC_LAYER_DROPOUT, .rate = 1.0f}},
             SC_LOSS_MSE,
             "layers[0] (dropout): rate 1 must be in [0, 1)"},
            {{4, 1, 1}, 1, {dense(2)}, (sc_loss_kind_t)7, "loss: unknown kind 7"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                sc_model_spec_t spec = {
                    .input = cases[i].input, .n_layers = cases[i].n, .loss = cases[i].loss};
                sc_model_t *m = (sc_model_t *)&spec; /* must be reset to NULL */
                char err[256] = "";
                memcpy(spec.layers, cases[i].layers, sizeof(cases[i].layers));
                sc_err_t e = sc_model_new(&m, &spec, err, sizeof(err));
                if (e == SC_OK || !strstr(err, cases[i].error)) {
                        fprintf(stderr, "  case %zu: err %d \"%s\", expected \"%s\"\n", i, e, err,
                                cases[i].error);
                        fail();
                }
                assert_null(m);
        }
        sc_model_spec_t spec = {.input = {1, 1, 1}, .n_layers = SC_MODEL_MAX_LAYERS + 1};
        sc_model_t *m = NULL;
        char err[128];
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_ERR_SHAPE);
        assert_int_equal(sc_model_new(NULL, &spec, err, sizeof(err)), SC_ERR_INVAL);
        sc_model_destroy(NULL);
}

/* ---- layout ------------------------------------------------------------ */

static void cnn_layout_and_views(void **state)
{
        sc_model_spec_t spec;
        sc_model_t *m = NULL;
        char err[256];
        static const char *const names[8] = {
            "layers.0.weight", "layers.0.bias", "layers.3.weight", "layers.3.bias",
            "layers.7.weight", "layers.7.bias", "layers.9.weight", "layers.9.bias"};
        static const size_t numel[8] = {288, 32, 18432, 64, 401408, 128, 1280, 10};

        cnn_spec(&spec);
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_model_ntensors(m), 8);
        size_t off = 0;
        for (int i = 0; i < 8; i++) {
                const sc_tensor_view_t *v = sc_model_tensor(m, i);
                assert_string_equal(v->name, names[i]);
                assert_int_equal(v->offset, off);
                assert_int_equal(v->numel, numel[i]);
                off += v->numel;
        }
        assert_null(sc_model_tensor(m, 8));
        assert_int_equal(sc_model_nparams(m), off);
        sc_shape_t s = sc_model_layer_shape(m, 5);
        assert_true(s.c == 64 && s.h == 7 && s.w == 7);
        s = sc_model_output_shape(m);
        assert_true(s.c == 10 && s.h == 1 && s.w == 1);
        assert_true(sc_model_forward_flops(m) ==
                    32.0 * 9 * 784 + 64.0 * 288 * 196 + 3136.0 * 128 + 1280);
        assert_int_equal(sc_model_spec(m)->n_layers, 10);
        assert_string_equal(sc_layer_kind_name(SC_LAYER_MAXPOOL2D), "maxpool2d");
        sc_model_destroy(m);
}

/* ---- determinism ------------------------------------------------------- */

static sc_model_t *new_cnn(uint64_t seed)
{
        sc_model_spec_t spec;
        sc_model_t *m = NULL;
        sc_rng_t rng;
        char err[256];
        cnn_spec(&spec);
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        sc_rng_seed(&rng, seed);
        sc_model_init(m, &rng);
        return m;
}

static void same_seed_same_model(void **state)
{
        sc_model_t *a = new_cnn(7), *b = new_cnn(7), *c = new_cnn(8);
        size_t n = sc_model_nparams(a);
        float *pa = sc_model_params(a);
        assert_memory_equal(pa, sc_model_params(b), n * sizeof(float));
        assert_memory_not_equal(pa, sc_model_params(c), n * sizeof(float));
        /* Biases start at zero; He weights of layer 7 have sd sqrt(2/3136). */
        const sc_tensor_view_t *w = sc_model_tensor(a, 4), *bias = sc_model_tensor(a, 5);
        for (size_t i = 0; i < bias->numel; i++)
                assert_true(pa[bias->offset + i] == 0.0f);
        double ss = 0;
        for (size_t i = 0; i < w->numel; i++)
                ss += (double)pa[w->offset + i] * pa[w->offset + i];
        assert_true(fabs(sqrt(ss / w->numel) / sqrt(2.0 / 3136) - 1.0) < 0.02);

        /* A few training steps from the same state are bit-identical. */
        sc_rng_t r;
        sc_rng_seed(&r, 9);
        float *x = malloc(sizeof(float) * 784 * 8);
        int32_t y[8];
        for (int i = 0; i < 784 * 8; i++)
                x[i] = sc_rng_normal(&r);
        for (int i = 0; i < 8; i++)
                y[i] = (int32_t)sc_rng_below(&r, 10);
        sc_model_t *ms[2] = {a, b};
        for (int k = 0; k < 2; k++) {
                sc_sgd_t sgd = {0};
                assert_int_equal(sc_sgd_init(&sgd, &(sc_sgd_spec_t){.momentum = 0.9}, n), SC_OK);
                for (int s = 0; s < 3; s++) {
                        float l = sc_model_train_batch(ms[k], x, y, NULL, 8, NULL, NULL);
                        assert_true(isfinite(l));
                        sc_sgd_step(&sgd, sc_model_params(ms[k]), sc_model_grads(ms[k]), 0.05f);
                }
                sc_sgd_free(&sgd);
        }
        assert_memory_equal(sc_model_params(a), sc_model_params(b), n * sizeof(float));
        free(x);
        sc_model_destroy(a);
        sc_model_destroy(b);
        sc_model_destroy(c);
}

/* ---- multiply-adds of a step ------------------------------------------- */

static void step_macs_count_what_ran(void **state)
{
        sc_model_spec_t spec = {.input = {20, 1, 1}, .n_layers = 3, .loss = SC_LOSS_SOFTMAX_XENT};
        sc_model_t *m = NULL;
        sc_rng_t r;
        char err[128];
        float x[784 * 8];
        int32_t y[8];

        sc_rng_seed(&r, 12);
        for (int i = 0; i < 784 * 8; i++)
                x[i] = sc_rng_normal(&r);
        for (int i = 0; i < 8; i++)
                y[i] = (int32_t)sc_rng_below(&r, 4);
        /* Dense layers: forward, weight gradients, and the second layer's
         * input gradient. */
        spec.layers[0] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 16};
        spec.layers[1] = (sc_layer_spec_t){.kind = SC_LAYER_RELU};
        spec.layers[2] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 4};
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        sc_model_init(m, &r);
        assert_true(sc_model_last_step_macs(m) == 0.0);
        assert_true(isfinite(sc_model_train_batch(m, x, y, NULL, 8, NULL, NULL)));
        assert_true(sc_model_last_step_macs(m) == 8.0 * (2 * (20 * 16 + 16 * 4) + 16 * 4));
        sc_model_destroy(m);

        /* The CNN: conv2's output gradient passes relu + maxpool, so its
         * backward pass multiplies only the non-zeros (at most a quarter),
         * where the sparse path is on (AVX-512). */
        m = new_cnn(5);
        const double fwd = sc_model_forward_flops(m), conv1 = 32.0 * 9 * 784;
        const double conv2 = 64.0 * 288 * 196;
        const double dense = 8 * (2 * fwd + fwd - conv1);
        assert_true(isfinite(sc_model_train_batch(m, x, y, NULL, 8, NULL, NULL)));
        double macs = sc_model_last_step_macs(m);
        if (sc_nn_avx512()) {
                assert_true(macs < dense - 8 * 2 * conv2 * 0.75);
                assert_true(macs > dense - 8 * 2 * conv2);
        } else {
                assert_true(macs == dense);
        }
        sc_model_destroy(m);
}

/* ---- batches ----------------------------------------------------------- */

static void batch_growth_and_eval(void **state)
{
        sc_model_t *m = new_cnn(3);
        sc_rng_t r;
        const int big = 24;
        float *x = malloc(sizeof(float) * 784 * big), *out = malloc(sizeof(float) * 10 * big);
        float *out2 = malloc(sizeof(float) * 10 * big);
        int32_t y[24];

        sc_rng_seed(&r, 4);
        for (int i = 0; i < 784 * big; i++)
                x[i] = sc_rng_normal(&r);
        for (int i = 0; i < big; i++)
                y[i] = (int32_t)sc_rng_below(&r, 10);
        int c1 = -1, c2 = -1;
        float small = sc_model_train_batch(m, x, y, NULL, 4, NULL, &c1);
        float l_big = sc_model_train_batch(m, x, y, NULL, big, NULL, NULL);
        float again = sc_model_train_batch(m, x, y, NULL, 4, NULL, &c2);
        assert_true(isfinite(small) && isfinite(l_big));
        assert_true(small == again && c1 == c2);
        assert_true(c1 >= 0 && c1 <= 4);
        /* eval's loss equals train's (no dropout); per-sample logits do not
         * depend on the rest of the batch. */
        int ce = -1;
        float le = sc_model_eval_batch(m, x, y, NULL, big, &ce, out);
        assert_true(fabsf(le - l_big) < 1e-5f * (1 + fabsf(l_big)));
        sc_model_eval_batch(m, x + 784 * 5, NULL, NULL, 3, NULL, out2);
        for (int i = 0; i < 30; i++)
                assert_true(fabsf(out2[i] - out[50 + i]) < 1e-4f);
        /* Changing the thread count resizes conv workspaces, same results. */
        sc_nn_set_threads(2);
        float l2 = sc_model_train_batch(m, x, y, NULL, big, NULL, NULL);
        sc_nn_set_threads(1);
        float l1 = sc_model_train_batch(m, x, y, NULL, big, NULL, NULL);
        assert_true(fabsf(l2 - l_big) < 1e-5f * (1 + fabsf(l_big)));
        assert_true(fabsf(l1 - l_big) < 1e-5f * (1 + fabsf(l_big)));
        /* Bad calls. */
        int32_t bad[4] = {0, 1, 10, 2};
        assert_true(isnan(sc_model_train_batch(m, x, bad, NULL, 4, NULL, NULL)));
        assert_true(isnan(sc_model_train_batch(m, x, NULL, NULL, 4, NULL, NULL)));
        assert_true(isnan(sc_model_train_batch(m, x, y, NULL, 0, NULL, NULL)));
        assert_true(sc_model_eval_batch(m, x, NULL, NULL, 2, NULL, NULL) == 0.0f);
        free(x);
        free(out);
        free(out2);
        sc_model_destroy(m);
}

/* ---- learning ---------------------------------------------------------- */

/* Trains m on (x, y) of n samples for steps of batch B, SGD momentum 0.9;
 * returns the final full-set accuracy and sets *first / *last losses. */
static double train(sc_model_t *m, const float *x, const int32_t *y, int n, int numel, int B,
                    int steps, float lr, float *first, float *last)
{
        sc_sgd_t sgd = {0};
        sc_rng_t r;
        float *bx = malloc(sizeof(float) * numel * B);
        int32_t *by = malloc(sizeof(int32_t) * B);

        sc_rng_seed(&r, 11);
        assert_int_equal(sc_sgd_init(&sgd, &(sc_sgd_spec_t){.momentum = 0.9}, sc_model_nparams(m)),
                         SC_OK);
        *first = sc_model_eval_batch(m, x, y, NULL, n, NULL, NULL);
        for (int s = 0; s < steps; s++) {
                for (int b = 0; b < B; b++) {
                        int i = (int)sc_rng_below(&r, (uint32_t)n);
                        memcpy(bx + (size_t)b * numel, x + (size_t)i * numel,
                               sizeof(float) * numel);
                        by[b] = y[i];
                }
                float l = sc_model_train_batch(m, bx, by, NULL, B, &r, NULL);
                assert_true(isfinite(l));
                sc_sgd_step(&sgd, sc_model_params(m), sc_model_grads(m), lr);
        }
        int correct = 0;
        *last = sc_model_eval_batch(m, x, y, NULL, n, &correct, NULL);
        sc_sgd_free(&sgd);
        free(bx);
        free(by);
        return (double)correct / n;
}

static void mlp_learns_blobs(void **state)
{
        /* 4 Gaussian blobs in 10 dimensions. */
        enum { N = 400, D = 10, K = 4 };
        float centers[K][D], *x = malloc(sizeof(float) * N * D);
        int32_t y[N];
        sc_rng_t r;
        sc_rng_seed(&r, 12);
        for (int k = 0; k < K; k++)
                for (int d = 0; d < D; d++)
                        centers[k][d] = 2.0f * sc_rng_normal(&r);
        for (int i = 0; i < N; i++) {
                y[i] = i % K;
                for (int d = 0; d < D; d++)
                        x[i * D + d] = centers[y[i]][d] + sc_rng_normal(&r);
        }
        sc_model_spec_t spec = {.input = {D, 1, 1},
                                .n_layers = 4,
                                .layers = {dense(16),
                                           L(SC_LAYER_RELU),
                                           {.kind = SC_LAYER_DROPOUT, .rate = 0.1f},
                                           dense(K)},
                                .loss = SC_LOSS_SOFTMAX_XENT};
        sc_model_t *m = NULL;
        char err[128];
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        sc_model_init(m, &r);
        float first, last;
        double acc = train(m, x, y, N, D, 16, 300, 0.05f, &first, &last);
        assert_true(last < 0.2f * first);
        assert_true(acc > 0.95);
        free(x);
        sc_model_destroy(m);
}

static void cnn_learns_bars(void **state)
{
        /* 8x8 images: a horizontal or vertical bar at a random place, plus noise. */
        enum { N = 256, S = 8 };
        float *x = calloc(N * S * S, sizeof(float));
        int32_t y[N];
        sc_rng_t r;
        sc_rng_seed(&r, 13);
        for (int i = 0; i < N; i++) {
                y[i] = i % 2;
                int at = (int)sc_rng_below(&r, S);
                for (int j = 0; j < S * S; j++)
                        x[i * S * S + j] = 0.3f * sc_rng_normal(&r);
                for (int j = 0; j < S; j++)
                        x[i * S * S + (y[i] ? j * S + at : at * S + j)] += 1.0f;
        }
        sc_model_spec_t spec = {.input = {1, S, S},
                                .n_layers = 6,
                                .layers = {conv(4, 3, 1), L(SC_LAYER_RELU), pool(2),
                                           L(SC_LAYER_FLATTEN), dense(8), dense(2)},
                                .loss = SC_LOSS_SOFTMAX_XENT};
        sc_model_t *m = NULL;
        char err[128];
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        sc_model_init(m, &r);
        float first, last;
        double acc = train(m, x, y, N, S * S, 16, 200, 0.05f, &first, &last);
        assert_true(last < 0.2f * first);
        assert_true(acc > 0.95);
        free(x);
        sc_model_destroy(m);
}

static void mse_regression_learns(void **state)
{
        /* y = sin-free smooth target: t = tanh(w . x) for a fixed w. */
        enum { N = 256, D = 4 };
        float x[N * D], t[N];
        sc_rng_t r;
        sc_rng_seed(&r, 14);
        for (int i = 0; i < N; i++) {
                float s = 0;
                for (int d = 0; d < D; d++) {
                        x[i * D + d] = sc_rng_normal(&r);
                        s += (d + 1) * 0.3f * x[i * D + d];
                }
                t[i] = tanhf(s);
        }
        sc_model_spec_t spec = {.input = {D, 1, 1},
                                .n_layers = 3,
                                .layers = {dense(16), L(SC_LAYER_TANH), dense(1)},
                                .loss = SC_LOSS_MSE};
        sc_model_t *m = NULL;
        sc_sgd_t sgd = {0};
        char err[128];
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        sc_model_init(m, &r);
        assert_int_equal(sc_sgd_init(&sgd, &(sc_sgd_spec_t){.momentum = 0.9, .nesterov = 1},
                                     sc_model_nparams(m)),
                         SC_OK);
        float first = sc_model_eval_batch(m, x, NULL, t, N, NULL, NULL);
        for (int e = 0; e < 100; e++) {
                for (int b = 0; b < N; b += 32) {
                        assert_true(isfinite(
                            sc_model_train_batch(m, x + b * D, NULL, t + b, 32, NULL, NULL)));
                        sc_sgd_step(&sgd, sc_model_params(m), sc_model_grads(m), 0.05f);
                }
        }
        float last = sc_model_eval_batch(m, x, NULL, t, N, NULL, NULL);
        assert_true(last < 0.05f * first);
        sc_sgd_free(&sgd);
        sc_model_destroy(m);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(shape_errors),          cmocka_unit_test(cnn_layout_and_views),
            cmocka_unit_test(same_seed_same_model),  cmocka_unit_test(step_macs_count_what_ran),
            cmocka_unit_test(batch_growth_and_eval), cmocka_unit_test(mlp_learns_blobs),
            cmocka_unit_test(cnn_learns_bars),       cmocka_unit_test(mse_regression_learns),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
