/* test_nn_threads.c — the compute threads of core/nn: the pool runs every
 * part once and on more than one thread, a model trained with 2 threads
 * matches 1 thread to float tolerance and is bit-identical between runs
 * (also with dropout, and with two models training on two threads at once),
 * and worker threads are joined when the count drops or the model is freed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../core/nn/nn_impl.h"
#include "sc_nn.h"
#include "sc_optim.h"

/* ---- the pool itself -------------------------------------------------- */

typedef struct parts {
        _Atomic int runs[256];
        _Atomic int started;
        pthread_t who[2];
        int waited_out; /* the other part never started (1 s) */
} parts_t;

static double now(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void count_part(void *ctx, int i)
{
        parts_t *p = ctx;
        atomic_fetch_add(&p->runs[i], 1);
}

/* Each of two parts waits until the other has started: they can only both
 * finish if two threads run them at once. */
static void meet_part(void *ctx, int i)
{
        parts_t *p = ctx;
        p->who[i] = pthread_self();
        atomic_fetch_add(&p->started, 1);
        double t0 = now();
        while (atomic_load(&p->started) < 2) {
                if (now() - t0 > 5.0) {
                        p->waited_out = 1;
                        return;
                }
                sched_yield();
        }
}

static void pool_runs_parts(void **state)
{
        (void)state;
        parts_t *p = calloc(1, sizeof(*p));
        assert_non_null(p);
        assert_null(sc_nn_pool_new(1));
        sc_nn_pool_t *pool = sc_nn_pool_new(2);
        assert_non_null(pool);
        assert_int_equal(sc_nn_pool_live(), 0); /* started on first use */
        /* The first jobs of a pool always go to its workers. */
        sc_nn_pool_run(pool, 2, meet_part, p);
        assert_int_equal(sc_nn_pool_live(), 1);
        assert_false(p->waited_out);
        assert_int_equal(atomic_load(&p->started), 2);
        assert_false(pthread_equal(p->who[0], p->who[1]));
        assert_true(sc_nn_pool_worker_parts(pool) >= 1);
        /* Every part runs once, whoever runs it (on a busy machine some of
         * these jobs run on the caller alone). */
        for (int rep = 0; rep < 2000; rep++) {
                int n = 1 + rep % 256;
                memset(p->runs, 0, sizeof(p->runs));
                sc_nn_pool_run(pool, n, count_part, p);
                for (int i = 0; i < 256; i++)
                        assert_int_equal(atomic_load(&p->runs[i]), i < n);
        }
        sc_nn_pool_free(pool);
        assert_int_equal(sc_nn_pool_live(), 0);
        /* NULL runs in order on the caller. */
        memset(p->runs, 0, sizeof(p->runs));
        sc_nn_pool_run(NULL, 3, count_part, p);
        assert_int_equal(atomic_load(&p->runs[2]), 1);
        free(p);
}

/* ---- models ----------------------------------------------------------- */

static sc_layer_spec_t L(sc_layer_kind_t kind)
{
        return (sc_layer_spec_t){.kind = kind};
}

static sc_layer_spec_t dense(int units)
{
        return (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = units};
}

static void mlp_spec(sc_model_spec_t *s, int dropout)
{
        memset(s, 0, sizeof(*s));
        s->input = (sc_shape_t){1, 28, 28};
        s->loss = SC_LOSS_SOFTMAX_XENT;
        s->layers[s->n_layers++] = L(SC_LAYER_FLATTEN);
        s->layers[s->n_layers++] = dense(256);
        s->layers[s->n_layers++] = L(SC_LAYER_RELU);
        if (dropout)
                s->layers[s->n_layers++] =
                    (sc_layer_spec_t){.kind = SC_LAYER_DROPOUT, .rate = 0.25f};
        s->layers[s->n_layers++] = dense(128);
        s->layers[s->n_layers++] = L(SC_LAYER_TANH);
        s->layers[s->n_layers++] = dense(10);
}

static void cnn_spec(sc_model_spec_t *s)
{
        memset(s, 0, sizeof(*s));
        s->input = (sc_shape_t){1, 28, 28};
        s->loss = SC_LOSS_SOFTMAX_XENT;
        s->layers[s->n_layers++] =
            (sc_layer_spec_t){.kind = SC_LAYER_CONV2D, .filters = 16, .kernel = 3, .padding = 1};
        s->layers[s->n_layers++] = L(SC_LAYER_RELU);
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_MAXPOOL2D, .kernel = 2};
        s->layers[s->n_layers++] =
            (sc_layer_spec_t){.kind = SC_LAYER_CONV2D, .filters = 32, .kernel = 3, .padding = 1};
        s->layers[s->n_layers++] = L(SC_LAYER_RELU);
        s->layers[s->n_layers++] = (sc_layer_spec_t){.kind = SC_LAYER_MAXPOOL2D, .kernel = 2};
        s->layers[s->n_layers++] = L(SC_LAYER_FLATTEN);
        s->layers[s->n_layers++] = dense(64);
        s->layers[s->n_layers++] = L(SC_LAYER_RELU);
        s->layers[s->n_layers++] = dense(10);
}

typedef struct run {
        const sc_model_spec_t *spec;
        int B, steps;
        float *params; /* out: sc_model_nparams floats */
        float loss, eval_out[10];
} run_t;

/* steps of SGD with momentum on fixed random data from seed 7; the caller
 * sets the thread count. */
static void *train(void *arg)
{
        run_t *r = arg;
        sc_model_t *m = NULL;
        sc_sgd_t sgd;
        sc_rng_t rng;
        char err[128];

        assert_int_equal(sc_model_new(&m, r->spec, err, sizeof(err)), SC_OK);
        sc_rng_seed(&rng, 7);
        sc_model_init(m, &rng);
        assert_int_equal(sc_sgd_init(&sgd, &(sc_sgd_spec_t){.momentum = 0.9}, sc_model_nparams(m)),
                         SC_OK);
        float *x = malloc(sizeof(float) * 784 * (size_t)r->B);
        int32_t *y = malloc(sizeof(int32_t) * (size_t)r->B);
        float *out = malloc(sizeof(float) * 10 * (size_t)r->B);
        assert_true(x && y && out);
        for (int s = 0; s < r->steps; s++) {
                for (int i = 0; i < 784 * r->B; i++)
                        x[i] = sc_rng_normal(&rng);
                for (int i = 0; i < r->B; i++)
                        y[i] = (int32_t)sc_rng_below(&rng, 10);
                r->loss = sc_model_train_batch(m, x, y, NULL, r->B, &rng, NULL);
                assert_true(isfinite(r->loss));
                sc_sgd_step(&sgd, sc_model_params(m), sc_model_grads(m), 0.05f);
        }
        sc_model_eval_batch(m, x, y, NULL, r->B, NULL, out);
        memcpy(r->eval_out, out, sizeof(r->eval_out));
        memcpy(r->params, sc_model_params(m), sizeof(float) * sc_model_nparams(m));
        free(x);
        free(y);
        free(out);
        sc_sgd_free(&sgd);
        sc_model_destroy(m);
        return NULL;
}

static size_t nparams_of(const sc_model_spec_t *spec)
{
        sc_model_t *m = NULL;
        char err[128];
        assert_int_equal(sc_model_new(&m, spec, err, sizeof(err)), SC_OK);
        size_t n = sc_model_nparams(m);
        sc_model_destroy(m);
        return n;
}

/* 1 thread vs 2 (close), 2 vs 2 (bit-identical), for one spec and batch. */
static void compare_threads(const sc_model_spec_t *spec, int B, int steps, float tol)
{
        size_t n = nparams_of(spec);
        run_t r1 = {spec, B, steps, malloc(sizeof(float) * n), 0, {0}};
        run_t r2 = {spec, B, steps, malloc(sizeof(float) * n), 0, {0}};
        run_t r3 = {spec, B, steps, malloc(sizeof(float) * n), 0, {0}};
        assert_true(r1.params && r2.params && r3.params);

        sc_nn_set_threads(1);
        train(&r1);
        sc_nn_set_threads(2);
        train(&r2);
        train(&r3);
        sc_nn_set_threads(1);
        assert_int_equal(sc_nn_pool_live(), 0);

        assert_memory_equal(r2.params, r3.params, sizeof(float) * n);
        assert_memory_equal(r2.eval_out, r3.eval_out, sizeof(r2.eval_out));
        assert_true(r2.loss == r3.loss);
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
                double d = fabs((double)r1.params[i] - r2.params[i]) / (1.0 + fabs(r1.params[i]));
                worst = d > worst ? d : worst;
        }
        assert_true(worst < tol);
        assert_true(fabsf(r1.loss - r2.loss) < tol * (1 + fabsf(r1.loss)));
        for (int i = 0; i < 10; i++)
                assert_true(fabsf(r1.eval_out[i] - r2.eval_out[i]) <
                            tol * 10 * (1 + fabsf(r1.eval_out[i])));
        free(r1.params);
        free(r2.params);
        free(r3.params);
}

static void mlp_two_threads_match_one(void **state)
{
        (void)state;
        sc_model_spec_t spec;
        mlp_spec(&spec, 0);
        compare_threads(&spec, 64, 8, 1e-5f);
        compare_threads(&spec, 256, 3, 1e-5f);
        compare_threads(&spec, 5, 3, 1e-5f); /* dense layers below batch 32 do not split */
        mlp_spec(&spec, 1);
        compare_threads(&spec, 64, 5, 1e-5f);
}

static void cnn_two_threads_match_one(void **state)
{
        (void)state;
        sc_model_spec_t spec;
        cnn_spec(&spec);
        compare_threads(&spec, 32, 3, 1e-4f);
}

/* Two models, each with a pool of 2, training on two threads at once give
 * the results of one at a time. */
static void concurrent_models(void **state)
{
        (void)state;
        sc_model_spec_t spec;
        mlp_spec(&spec, 1);
        size_t n = nparams_of(&spec);
        run_t ref = {&spec, 64, 4, malloc(sizeof(float) * n), 0, {0}};
        run_t a = {&spec, 64, 4, malloc(sizeof(float) * n), 0, {0}};
        run_t b = {&spec, 64, 4, malloc(sizeof(float) * n), 0, {0}};
        assert_true(ref.params && a.params && b.params);
        sc_nn_set_threads(2);
        train(&ref);
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, train, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, train, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        sc_nn_set_threads(1);
        assert_memory_equal(ref.params, a.params, sizeof(float) * n);
        assert_memory_equal(ref.params, b.params, sizeof(float) * n);
        assert_int_equal(sc_nn_pool_live(), 0);
        free(ref.params);
        free(a.params);
        free(b.params);
}

/* Workers start on the first step with > 1 thread, follow the count and
 * are joined when it drops to 1 or the model is freed. */
static void threads_follow_count(void **state)
{
        (void)state;
        sc_model_spec_t spec;
        sc_model_t *m = NULL;
        char err[128];
        sc_rng_t rng;
        static float x[784 * 32];
        int32_t y[32] = {1, 2, 3, 4};

        mlp_spec(&spec, 0);
        sc_rng_seed(&rng, 1);
        sc_nn_set_threads(2);
        assert_int_equal(sc_model_new(&m, &spec, err, sizeof(err)), SC_OK);
        sc_model_init(m, &rng);
        assert_int_equal(sc_nn_pool_live(), 0);
        assert_true(isfinite(sc_model_train_batch(m, x, y, NULL, 32, NULL, NULL)));
        assert_int_equal(sc_nn_pool_live(), 1);
        sc_nn_set_threads(3);
        assert_true(isfinite(sc_model_eval_batch(m, x, y, NULL, 32, NULL, NULL)));
        assert_int_equal(sc_nn_pool_live(), 2);
        sc_nn_set_threads(1);
        assert_true(isfinite(sc_model_train_batch(m, x, y, NULL, 32, NULL, NULL)));
        assert_int_equal(sc_nn_pool_live(), 0);
        sc_nn_set_threads(2);
        assert_true(isfinite(sc_model_train_batch(m, x, y, NULL, 32, NULL, NULL)));
        assert_int_equal(sc_nn_pool_live(), 1);
        sc_model_destroy(m);
        assert_int_equal(sc_nn_pool_live(), 0);
        sc_nn_set_threads(1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(pool_runs_parts),
            cmocka_unit_test(mlp_two_threads_match_one),
            cmocka_unit_test(cnn_two_threads_match_one),
            cmocka_unit_test(concurrent_models),
            cmocka_unit_test(threads_follow_count),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
