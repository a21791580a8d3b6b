/* test_data.c — data set allocation, normalization, batch gathering and the
 * synthetic generator (determinism, label range, learnability). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_data.h"

static void alloc_free_and_errors(void **state)
{
        char err[256];
        sc_dataset_t ds;
        assert_int_equal(sc_dataset_alloc(&ds, 5, (sc_shape_t){2, 3, 4}, 7, err, sizeof(err)),
                         SC_OK);
        assert_int_equal(ds.n, 5);
        assert_int_equal(ds.n_classes, 7);
        for (size_t i = 0; i < 5 * 24; i++)
                assert_true(ds.x[i] == 0.0f);
        sc_dataset_free(&ds);
        assert_null(ds.x);
        assert_int_equal(ds.n, 0);
        sc_dataset_free(&ds); /* zeroed: fine */
        sc_dataset_free(NULL);

        assert_int_equal(sc_dataset_alloc(&ds, 0, (sc_shape_t){1, 1, 1}, 2, err, sizeof(err)),
                         SC_ERR_INVAL);
        assert_null(ds.x);
        assert_int_equal(sc_dataset_alloc(&ds, 3, (sc_shape_t){1, 0, 1}, 2, err, sizeof(err)),
                         SC_ERR_INVAL);
        assert_non_null(strstr(err, "shape"));
        assert_int_equal(sc_dataset_alloc(&ds, 3, (sc_shape_t){1, 1, 1}, 0, err, sizeof(err)),
                         SC_ERR_INVAL);
        assert_int_equal(
            sc_dataset_alloc(&ds, 3, (sc_shape_t){4096, 4096, 4096}, 2, err, sizeof(err)),
            SC_ERR_INVAL);
}

static void normalize_and_gather(void **state)
{
        char err[256];
        sc_dataset_t ds;
        assert_int_equal(sc_dataset_alloc(&ds, 4, (sc_shape_t){1, 1, 3}, 4, err, sizeof(err)),
                         SC_OK);
        for (int i = 0; i < 12; i++)
                ds.x[i] = (float)i;
        for (int i = 0; i < 4; i++)
                ds.y[i] = 3 - i;
        assert_int_equal(sc_dataset_normalize(&ds, 2.0f, 4.0f, err, sizeof(err)), SC_OK);
        for (int i = 0; i < 12; i++)
                assert_float_equal(ds.x[i], (i - 2.0) / 4.0, 1e-6);
        assert_int_equal(sc_dataset_normalize(&ds, 0.0f, 0.0f, err, sizeof(err)), SC_ERR_INVAL);
        assert_int_equal(sc_dataset_normalize(&ds, 0.0f, NAN, err, sizeof(err)), SC_ERR_INVAL);

        uint32_t idx[3] = {2, 0, 2};
        float x[9];
        int32_t y[3];
        sc_dataset_gather(&ds, idx, 3, x, y);
        assert_int_equal(y[0], 1);
        assert_int_equal(y[1], 3);
        assert_int_equal(y[2], 1);
        for (int j = 0; j < 3; j++) {
                assert_float_equal(x[j], (6 + j - 2.0) / 4.0, 1e-6);
                assert_float_equal(x[3 + j], (j - 2.0) / 4.0, 1e-6);
                assert_float_equal(x[6 + j], x[j], 0);
        }
        sc_dataset_gather(&ds, idx, 1, x, NULL); /* labels optional */
        sc_dataset_free(&ds);
}

static sc_synth_spec_t spec_of(size_t n, uint64_t proto_seed)
{
        sc_synth_spec_t s = {
            .n = n, .shape = {1, 4, 5}, .n_classes = 5, .noise = 0.8f, .proto_seed = proto_seed};
        return s;
}

static void synth_deterministic(void **state)
{
        char err[256];
        sc_dataset_t a, b, c;
        sc_rng_t ra, rb, rc;
        sc_synth_spec_t s = spec_of(300, 11);
        sc_rng_seed(&ra, 5);
        sc_rng_seed(&rb, 5);
        sc_rng_seed(&rc, 6);
        assert_int_equal(sc_synth_make(&a, &s, &ra, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_synth_make(&b, &s, &rb, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_synth_make(&c, &s, &rc, err, sizeof(err)), SC_OK);
        assert_memory_equal(a.x, b.x, 300 * 20 * sizeof(float));
        assert_memory_equal(a.y, b.y, 300 * sizeof(int32_t));
        assert_memory_not_equal(a.x, c.x, 300 * 20 * sizeof(float));
        int counts[5] = {0};
        for (size_t i = 0; i < a.n; i++) {
                assert_true(a.y[i] >= 0 && a.y[i] < 5);
                counts[a.y[i]]++;
        }
        for (int k = 0; k < 5; k++)
                assert_true(counts[k] > 30); /* every class present, roughly even */
        sc_dataset_free(&a);
        sc_dataset_free(&b);
        sc_dataset_free(&c);
}

/* Class means from one set classify another set made with the same
 * proto_seed (nearest mean) far above chance; a different proto_seed does
 * not share prototypes. */
static double nearest_mean_accuracy(const sc_dataset_t *tr, const sc_dataset_t *te)
{
        size_t d = sc_shape_numel(tr->shape);
        int k = tr->n_classes;
        double *mean = calloc((size_t)k * d, sizeof(double));
        int *cnt = calloc((size_t)k, sizeof(int));
        assert_non_null(mean);
        assert_non_null(cnt);
        for (size_t i = 0; i < tr->n; i++) {
                cnt[tr->y[i]]++;
                for (size_t j = 0; j < d; j++)
                        mean[(size_t)tr->y[i] * d + j] += tr->x[i * d + j];
        }
        for (int c = 0; c < k; c++)
                for (size_t j = 0; j < d; j++)
                        mean[(size_t)c * d + j] /= cnt[c] ? cnt[c] : 1;
        size_t hits = 0;
        for (size_t i = 0; i < te->n; i++) {
                int best = 0;
                double bestd = INFINITY;
                for (int c = 0; c < k; c++) {
                        double dist = 0;
                        for (size_t j = 0; j < d; j++) {
                                double t = te->x[i * d + j] - mean[(size_t)c * d + j];
                                dist += t * t;
                        }
                        if (dist < bestd) {
                                bestd = dist;
                                best = c;
                        }
                }
                hits += best == te->y[i];
        }
        free(mean);
        free(cnt);
        return (double)hits / (double)te->n;
}

static void synth_learnable(void **state)
{
        char err[256];
        sc_dataset_t tr, te, other;
        sc_rng_t r;
        sc_rng_seed(&r, 1);
        sc_synth_spec_t s = spec_of(500, 99);
        assert_int_equal(sc_synth_make(&tr, &s, &r, err, sizeof(err)), SC_OK);
        s.n = 400;
        assert_int_equal(sc_synth_make(&te, &s, &r, err, sizeof(err)), SC_OK);
        s.proto_seed = 100;
        assert_int_equal(sc_synth_make(&other, &s, &r, err, sizeof(err)), SC_OK);
        double acc = nearest_mean_accuracy(&tr, &te);
        double acc_other = nearest_mean_accuracy(&tr, &other);
        assert_true(acc > 0.95);
        assert_true(acc_other < 0.5);
        sc_dataset_free(&tr);
        sc_dataset_free(&te);
        sc_dataset_free(&other);
}

static void synth_errors(void **state)
{
        char err[256];
        sc_dataset_t ds;
        sc_rng_t r;
        sc_rng_seed(&r, 1);
        sc_synth_spec_t s = spec_of(10, 1);
        s.noise = -1.0f;
        assert_int_equal(sc_synth_make(&ds, &s, &r, err, sizeof(err)), SC_ERR_INVAL);
        assert_non_null(strstr(err, "noise"));
        s.noise = NAN;
        assert_int_equal(sc_synth_make(&ds, &s, &r, err, sizeof(err)), SC_ERR_INVAL);
        s = spec_of(10, 1);
        s.n_classes = 1;
        assert_int_equal(sc_synth_make(&ds, &s, &r, err, sizeof(err)), SC_ERR_INVAL);
        s = spec_of(0, 1);
        assert_int_equal(sc_synth_make(&ds, &s, &r, err, sizeof(err)), SC_ERR_INVAL);
        assert_null(ds.x);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(alloc_free_and_errors), cmocka_unit_test(normalize_and_gather),
            cmocka_unit_test(synth_deterministic),   cmocka_unit_test(synth_learnable),
            cmocka_unit_test(synth_errors),
        };
        return cmocka_run_group_tests_name("data", tests, NULL, NULL);
}
