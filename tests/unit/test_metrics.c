/* test_metrics.c — prequential metrics against a recomputation from the raw
 * sample sequence (since start, sliding window, per class, confusion), the
 * loss against the model's own softmax cross-entropy, JSON and bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_metrics.h"
#include "sc_nn.h"
#include "sc_rng.h"

#define C 4
#define N 1000
#define W 37

/* Recomputes every figure from the first n samples of (y, p, l) and checks m. */
static void check_against(const sc_metrics_t *m, const int32_t *y, const int32_t *p,
                          const double *l, size_t n)
{
        sc_metrics_summary_t s;
        sc_metrics_summary(m, &s);
        uint64_t hits = 0, cm[C][C] = {{0}};
        double loss = 0;
        for (size_t i = 0; i < n; i++) {
                hits += y[i] == p[i];
                loss += l[i];
                cm[y[i]][p[i]]++;
        }
        size_t w0 = n > W ? n - W : 0;
        uint64_t whits = 0;
        double wloss = 0;
        for (size_t i = w0; i < n; i++) {
                whits += y[i] == p[i];
                wloss += l[i];
        }
        assert_int_equal(s.n, n);
        assert_int_equal(s.hits, hits);
        assert_int_equal(s.window_n, n - w0);
        assert_int_equal(s.window_hits, whits);
        if (n) {
                assert_true(s.accuracy == (double)hits / (double)n);
                assert_true(fabs(s.loss - loss / (double)n) < 1e-9);
                assert_true(s.window_accuracy == (double)whits / (double)(n - w0));
                assert_true(fabs(s.window_loss - wloss / (double)(n - w0)) < 1e-9);
        }
        for (int t = 0; t < C; t++)
                for (int q = 0; q < C; q++)
                        assert_int_equal(sc_metrics_confusion(m, t, q), cm[t][q]);
}

static void test_recompute(void **state)
{
        (void)state;
        static int32_t y[N], p[N];
        static double l[N];
        sc_metrics_t *m;
        char err[128];
        sc_rng_t rng;
        sc_rng_seed(&rng, 7);
        assert_int_equal(sc_metrics_new(&m, C, W, err, sizeof(err)), SC_OK);
        check_against(m, y, p, l, 0);
        for (size_t i = 0; i < N; i++) {
                y[i] = (int32_t)(sc_rng_u64(&rng) % C);
                /* right about 60% of the time */
                p[i] = sc_rng_uniform(&rng) < 0.6 ? y[i] : (int32_t)(sc_rng_u64(&rng) % C);
                l[i] = 3.0 * sc_rng_uniform(&rng);
                sc_metrics_add(m, y[i], p[i], l[i]);
                check_against(m, y, p, l, i + 1);
        }
        /* out-of-range labels are ignored */
        sc_metrics_add(m, C, 0, 1.0);
        sc_metrics_add(m, -1, 0, 1.0);
        check_against(m, y, p, l, N);
        sc_metrics_reset(m);
        check_against(m, y, p, l, 0);
        sc_metrics_destroy(m);
}

/* The loss from logits is the model's softmax cross-entropy; the prediction
 * its argmax. */
static void test_logits_match_model(void **state)
{
        (void)state;
        sc_model_spec_t spec;
        memset(&spec, 0, sizeof(spec));
        spec.input = (sc_shape_t){6, 1, 1};
        spec.loss = SC_LOSS_SOFTMAX_XENT;
        spec.n_layers = 3;
        spec.layers[0] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 8};
        spec.layers[1] = (sc_layer_spec_t){.kind = SC_LAYER_RELU};
        spec.layers[2] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = C};
        sc_model_t *model;
        char err[256];
        if (sc_model_new(&model, &spec, err, sizeof(err)) != SC_OK)
                fail_msg("%s", err);
        sc_rng_t rng;
        sc_rng_seed(&rng, 3);
        sc_model_init(model, &rng);
        enum { B = 50 };
        float x[B * 6], out[B * C];
        int32_t y[B];
        for (int i = 0; i < B * 6; i++)
                x[i] = (float)(2.0 * sc_rng_uniform(&rng) - 1.0);
        for (int i = 0; i < B; i++)
                y[i] = (int32_t)(sc_rng_u64(&rng) % C);
        int correct = 0;
        float loss = sc_model_eval_batch(model, x, y, NULL, B, &correct, out);
        sc_metrics_t *m;
        assert_int_equal(sc_metrics_new(&m, C, 1000, err, sizeof(err)), SC_OK);
        sc_metrics_add_logits(m, out, y, B);
        sc_metrics_summary_t s;
        sc_metrics_summary(m, &s);
        assert_int_equal(s.n, B);
        assert_int_equal(s.hits, (uint64_t)correct);
        assert_true(fabs(s.loss - (double)loss) < 1e-5);
        /* The training pass's outputs are the predictions of a model without
         * dropout or batchnorm (the worker scores batches with them). */
        float tout[B * C];
        int tcorrect = 0;
        assert_true(sc_model_train_is_eval(model));
        float tloss = sc_model_train_batch_out(model, x, y, NULL, B, &rng, &tcorrect, tout);
        assert_true(fabsf(tloss - loss) < 1e-6f);
        assert_int_equal(tcorrect, correct);
        for (int i = 0; i < B * C; i++)
                assert_true(fabsf(tout[i] - out[i]) <= 1e-5f * (1.0f + fabsf(out[i])));
        sc_metrics_destroy(m);
        sc_model_destroy(model);
        spec.n_layers = 4;
        spec.layers[3] = spec.layers[2];
        spec.layers[2] = (sc_layer_spec_t){.kind = SC_LAYER_DROPOUT, .rate = 0.5f};
        assert_int_equal(sc_model_new(&model, &spec, err, sizeof(err)), SC_OK);
        assert_false(sc_model_train_is_eval(model));
        sc_model_destroy(model);
}

static void test_json(void **state)
{
        (void)state;
        sc_metrics_t *m;
        char err[128];
        assert_int_equal(sc_metrics_new(&m, 3, 2, err, sizeof(err)), SC_OK);
        sc_metrics_add(m, 0, 0, 0.5);
        sc_metrics_add(m, 0, 1, 1.5);
        sc_metrics_add(m, 1, 1, 0.25);
        json_t *j = sc_metrics_json(m);
        assert_non_null(j);
        assert_int_equal(json_integer_value(json_object_get(j, "samples")), 3);
        assert_true(json_real_value(json_object_get(j, "accuracy")) == 2.0 / 3.0);
        assert_int_equal(json_integer_value(json_object_get(j, "window_samples")), 2);
        assert_true(json_real_value(json_object_get(j, "window_accuracy")) == 0.5);
        assert_true(fabs(json_real_value(json_object_get(j, "window_loss")) - 0.875) < 1e-12);
        json_t *pc = json_object_get(j, "per_class_accuracy");
        assert_true(json_real_value(json_array_get(pc, 0)) == 0.5);
        assert_true(json_real_value(json_array_get(pc, 1)) == 1.0);
        assert_true(json_is_null(json_array_get(pc, 2)));
        json_t *cm = json_object_get(j, "confusion");
        assert_int_equal(json_integer_value(json_array_get(json_array_get(cm, 0), 1)), 1);
        assert_int_equal(json_integer_value(json_array_get(json_array_get(cm, 1), 1)), 1);
        json_decref(j);
        sc_metrics_destroy(m);
}

static void same_summary(const sc_metrics_t *a, const sc_metrics_t *b)
{
        sc_metrics_summary_t x, y;
        sc_metrics_summary(a, &x);
        sc_metrics_summary(b, &y);
        assert_int_equal(x.n, y.n);
        assert_int_equal(x.hits, y.hits);
        assert_int_equal(x.window_n, y.window_n);
        assert_int_equal(x.window_hits, y.window_hits);
        assert_true(fabs(x.loss - y.loss) <= 1e-12 * fmax(1, fabs(x.loss)));
        assert_true(fabs(x.window_loss - y.window_loss) <= 1e-9 * fmax(1, fabs(x.window_loss)));
        for (int t = 0; t < C; t++)
                for (int q = 0; q < C; q++)
                        assert_int_equal(sc_metrics_confusion(a, t, q),
                                         sc_metrics_confusion(b, t, q));
}

/* A restart carries the metrics on: the state of a partly filled and of a
 * wrapped window restores into fresh metrics that then agree sample for
 * sample with the original; a shorter window keeps the newest samples;
 * states that disagree with themselves are refused, leaving m unchanged. */
static void test_state_restores(void **state)
{
        sc_metrics_t *a, *b, *s;
        sc_rng_t rng;
        char err[256];
        (void)state;
        sc_rng_seed(&rng, 11);
        assert_int_equal(sc_metrics_new(&a, C, W, err, sizeof(err)), SC_OK);
        for (int phase = 0; phase < 2; phase++) {
                int adds = phase ? 3 * W + 5 : W / 2; /* wrapped, then partial */
                sc_metrics_reset(a);
                for (int i = 0; i < adds; i++)
                        sc_metrics_add(a, (int32_t)sc_rng_below(&rng, C),
                                       (int32_t)sc_rng_below(&rng, C), sc_rng_uniform(&rng) * 3);
                json_t *st = sc_metrics_state(a);
                assert_non_null(st);
                /* through text, as in a checkpoint */
                char *text = json_dumps(st, JSON_COMPACT);
                json_decref(st);
                st = json_loads(text, 0, NULL);
                free(text);
                assert_int_equal(sc_metrics_new(&b, C, W, err, sizeof(err)), SC_OK);
                assert_int_equal(sc_metrics_restore(b, st, err, sizeof(err)), SC_OK);
                same_summary(a, b);
                for (int i = 0; i < 2 * W; i++) {
                        int32_t y = (int32_t)sc_rng_below(&rng, C),
                                q = (int32_t)sc_rng_below(&rng, C);
                        double l = sc_rng_uniform(&rng);
                        sc_metrics_add(a, y, q, l);
                        sc_metrics_add(b, y, q, l);
                        same_summary(a, b);
                }
                sc_metrics_destroy(b);
                /* a shorter window: the newest 5 of the state's */
                assert_int_equal(sc_metrics_new(&s, C, 5, err, sizeof(err)), SC_OK);
                assert_int_equal(sc_metrics_restore(s, st, err, sizeof(err)), SC_OK);
                sc_metrics_summary_t x;
                sc_metrics_summary(s, &x);
                const char *wh = json_string_value(json_object_get(st, "window_hits"));
                size_t len = strlen(wh), ones = 0;
                for (size_t k = len > 5 ? len - 5 : 0; k < len; k++)
                        ones += wh[k] == '1';
                assert_int_equal(x.window_n, len < 5 ? len : 5);
                assert_int_equal(x.window_hits, ones);
                sc_metrics_destroy(s);
                json_decref(st);
        }
        /* refused: each breaks one rule; m keeps its counts */
        static const char *const bad[] = {
            "[]",
            "{\"samples\": 3, \"hits\": 4, \"loss_sum\": 1, \"confusion\": [], "
            "\"window_hits\": \"\", \"window_loss\": []}",
            "{\"samples\": 1, \"hits\": 0, \"loss_sum\": -1, \"confusion\": [], "
            "\"window_hits\": \"\", \"window_loss\": []}",
            "{\"samples\": 1, \"hits\": 0, \"loss_sum\": 1, \"confusion\": [1], "
            "\"window_hits\": \"\", \"window_loss\": []}",
        };
        sc_metrics_summary_t before, after;
        sc_metrics_summary(a, &before);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                json_t *st = json_loads(bad[i], 0, NULL);
                assert_non_null(st);
                assert_int_equal(sc_metrics_restore(a, st, err, sizeof(err)), SC_ERR_CORRUPT);
                assert_non_null(strstr(err, "$"));
                json_decref(st);
        }
        /* a diagonal that is not the hits, a window longer than the samples */
        json_t *st = sc_metrics_state(a);
        json_object_set_new(st, "hits",
                            json_integer(json_integer_value(json_object_get(st, "hits")) + 1));
        assert_int_equal(sc_metrics_restore(a, st, err, sizeof(err)), SC_ERR_CORRUPT);
        assert_non_null(strstr(err, "$.confusion"));
        json_decref(st);
        st = sc_metrics_state(a);
        json_object_set_new(st, "window_hits", json_string("01x"));
        assert_int_equal(sc_metrics_restore(a, st, err, sizeof(err)), SC_ERR_CORRUPT);
        json_decref(st);
        sc_metrics_summary(a, &after);
        assert_int_equal(before.n, after.n);
        assert_int_equal(before.window_n, after.window_n);
        sc_metrics_destroy(a);
}

static void test_bad_args(void **state)
{
        (void)state;
        sc_metrics_t *m = (sc_metrics_t *)&m;
        char err[128];
        assert_int_equal(sc_metrics_new(&m, 0, 10, err, sizeof(err)), SC_ERR_INVAL);
        assert_null(m);
        assert_int_equal(sc_metrics_new(&m, 3, 0, err, sizeof(err)), SC_ERR_INVAL);
        assert_non_null(strstr(err, "window"));
        sc_metrics_destroy(NULL);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_recompute), cmocka_unit_test(test_logits_match_model),
            cmocka_unit_test(test_json),      cmocka_unit_test(test_state_restores),
            cmocka_unit_test(test_bad_args),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
