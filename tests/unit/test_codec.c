/* test_codec.c — gradient codecs: exact top-k against a sort reference, error
 * feedback conservation, round trips, adaptive switching, index coding edge
 * cases and rejection of damaged payloads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sc_codec.h"

static char errbuf[256];

static void fill_normal(float *x, size_t n, uint64_t seed, int quantize)
{
        sc_rng_t r;
        sc_rng_seed(&r, seed);
        for (size_t i = 0; i < n; i++) {
                float v = sc_rng_normal(&r);
                x[i] = quantize ? rintf(v * 4.0f) / 4.0f : v; /* quantized: many ties */
        }
}

static const float *ref_x;

/* Larger magnitude first, then lower index. */
static int ref_cmp(const void *a, const void *b)
{
        uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
        float x = fabsf(ref_x[i]), y = fabsf(ref_x[j]);
        if (x != y)
                return x > y ? -1 : 1;
        return i < j ? -1 : i > j;
}

static int u32_cmp(const void *a, const void *b)
{
        uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
        return i < j ? -1 : i > j;
}

static void ref_topk(const float *x, size_t n, size_t k, uint32_t *out)
{
        uint32_t *all = malloc(n * sizeof(*all));
        for (size_t i = 0; i < n; i++)
                all[i] = (uint32_t)i;
        ref_x = x;
        qsort(all, n, sizeof(*all), ref_cmp);
        memcpy(out, all, k * sizeof(*out));
        qsort(out, k, sizeof(*out), u32_cmp);
        free(all);
}

static void check_topk(size_t n, size_t k, uint64_t seed, int quantize)
{
        float *x = malloc(n * sizeof(*x));
        uint32_t *got = malloc(k * sizeof(*got)), *want = malloc(k * sizeof(*want));
        fill_normal(x, n, seed, quantize);
        assert_int_equal(sc_codec_topk_select(x, n, k, got), SC_OK);
        ref_topk(x, n, k, want);
        for (size_t j = 0; j < k; j++) {
                if (got[j] != want[j])
                        fail_msg("n=%zu k=%zu quantize=%d: entry %zu is %u, expected %u", n, k,
                                 quantize, j, got[j], want[j]);
        }
        free(x);
        free(got);
        free(want);
}

static void topk_matches_sort_reference(void **state)
{
        static const size_t ns[] = {1, 2, 7, 100, 5000, 16385, 40000, 100000};
        for (size_t a = 0; a < sizeof(ns) / sizeof(ns[0]); a++) {
                size_t n = ns[a];
                size_t ks[] = {1, n / 100 + 1, n / 10 + 1, n / 2 + 1, n > 1 ? n - 1 : 1, n};
                for (size_t b = 0; b < sizeof(ks) / sizeof(ks[0]); b++) {
                        check_topk(n, ks[b], 11 + a * 7 + b, 0);
                        check_topk(n, ks[b], 99 + a * 7 + b, 1);
                }
        }
}

static void topk_all_equal_and_zero(void **state)
{
        size_t n = 50000, k = 500;
        float *x = calloc(n, sizeof(*x));
        uint32_t *sel = malloc(k * sizeof(*sel));
        /* all zeros: ties everywhere, lowest indices win */
        assert_int_equal(sc_codec_topk_select(x, n, k, sel), SC_OK);
        for (size_t j = 0; j < k; j++)
                assert_int_equal(sel[j], j);
        /* one large value at the end, the rest equal in magnitude with both signs */
        for (size_t i = 0; i < n; i++)
                x[i] = (i & 1) ? -1.0f : 1.0f;
        x[n - 1] = -5.0f;
        assert_int_equal(sc_codec_topk_select(x, n, k, sel), SC_OK);
        for (size_t j = 0; j < k - 1; j++)
                assert_int_equal(sel[j], j);
        assert_int_equal(sel[k - 1], n - 1);
        free(x);
        free(sel);
}

/* Data the sampled threshold could misjudge: sorted, a narrow spike between
 * sample strata, periodic with the sampling stride. */
static void topk_structured_inputs(void **state)
{
        const size_t n = 200000, k = 2000;
        float *x = malloc(n * sizeof(*x));
        uint32_t *got = malloc(k * sizeof(*got)), *want = malloc(k * sizeof(*want));
        for (int shape = 0; shape < 4; shape++) {
                for (size_t i = 0; i < n; i++) {
                        switch (shape) {
                        case 0:
                                x[i] = (float)i;
                                break;
                        case 1:
                                x[i] = -(float)(n - i);
                                break;
                        case 2:
                                x[i] = (i >= 150000 && i < 153000) ? 100.0f + (float)(i % 7) : 1.0f;
                                break;
                        default:
                                x[i] = (i % (n / 2048)) == 0 ? 50.0f : (float)(i % 13);
                                break;
                        }
                }
                assert_int_equal(sc_codec_topk_select(x, n, k, got), SC_OK);
                ref_topk(x, n, k, want);
                assert_memory_equal(got, want, k * sizeof(*got));
        }
        free(x);
        free(got);
        free(want);
}

/* White-box: large values exactly where topk.c samples (its stratified
 * positions, 2048 of them) make the sampled threshold too high, so the
 * selection must fall back to a full pass and still be exact. */
static void topk_sample_fallback(void **state)
{
        const size_t n = 100000, k = 3000, s = 2048;
        float *x = malloc(n * sizeof(*x));
        uint32_t *got = malloc(k * sizeof(*got)), *want = malloc(k * sizeof(*want));
        fill_normal(x, n, 12, 0);
        for (size_t j = 0; j < s; j++) {
                uint64_t h = (uint64_t)(j + 1) * 0x9e3779b97f4a7c15ull;
                size_t lo = j * n / s, span = (j + 1) * n / s - lo;
                x[lo + (size_t)((h >> 33) % span)] = 10.0f + (float)(j % 5);
        }
        assert_int_equal(sc_codec_topk_select(x, n, k, got), SC_OK);
        ref_topk(x, n, k, want);
        assert_memory_equal(got, want, k * sizeof(*got));
        free(x);
        free(got);
        free(want);
}

static void randk_is_seeded(void **state)
{
        const size_t n = 10000;
        float *g = malloc(n * sizeof(*g));
        sc_buf_t a, b;
        sc_rng_t r1, r2;
        sc_codec_t *c;
        sc_buf_init(&a);
        sc_buf_init(&b);
        fill_normal(g, n, 1, 0);
        assert_int_equal(sc_codec_new(&c, SC_CODEC_RANDK, NULL, n, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        sc_rng_seed(&r1, 3);
        sc_rng_seed(&r2, 3);
        assert_int_equal(sc_codec_encode(c, g, &r1, &a, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(sc_codec_encode(c, g, &r2, &b, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.data, b.data, a.len);
        b.len = 0;
        assert_int_equal(sc_codec_encode(c, g, &r1, &b, errbuf, sizeof(errbuf)), SC_OK);
        assert_true(a.len != b.len || memcmp(a.data, b.data, a.len) != 0);
        assert_int_equal(sc_codec_encode(c, g, NULL, &b, errbuf, sizeof(errbuf)), SC_ERR_INVAL);
        sc_codec_destroy(c);
        sc_buf_free(&a);
        sc_buf_free(&b);
        free(g);
}

static void k_rounding(void **state)
{
        assert_int_equal(sc_codec_k(0.01, SC_CODEC_K_FLOOR, 1000), 10);
        assert_int_equal(sc_codec_k(0.01, SC_CODEC_K_CEIL, 1000), 10);
        assert_int_equal(sc_codec_k((double)0.01f, SC_CODEC_K_FLOOR, 1000), 10);
        assert_int_equal(sc_codec_k(0.01, SC_CODEC_K_FLOOR, 150), 1);
        assert_int_equal(sc_codec_k(0.01, SC_CODEC_K_CEIL, 150), 2);
        assert_int_equal(sc_codec_k(0.01, SC_CODEC_K_FLOOR, 5), 1);
        assert_int_equal(sc_codec_k(1.0, SC_CODEC_K_CEIL, 5), 5);
}

static void names_and_bad_arguments(void **state)
{
        sc_codec_id_t id;
        sc_codec_t *c;
        sc_codec_params_t p;
        sc_tensor_view_t v[2] = {{"a", 0, 0, 10}, {"b", 1, 5, 10}};

        assert_int_equal(sc_codec_id_from_name("adaptive", &id, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(id, SC_CODEC_ADAPTIVE);
        assert_string_equal(sc_codec_name(SC_CODEC_Q8), "q8");
        assert_int_equal(sc_codec_id_from_name("zip", &id, errbuf, sizeof(errbuf)), SC_ERR_INVAL);
        assert_non_null(strstr(errbuf, "zip"));
        /* overlapping views */
        assert_int_equal(sc_codec_new(&c, SC_CODEC_TOPK, NULL, 20, v, 2, errbuf, sizeof(errbuf)),
                         SC_ERR_SHAPE);
        assert_null(c);
        assert_non_null(strstr(errbuf, "b"));
        /* views past the end */
        v[1].offset = 10;
        assert_int_equal(sc_codec_new(&c, SC_CODEC_TOPK, NULL, 15, v, 2, errbuf, sizeof(errbuf)),
                         SC_ERR_SHAPE);
        sc_codec_params_default(&p, SC_CODEC_TOPK);
        p.ratio = 0.0;
        assert_int_equal(sc_codec_new(&c, SC_CODEC_TOPK, &p, 15, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_ERR_INVAL);
        assert_non_null(strstr(errbuf, "ratio"));
        sc_codec_destroy(NULL);

        /* shard views: cut and shifted */
        sc_tensor_view_t all[3] = {{"w", 0, 0, 100}, {"b", 0, 100, 10}, {"w2", 1, 110, 50}}, cut[3];
        int nc = sc_codec_clip_views(all, 3, 95, 120, cut);
        assert_int_equal(nc, 3);
        assert_true(cut[0].offset == 0 && cut[0].numel == 5);
        assert_true(cut[1].offset == 5 && cut[1].numel == 10);
        assert_true(cut[2].offset == 15 && cut[2].numel == 10);
        assert_string_equal(cut[2].name, "w2");
        assert_int_equal(sc_codec_clip_views(all, 3, 100, 110, cut), 1);
        assert_int_equal(sc_codec_clip_views(all, 3, 160, 200, cut), 0);
}

/* Encodes with every codec, decodes, checks against the input. */
static void encode_decode(sc_codec_id_t id, const sc_codec_params_t *p, const float *g, size_t n,
                          const sc_tensor_view_t *v, int nv, float *out, sc_buf_t *buf)
{
        sc_codec_t *c;
        sc_rng_t rng;
        sc_rng_seed(&rng, 5);
        assert_int_equal(sc_codec_new(&c, id, p, n, v, nv, errbuf, sizeof(errbuf)), SC_OK);
        buf->len = 0;
        assert_int_equal(sc_codec_encode(c, g, &rng, buf, errbuf, sizeof(errbuf)), SC_OK);
        memset(out, 0, n * sizeof(*out));
        assert_int_equal(
            sc_codec_decode_add(buf->data, buf->len, out, n, 1.0f, errbuf, sizeof(errbuf)), SC_OK);
        sc_codec_stats_t st;
        sc_codec_stats(c, &st);
        assert_int_equal(st.last_bytes, buf->len);
        assert_int_equal(st.steps, 1);
        sc_codec_destroy(c);
}

static void round_trips(void **state)
{
        const size_t n = 3000;
        sc_tensor_view_t v[3] = {{"w0", 0, 0, 2000}, {"b0", 0, 2000, 10}, {"w1", 1, 2100, 800}};
        float *g = malloc(n * sizeof(*g)), *d = malloc(n * sizeof(*d));
        sc_buf_t buf;
        sc_codec_params_t p;
        sc_buf_init(&buf);
        fill_normal(g, n, 3, 0);
        g[2005] = 1e-30f; /* tiny values in a small tensor */
        g[2999] = 1e-6f;

        encode_decode(SC_CODEC_NONE, NULL, g, n, v, 3, d, &buf);
        assert_int_equal(buf.len, SC_CODEC_HDR_SIZE + 4 * n);
        assert_memory_equal(g, d, n * sizeof(*g));

        encode_decode(SC_CODEC_FP16, NULL, g, n, v, 3, d, &buf);
        assert_int_equal(buf.len, SC_CODEC_HDR_SIZE + 2 * n);
        for (size_t i = 0; i < n; i++)
                assert_true(fabsf(d[i] - g[i]) <= fabsf(g[i]) * 0x1p-11f + 0x1p-25f);

        encode_decode(SC_CODEC_Q8, NULL, g, n, v, 3, d, &buf);
        /* 5 tensors: the gap 2010..2100 and the tail 2900.. are tensors of their own */
        assert_int_equal(buf.len, SC_CODEC_HDR_SIZE + 4 + 8 * 5 + n);
        for (size_t i = 0; i < n; i++) {
                float maxabs = 0.0f;
                size_t lo = i < 2000   ? 0
                            : i < 2010 ? 2000
                            : i < 2100 ? 2010
                            : i < 2900 ? 2100
                                       : 2900;
                size_t hi = i < 2000   ? 2000
                            : i < 2010 ? 2010
                            : i < 2100 ? 2100
                            : i < 2900 ? 2900
                                       : n;
                for (size_t j = lo; j < hi; j++)
                        maxabs = fmaxf(maxabs, fabsf(g[j]));
                assert_true(fabsf(d[i] - g[i]) <= maxabs / 127.0f * 0.5001f);
        }

        sc_codec_params_default(&p, SC_CODEC_Q8);
        p.stochastic = 1;
        encode_decode(SC_CODEC_Q8, &p, g, n, v, 3, d, &buf);
        for (size_t i = 0; i < 2000; i++)
                assert_true(fabsf(d[i] - g[i]) <= 5.0f / 127.0f);

        sc_codec_params_default(&p, SC_CODEC_TOPK);
        p.ratio = 0.05;
        encode_decode(SC_CODEC_TOPK, &p, g, n, v, 3, d, &buf);
        size_t nnz = 0;
        for (size_t i = 0; i < n; i++) {
                if (d[i] != 0.0f) {
                        assert_true(d[i] == g[i]);
                        nnz++;
                }
        }
        /* per tensor: 100 + 1 + floor(4.5)=4 + 40 + 5 */
        assert_int_equal(nnz, 100 + 1 + 4 + 40 + 5);

        sc_codec_params_default(&p, SC_CODEC_RANDK);
        p.ratio = 0.1;
        p.scale = 1;
        encode_decode(SC_CODEC_RANDK, &p, g, n, v, 3, d, &buf);
        nnz = 0;
        for (size_t i = 0; i < 2000; i++) {
                if (d[i] != 0.0f) {
                        assert_float_equal(d[i], g[i] * 10.0f, 1e-5);
                        nnz++;
                }
        }
        assert_int_equal(nnz, 200);

        /* k > numel / 2 draws the complement */
        p.ratio = 0.75;
        p.scale = 0;
        encode_decode(SC_CODEC_RANDK, &p, g, n, v, 3, d, &buf);
        nnz = 0;
        for (size_t i = 0; i < n; i++) {
                if (d[i] != 0.0f) {
                        assert_true(d[i] == g[i]);
                        nnz++;
                }
        }
        assert_int_equal(nnz, 1500 + 7 + 67 + 600 + 75);

        /* a scaled dense add */
        encode_decode(SC_CODEC_NONE, NULL, g, n, v, 3, d, &buf);
        assert_int_equal(
            sc_codec_decode_add(buf.data, buf.len, d, n, -0.5f, errbuf, sizeof(errbuf)), SC_OK);
        for (size_t i = 0; i < n; i++)
                assert_true(d[i] == g[i] - 0.5f * g[i]);

        encode_decode(SC_CODEC_ADACOMP, NULL, g, n, v, 3, d, &buf);
        nnz = 0;
        for (size_t i = 0; i < n; i++)
                nnz += d[i] != 0.0f;
        assert_int_equal(nnz, 20 + 1 + 1 + 8 + 1);

        sc_buf_free(&buf);
        free(g);
        free(d);
}

/* decoded + residual_after == g + residual_before for several steps. */
static void check_ef(sc_codec_id_t id, double ratio, int scale, float tol)
{
        const size_t n = 20000;
        sc_tensor_view_t v[2] = {{"w", 0, 0, 15000}, {"b", 0, 15000, 5000}};
        sc_codec_params_t p;
        sc_codec_t *c;
        sc_rng_t rng;
        sc_buf_t buf;
        float *g = malloc(n * sizeof(*g)), *d = malloc(n * sizeof(*d)),
              *before = malloc(n * sizeof(*before));

        sc_buf_init(&buf);
        sc_rng_seed(&rng, 17);
        sc_codec_params_default(&p, id);
        p.ratio = ratio;
        p.scale = scale;
        p.error_feedback = 1;
        assert_int_equal(sc_codec_new(&c, id, &p, n, v, 2, errbuf, sizeof(errbuf)), SC_OK);
        assert_non_null(sc_codec_residual(c));
        for (int step = 0; step < 5; step++) {
                fill_normal(g, n, 100 + (uint64_t)step, 0);
                memcpy(before, sc_codec_residual(c), n * sizeof(float));
                buf.len = 0;
                assert_int_equal(sc_codec_encode(c, g, &rng, &buf, errbuf, sizeof(errbuf)), SC_OK);
                memset(d, 0, n * sizeof(*d));
                assert_int_equal(
                    sc_codec_decode_add(buf.data, buf.len, d, n, 1.0f, errbuf, sizeof(errbuf)),
                    SC_OK);
                const float *r = sc_codec_residual(c);
                for (size_t i = 0; i < n; i++) {
                        float lhs = d[i] + r[i], rhs = g[i] + before[i];
                        float mag = 1.0f + fmaxf(fabsf(rhs), fmaxf(fabsf(d[i]), fabsf(r[i])));
                        if (fabsf(lhs - rhs) > tol * mag)
                                fail_msg("codec %s step %d i %zu: %g + %g != %g + %g",
                                         sc_codec_name(id), step, i, d[i], r[i], g[i], before[i]);
                }
        }
        sc_codec_stats_t st;
        sc_codec_stats(c, &st);
        /* adaptive sends normal data dense (metric ~0.37 > 0.3): nothing left over */
        assert_true(id == SC_CODEC_ADAPTIVE ? st.residual_norm == 0.0 : st.residual_norm > 0.0);
        sc_codec_reset_residual(c);
        sc_codec_stats(c, &st);
        assert_true(st.residual_norm == 0.0);
        sc_codec_destroy(c);
        sc_buf_free(&buf);
        free(g);
        free(d);
        free(before);
}

static void error_feedback_conserves(void **state)
{
        check_ef(SC_CODEC_TOPK, 0.01, 0, 0.0f); /* exact */
        check_ef(SC_CODEC_RANDK, 0.05, 0, 0.0f);
        check_ef(SC_CODEC_RANDK, 0.05, 1, 1e-6f);
        check_ef(SC_CODEC_ADAPTIVE, 0.1, 0, 1e-6f);
        check_ef(SC_CODEC_Q8, 0.1, 0, 1e-6f);
        check_ef(SC_CODEC_FP16, 0.1, 0, 1e-6f);
}

static void topk_ef_sends_residual_later(void **state)
{
        /* one tensor of 4, k = 1: the second step must send the coordinate
         * that accumulated in the residual */
        float g1[4] = {4, 3, 0, 0}, g2[4] = {0, 3, 0, 1}, d[4] = {0};
        sc_codec_params_t p;
        sc_codec_t *c;
        sc_buf_t buf;
        sc_buf_init(&buf);
        sc_codec_params_default(&p, SC_CODEC_TOPK);
        p.ratio = 0.25;
        p.error_feedback = 1;
        assert_int_equal(sc_codec_new(&c, SC_CODEC_TOPK, &p, 4, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        assert_int_equal(sc_codec_encode(c, g1, NULL, &buf, errbuf, sizeof(errbuf)), SC_OK);
        size_t first = buf.len;
        assert_int_equal(sc_codec_encode(c, g2, NULL, &buf, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(sc_codec_decode_add(buf.data + first, buf.len - first, d, 4, 1.0f, errbuf,
                                             sizeof(errbuf)),
                         SC_OK);
        assert_true(d[1] == 6.0f && d[0] == 0.0f && d[3] == 0.0f);
        sc_codec_destroy(c);
        sc_buf_free(&buf);
}

/* NaN sorts above every number: it is sent (the receiver sees it) and leaves
 * no NaN behind in the residual. */
static void topk_nan_is_sent_not_kept(void **state)
{
        float g[4] = {1, NAN, 2, -3}, d[4] = {0};
        sc_codec_params_t p;
        sc_codec_t *c;
        sc_buf_t buf;
        sc_buf_init(&buf);
        sc_codec_params_default(&p, SC_CODEC_TOPK);
        p.ratio = 0.25;
        p.error_feedback = 1;
        assert_int_equal(sc_codec_new(&c, SC_CODEC_TOPK, &p, 4, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        assert_int_equal(sc_codec_encode(c, g, NULL, &buf, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(sc_codec_decode_add(buf.data, buf.len, d, 4, 1.0f, errbuf, sizeof(errbuf)),
                         SC_OK);
        assert_true(isnan(d[1]) && d[0] == 0.0f && d[3] == 0.0f);
        const float *r = sc_codec_residual(c);
        assert_true(r[0] == 1.0f && r[1] == 0.0f && r[2] == 2.0f && r[3] == -3.0f);
        sc_codec_destroy(c);
        sc_buf_free(&buf);
}

static void adaptive_switches(void **state)
{
        const size_t n = 1000;
        float *peaked = calloc(n, sizeof(float)), *flat = malloc(n * sizeof(float));
        sc_codec_params_t p;
        sc_codec_t *c;
        sc_buf_t buf;
        sc_codec_info_t info;
        sc_codec_stats_t st;

        sc_buf_init(&buf);
        for (size_t i = 0; i < n; i++)
                flat[i] = (i & 1) ? 1.0f : -1.0f;
        for (size_t i = 0; i < 100; i++)
                peaked[i * 10] = 1.0f; /* exactly k = 100 non-zeros: metric 0 */
        sc_codec_params_default(&p, SC_CODEC_ADAPTIVE);
        p.error_feedback = 0;
        assert_true(p.ratio == 0.1 && p.delta == 0.3);
        assert_int_equal(
            sc_codec_new(&c, SC_CODEC_ADAPTIVE, &p, n, NULL, 0, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(sc_codec_adaptive_vote(c), 0); /* no step yet */
        /* flat: ||topk|| / ||g|| = sqrt(0.1), metric 0.684; peaked: metric 0 */
        int expect[6];
        const float *seq[6] = {peaked, peaked, flat, flat, flat, peaked};
        double x_flat = 1.0 - sqrt(0.1), mean = 0.0;
        for (int s = 0; s < 6; s++) {
                double x = seq[s] == flat ? x_flat : 0.0;
                mean += (x - mean) / (s + 1);
                expect[s] = mean <= 0.3;
                buf.len = 0;
                assert_int_equal(sc_codec_encode(c, seq[s], NULL, &buf, errbuf, sizeof(errbuf)),
                                 SC_OK);
                assert_int_equal(
                    sc_codec_payload_info(buf.data, buf.len, &info, errbuf, sizeof(errbuf)), SC_OK);
                sc_codec_stats(c, &st);
                assert_float_equal(st.mean_metric, mean, 1e-6);
                assert_int_equal(info.format == SC_CODEC_FMT_SPARSE, expect[s]);
                assert_int_equal(sc_codec_adaptive_vote(c), expect[s]);
        }
        /* cumulative means 0, 0, .228, .342, .410, .342: top-k x3, then dense x3 */
        assert_int_equal(expect[2], 1);
        assert_int_equal(expect[3], 0);
        sc_codec_stats(c, &st);
        assert_int_equal(st.steps, 6);
        assert_int_equal(st.compressed, 3);
        assert_float_equal(sc_codec_cnc(&st), 0.5, 1e-12);

        /* majority vote: the sync layer's decision overrides for one step */
        int votes[5] = {1, 0, 1, 1, 0};
        assert_int_equal(sc_codec_adaptive_majority(votes, 5), 1);
        assert_int_equal(sc_codec_adaptive_majority(votes, 2), 0); /* tie: dense */
        assert_int_equal(sc_codec_adaptive_majority(votes + 1, 2), 0);
        sc_codec_destroy(c);
        p.vote = 1;
        assert_int_equal(
            sc_codec_new(&c, SC_CODEC_ADAPTIVE, &p, n, NULL, 0, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(sc_codec_adaptive_set_decision(c, 0), SC_OK);
        buf.len = 0;
        assert_int_equal(sc_codec_encode(c, peaked, NULL, &buf, errbuf, sizeof(errbuf)), SC_OK);
        sc_codec_payload_info(buf.data, buf.len, &info, errbuf, sizeof(errbuf));
        assert_int_equal(info.format, SC_CODEC_FMT_DENSE);
        assert_int_equal(sc_codec_adaptive_vote(c), 1); /* its own view says top-k */
        buf.len = 0;
        assert_int_equal(sc_codec_encode(c, peaked, NULL, &buf, errbuf, sizeof(errbuf)), SC_OK);
        sc_codec_payload_info(buf.data, buf.len, &info, errbuf, sizeof(errbuf));
        assert_int_equal(info.format, SC_CODEC_FMT_SPARSE);
        sc_codec_destroy(c);

        /* exponential mean: m = 0.5 m + 0.5 x after the first step */
        p.vote = 0;
        p.ema = 0.5;
        assert_int_equal(
            sc_codec_new(&c, SC_CODEC_ADAPTIVE, &p, n, NULL, 0, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(sc_codec_encode(c, flat, NULL, &buf, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(sc_codec_encode(c, peaked, NULL, &buf, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(sc_codec_encode(c, peaked, NULL, &buf, errbuf, sizeof(errbuf)), SC_OK);
        sc_codec_stats(c, &st);
        assert_float_equal(st.mean_metric, 0.25 * (1.0 - sqrt(0.1)), 1e-6);
        assert_int_equal(st.compressed, 1); /* 0.68, 0.34 dense; 0.17 top-k */
        sc_codec_destroy(c);

        sc_codec_t *t;
        assert_int_equal(sc_codec_new(&t, SC_CODEC_TOPK, NULL, n, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        assert_int_equal(sc_codec_adaptive_set_decision(t, 1), SC_ERR_INVAL);
        sc_codec_destroy(t);
        sc_buf_free(&buf);
        free(peaked);
        free(flat);
}

static void index_round_trip(const uint32_t *idx, size_t k, uint32_t n, int method)
{
        sc_buf_t buf;
        size_t used;
        uint32_t *back = malloc((k ? k : 1) * sizeof(*back));
        sc_buf_init(&buf);
        assert_int_equal(sc_codec_index_encode(idx, k, n, method, &buf), SC_OK);
        if (method == SC_CODEC_INDEX_AUTO)
                assert_int_equal(buf.len, sc_codec_index_size(idx, k, n));
        if (method == SC_CODEC_INDEX_AUTO_RICE)
                assert_true(buf.len <= sc_codec_index_size(idx, k, n));
        assert_int_equal(
            sc_codec_index_decode(buf.data, buf.len, k, n, back, &used, errbuf, sizeof(errbuf)),
            SC_OK);
        assert_int_equal(used, buf.len);
        if (k)
                assert_memory_equal(idx, back, k * sizeof(*idx));
        /* every truncation fails */
        for (size_t cut = 0; cut < buf.len; cut++)
                assert_int_not_equal(
                    sc_codec_index_decode(buf.data, cut, k, n, NULL, &used, errbuf, sizeof(errbuf)),
                    SC_OK);
        sc_buf_free(&buf);
        free(back);
}

/* Rice-coded gaps: on geometric gaps (what top-k of a noisy gradient
 * looks like) the block is exactly the best parameter's bit count, smaller
 * than bit-packing, picked by AUTO_RICE and never by AUTO; damaged blocks
 * are rejected. */
static void index_rice(void **state)
{
        enum { N = 421642, K = 4216 };
        uint32_t *idx = malloc(K * sizeof(*idx)), *back = malloc(K * sizeof(*back));
        sc_rng_t r;
        sc_buf_t b = {0}, a = {0};
        size_t used, k = 0;
        uint64_t best = UINT64_MAX;
        sc_rng_seed(&r, 11);
        for (uint32_t i = 0; i < N && k < K; i++)
                if (sc_rng_below(&r, 100) == 0)
                        idx[k++] = i;
        for (int p = 0; p < 32; p++) {
                uint64_t bits = (uint64_t)k * (uint64_t)(p + 1);
                for (size_t j = 0; j < k; j++)
                        bits += (j ? idx[j] - idx[j - 1] - 1 : idx[0]) >> p;
                best = bits < best ? bits : best;
        }
        assert_int_equal(sc_codec_index_encode(idx, k, N, SC_CODEC_INDEX_AUTO_RICE, &b), SC_OK);
        assert_int_equal(b.data[0], SC_CODEC_INDEX_RICE);
        assert_int_equal(b.len, SC_CODEC_INDEX_HDR + (best + 7) / 8);
        assert_int_equal(sc_codec_index_encode(idx, k, N, SC_CODEC_INDEX_AUTO, &a), SC_OK);
        assert_int_not_equal(a.data[0], SC_CODEC_INDEX_RICE);
        assert_true(b.len * 10 < a.len * 9); /* over 10% smaller than bit-packing */
        assert_int_equal(
            sc_codec_index_decode(b.data, b.len, k, N, back, &used, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(used, b.len);
        assert_memory_equal(idx, back, k * sizeof(*idx));
        /* one index too many or too few */
        assert_int_not_equal(
            sc_codec_index_decode(b.data, b.len, k + 1, N, NULL, &used, errbuf, sizeof(errbuf)),
            SC_OK);
        assert_int_not_equal(
            sc_codec_index_decode(b.data, b.len, k - 1, N, NULL, &used, errbuf, sizeof(errbuf)),
            SC_OK);
        /* a parameter above 31, then one that no longer fits the bytes */
        b.data[1] = 40;
        assert_int_equal(
            sc_codec_index_decode(b.data, b.len, k, N, NULL, &used, errbuf, sizeof(errbuf)),
            SC_ERR_CORRUPT);
        assert_non_null(strstr(errbuf, "Rice"));
        b.data[1] = 31;
        assert_int_equal(
            sc_codec_index_decode(b.data, b.len, k, N, NULL, &used, errbuf, sizeof(errbuf)),
            SC_ERR_CORRUPT);
        /* an unending quotient (all one-bits) */
        sc_buf_t ones = {0};
        sc_codec_index_encode(idx, 8, N, SC_CODEC_INDEX_RICE, &ones);
        memset(ones.data + SC_CODEC_INDEX_HDR, 0xff, ones.len - SC_CODEC_INDEX_HDR);
        assert_int_equal(
            sc_codec_index_decode(ones.data, ones.len, 8, N, NULL, &used, errbuf, sizeof(errbuf)),
            SC_ERR_CORRUPT);
        /* a set padding bit: a 3-bit code (gap 1, r = 1) in one byte */
        uint32_t one[1] = {1};
        sc_buf_t pad = {0};
        assert_int_equal(sc_codec_index_encode(one, 1, 1000, SC_CODEC_INDEX_RICE, &pad), SC_OK);
        assert_int_equal(pad.len, SC_CODEC_INDEX_HDR + 1);
        pad.data[SC_CODEC_INDEX_HDR] |= 0x80;
        assert_int_equal(
            sc_codec_index_decode(pad.data, pad.len, 1, 1000, NULL, &used, errbuf, sizeof(errbuf)),
            SC_ERR_CORRUPT);
        sc_buf_free(&pad);
        sc_buf_free(&ones);
        sc_buf_free(&a);
        sc_buf_free(&b);
        free(idx);
        free(back);
        (void)state;
}

static void index_coding_edges(void **state)
{
        uint32_t one0[1] = {0}, onelast[1] = {999}, ends[2] = {0, 999};
        uint32_t huge[3] = {0, 1u << 31, UINT32_MAX - 1};
        uint32_t *all = malloc(1000 * sizeof(*all));
        for (uint32_t i = 0; i < 1000; i++)
                all[i] = i;
        for (int m = SC_CODEC_INDEX_AUTO_RICE; m <= SC_CODEC_INDEX_RICE; m++) {
                index_round_trip(one0, 1, 1000, m);
                index_round_trip(onelast, 1, 1000, m);
                index_round_trip(ends, 2, 1000, m);
                index_round_trip(all, 1000, 1000, m);
                index_round_trip(all, 1000, 1001, m);
                index_round_trip(all + 999, 1, 1000, m);
                index_round_trip(one0, 1, 1, m);
                index_round_trip(all, 0, 1000, m);
                if (m != SC_CODEC_INDEX_BITMAP)
                        index_round_trip(huge, 3, UINT32_MAX, m);
        }
        /* a dense random half picks the bitmap */
        sc_rng_t r;
        uint32_t *half = malloc(1000 * sizeof(*half));
        size_t nh = 0;
        sc_rng_seed(&r, 6);
        for (uint32_t i = 0; i < 1000; i++)
                if (sc_rng_below(&r, 2))
                        half[nh++] = i;
        sc_buf_t hb;
        sc_buf_init(&hb);
        assert_int_equal(sc_codec_index_encode(half, nh, 1000, -1, &hb), SC_OK);
        assert_int_equal(hb.data[0], SC_CODEC_INDEX_BITMAP);
        assert_int_equal(hb.len, SC_CODEC_INDEX_HDR + 125);
        sc_buf_free(&hb);
        index_round_trip(half, nh, 1000, -1);
        free(half);
        /* k = n packs to zero bits: header only */
        assert_int_equal(sc_codec_index_size(all, 1000, 1000), SC_CODEC_INDEX_HDR);
        /* an index at n is rejected */
        sc_buf_t buf;
        size_t used;
        sc_buf_init(&buf);
        assert_int_equal(sc_codec_index_encode(onelast, 1, 1000, SC_CODEC_INDEX_VARINT, &buf),
                         SC_OK);
        assert_int_not_equal(
            sc_codec_index_decode(buf.data, buf.len, 1, 999, NULL, &used, errbuf, sizeof(errbuf)),
            SC_OK);
        sc_buf_free(&buf);
        free(all);
}

static double mono_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A 20-byte sparse payload claiming k = n = 2^32 - 1 zero-bit gaps and no
 * value bytes: rejected from its sizes before any index is walked (it used
 * to walk 4e9 indices, ~8 s), through each entry point a reader uses. */
static void sparse_count_dos_rejected_fast(void **state)
{
        static const uint8_t dos[20] = {0x01, 0x01, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                        0xff, 0xff, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
        float acc[4] = {0};
        uint32_t idx[4];
        float val[4];
        size_t nnz = 99;
        sc_codec_info_t info;
        double t0 = mono_s(), dt;
        (void)state;
        assert_int_equal(sc_codec_payload_info(dos, sizeof(dos), &info, errbuf, sizeof(errbuf)),
                         SC_ERR_CORRUPT);
        assert_non_null(strstr(errbuf, "value bytes"));
        assert_int_not_equal(
            sc_codec_decode_add(dos, sizeof(dos), acc, 4, 1.0f, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_not_equal(
            sc_codec_decode_sparse(dos, sizeof(dos), idx, val, 4, &nnz, errbuf, sizeof(errbuf)),
            SC_OK);
        /* the bare index block (bit-packed, width 0, k = n = 2^32-1), validated
         * by the index decoder itself: from its header */
        size_t used = 0;
        assert_int_equal(sc_codec_index_decode(dos + 12, 8, 0xffffffffu, 0xffffffffu, NULL, &used,
                                               errbuf, sizeof(errbuf)),
                         SC_OK);
        assert_int_equal(used, 8);
        dt = mono_s() - t0;
        printf("sparse DoS payload: 4 checks in %.1f us\n", dt * 1e6);
        /* About 1 us; the walk this guards against took seconds. The bound
         * leaves room for a preempted thread on a loaded machine. */
        assert_true(dt < 0.5);
        assert_int_equal(nnz, 0);
        for (int i = 0; i < 4; i++)
                assert_true(acc[i] == 0.0f);
}

static void damaged_payloads_rejected(void **state)
{
        const size_t n = 5000;
        float *g = malloc(n * sizeof(*g)), *acc = calloc(n, sizeof(*acc));
        uint32_t *idx = malloc(n * sizeof(*idx));
        float *val = malloc(n * sizeof(*val));
        sc_rng_t rng;
        sc_buf_t buf;
        sc_buf_init(&buf);
        sc_rng_seed(&rng, 8);
        fill_normal(g, n, 4, 0);
        for (int id = 0; id < SC_CODEC__END; id++) {
                sc_codec_t *c;
                sc_codec_params_t p;
                sc_codec_params_default(&p, (sc_codec_id_t)id);
                p.ratio = 0.02;
                assert_int_equal(
                    sc_codec_new(&c, (sc_codec_id_t)id, &p, n, NULL, 0, errbuf, sizeof(errbuf)),
                    SC_OK);
                buf.len = 0;
                assert_int_equal(sc_codec_encode(c, g, &rng, &buf, errbuf, sizeof(errbuf)), SC_OK);
                sc_codec_destroy(c);
                /* exact-size copies so ASan sees any over-read */
                for (size_t cut = 0; cut < buf.len; cut += cut < 64 ? 1 : 97) {
                        uint8_t *copy = malloc(cut ? cut : 1);
                        memcpy(copy, buf.data, cut);
                        assert_int_not_equal(
                            sc_codec_decode_add(copy, cut, acc, n, 1.0f, errbuf, sizeof(errbuf)),
                            SC_OK);
                        free(copy);
                }
                for (size_t i = 0; i < n; i++)
                        assert_true(acc[i] == 0.0f);
                assert_int_equal(sc_codec_decode_add(buf.data, buf.len, acc, n - 1, 1.0f, errbuf,
                                                     sizeof(errbuf)),
                                 SC_ERR_SHAPE);
                /* random damage: either an error or a clean decode */
                for (int t = 0; t < 300; t++) {
                        uint8_t *copy = malloc(buf.len);
                        memcpy(copy, buf.data, buf.len);
                        size_t at = sc_rng_below(&rng, (uint32_t)(t < 150 ? 40 : buf.len));
                        if (at >= buf.len)
                                at = buf.len - 1;
                        copy[at] ^= (uint8_t)(1u << sc_rng_below(&rng, 8));
                        size_t nnz;
                        sc_err_t err = sc_codec_decode_sparse(copy, buf.len, idx, val, n, &nnz,
                                                              errbuf, sizeof(errbuf));
                        if (err == SC_OK)
                                for (size_t j = 1; j < nnz; j++)
                                        assert_true(idx[j] > idx[j - 1] && idx[j] < n);
                        free(copy);
                }
        }
        sc_buf_free(&buf);
        free(g);
        free(acc);
        free(idx);
        free(val);
}

static void q8_tiny_tensor_is_zero(void **state)
{
        float g[4] = {1e-38f, 0.0f, -2e-40f, 3e-45f}, d[4] = {0};
        sc_codec_params_t p;
        sc_codec_t *c;
        sc_buf_t buf;
        sc_rng_t rng;
        sc_buf_init(&buf);
        sc_rng_seed(&rng, 1);
        for (int stochastic = 0; stochastic < 2; stochastic++) {
                sc_codec_params_default(&p, SC_CODEC_Q8);
                p.stochastic = stochastic;
                p.error_feedback = 1;
                assert_int_equal(
                    sc_codec_new(&c, SC_CODEC_Q8, &p, 4, NULL, 0, errbuf, sizeof(errbuf)), SC_OK);
                buf.len = 0;
                assert_int_equal(sc_codec_encode(c, g, &rng, &buf, errbuf, sizeof(errbuf)), SC_OK);
                assert_int_equal(
                    sc_codec_decode_add(buf.data, buf.len, d, 4, 1.0f, errbuf, sizeof(errbuf)),
                    SC_OK);
                for (int i = 0; i < 4; i++)
                        assert_true(d[i] == 0.0f && sc_codec_residual(c)[i] == g[i]);
                sc_codec_destroy(c);
        }
        sc_buf_free(&buf);
}

static void q8_rejects_non_finite(void **state)
{
        float g[4] = {1, INFINITY, 0, 2};
        sc_codec_t *c;
        sc_buf_t buf;
        sc_buf_init(&buf);
        assert_int_equal(sc_codec_new(&c, SC_CODEC_Q8, NULL, 4, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        assert_int_equal(sc_codec_encode(c, g, NULL, &buf, errbuf, sizeof(errbuf)), SC_ERR_INVAL);
        assert_int_equal(buf.len, 0);
        assert_non_null(strstr(errbuf, "non-finite"));
        sc_codec_destroy(c);
        sc_buf_free(&buf);
}

/* half_values: sparse values travel as IEEE half. The payload is 2k bytes
 * smaller than float32's, decodes to the half-rounded selection (same
 * indices), error feedback keeps the rounding error, and a body whose value
 * bytes do not match the flag is rejected. */
/* A sparse message with rounded values (half, log8), decoded into b (N):
 * decode_add places exactly the decoded values (ib, vb; nb), and with error
 * feedback (topk, adaptive) residual + sent == g in float, the rounding
 * error included: some value was rounded and its error kept. */
static void check_rounded_sent(const sc_codec_t *c, const sc_buf_t *o, const float *g, float *b,
                               size_t N, const uint32_t *ib, const float *vb, size_t nb)
{
        memset(b, 0, N * sizeof(*b));
        assert_int_equal(sc_codec_decode_add(o->data, o->len, b, N, 1.0f, errbuf, sizeof(errbuf)),
                         SC_OK);
        for (size_t j = 0; j < nb; j++)
                assert_true(b[ib[j]] == vb[j]);
        const float *r = sc_codec_residual(c);
        if (!r)
                return;
        for (size_t i = 0; i < N; i++)
                assert_true(fabsf(r[i] + b[i] - g[i]) <= 1e-6f * fabsf(g[i]));
        size_t off = 0;
        while (off < nb && vb[off] == g[ib[off]])
                off++;
        assert_true(off < nb);           /* some value was rounded ... */
        assert_true(r[ib[off]] != 0.0f); /* ... and its error kept */
}

static void sparse_half_values(void **state)
{
        enum { N = 5000 };
        static const sc_codec_id_t ids[] = {SC_CODEC_TOPK, SC_CODEC_ADACOMP, SC_CODEC_ADAPTIVE};
        float *g = malloc(N * sizeof(*g)), *a = calloc(N, sizeof(*a)), *b = calloc(N, sizeof(*b));
        uint32_t *ia = malloc(N * sizeof(*ia)), *ib = malloc(N * sizeof(*ib));
        float *va = malloc(N * sizeof(*va)), *vb = malloc(N * sizeof(*vb));
        fill_normal(g, N, 77, 0);
        for (size_t t = 0; t < sizeof(ids) / sizeof(ids[0]); t++) {
                sc_codec_params_t p;
                sc_codec_t *c32, *c16;
                sc_buf_t o32 = {0}, o16 = {0};
                sc_codec_info_t info;
                size_t na, nb;
                sc_codec_params_default(&p, ids[t]);
                p.ratio = 0.01;
                p.delta = 10; /* adaptive: always top-k */
                assert_int_equal(sc_codec_new(&c32, ids[t], &p, N, NULL, 0, errbuf, sizeof(errbuf)),
                                 SC_OK);
                p.half_values = 1;
                assert_int_equal(sc_codec_new(&c16, ids[t], &p, N, NULL, 0, errbuf, sizeof(errbuf)),
                                 SC_OK);
                assert_int_equal(sc_codec_encode(c32, g, NULL, &o32, errbuf, sizeof(errbuf)),
                                 SC_OK);
                assert_int_equal(sc_codec_encode(c16, g, NULL, &o16, errbuf, sizeof(errbuf)),
                                 SC_OK);
                assert_int_equal(
                    sc_codec_payload_info(o16.data, o16.len, &info, errbuf, sizeof(errbuf)), SC_OK);
                assert_int_equal(info.format, SC_CODEC_FMT_SPARSE);
                assert_true(info.flags & SC_CODEC_FLAG_HALF);
                assert_int_equal(info.nnz, 50);
                assert_int_equal(o32.len - o16.len, 2 * 50);
                assert_int_equal(sc_codec_decode_sparse(o32.data, o32.len, ia, va, N, &na, errbuf,
                                                        sizeof(errbuf)),
                                 SC_OK);
                assert_int_equal(sc_codec_decode_sparse(o16.data, o16.len, ib, vb, N, &nb, errbuf,
                                                        sizeof(errbuf)),
                                 SC_OK);
                assert_int_equal(na, nb);
                for (size_t j = 0; j < na; j++) {
                        assert_int_equal(ia[j], ib[j]);
                        assert_true(vb[j] == sc_codec_f16_to_f32(sc_codec_f32_to_f16(va[j])));
                        assert_true(fabsf(vb[j] - va[j]) <= fabsf(va[j]) * 0x1p-11f);
                }
                check_rounded_sent(c16, &o16, g, b, N, ib, vb, nb);
                /* Flip the flag: the value bytes no longer match. */
                o16.data[2] ^= SC_CODEC_FLAG_HALF;
                assert_int_equal(
                    sc_codec_decode_add(o16.data, o16.len, a, N, 1.0f, errbuf, sizeof(errbuf)),
                    SC_ERR_CORRUPT);
                o32.data[2] |= SC_CODEC_FLAG_HALF;
                assert_int_equal(
                    sc_codec_payload_info(o32.data, o32.len, &info, errbuf, sizeof(errbuf)),
                    SC_ERR_CORRUPT);
                sc_buf_free(&o32);
                sc_buf_free(&o16);
                sc_codec_destroy(c32);
                sc_codec_destroy(c16);
        }
        free(g);
        free(a);
        free(b);
        free(ia);
        free(ib);
        free(va);
        free(vb);
        (void)state;
}

/* log8_values: sparse values travel as sign + 7-bit log codes. The payload
 * is 3k - 8 bytes smaller than float32's with the same indices, each value
 * within half a level (a factor sqrt((hi/lo)^(1/126))) of the original,
 * error feedback keeps the rounding error, zeros stay zero, a non-finite
 * value falls back to float32, and damaged value blocks are rejected. */
static void sparse_log8_values(void **state)
{
        enum { N = 5000 };
        static const sc_codec_id_t ids[] = {SC_CODEC_TOPK, SC_CODEC_ADACOMP, SC_CODEC_ADAPTIVE};
        float *g = malloc(N * sizeof(*g)), *b = calloc(N, sizeof(*b));
        uint32_t *ia = malloc(N * sizeof(*ia)), *ib = malloc(N * sizeof(*ib));
        float *va = malloc(N * sizeof(*va)), *vb = malloc(N * sizeof(*vb));
        fill_normal(g, N, 78, 0);
        for (size_t i = 0; i < N; i++)
                g[i] *= (float)(1u << (4 * (i % 4))); /* a wide range of magnitudes */
        for (size_t t = 0; t < sizeof(ids) / sizeof(ids[0]); t++) {
                sc_codec_params_t p;
                sc_codec_t *c32, *c8;
                sc_buf_t o32 = {0}, o8 = {0};
                sc_codec_info_t info;
                size_t na, nb;
                sc_codec_params_default(&p, ids[t]);
                p.ratio = 0.5; /* half the coordinates: magnitudes over 3 decades */
                p.delta = 10;  /* adaptive: always top-k */
                assert_int_equal(sc_codec_new(&c32, ids[t], &p, N, NULL, 0, errbuf, sizeof(errbuf)),
                                 SC_OK);
                p.log8_values = 1;
                p.rice_index = 1;
                assert_int_equal(sc_codec_new(&c8, ids[t], &p, N, NULL, 0, errbuf, sizeof(errbuf)),
                                 SC_OK);
                assert_int_equal(sc_codec_encode(c32, g, NULL, &o32, errbuf, sizeof(errbuf)),
                                 SC_OK);
                assert_int_equal(sc_codec_encode(c8, g, NULL, &o8, errbuf, sizeof(errbuf)), SC_OK);
                assert_int_equal(
                    sc_codec_payload_info(o8.data, o8.len, &info, errbuf, sizeof(errbuf)), SC_OK);
                assert_int_equal(info.format, SC_CODEC_FMT_SPARSE);
                assert_true(info.flags & SC_CODEC_FLAG_LOG8);
                assert_false(info.flags & SC_CODEC_FLAG_HALF);
                assert_int_equal(info.nnz, N / 2);
                assert_int_equal(sc_codec_decode_sparse(o32.data, o32.len, ia, va, N, &na, errbuf,
                                                        sizeof(errbuf)),
                                 SC_OK);
                assert_int_equal(
                    sc_codec_decode_sparse(o8.data, o8.len, ib, vb, N, &nb, errbuf, sizeof(errbuf)),
                    SC_OK);
                assert_int_equal(na, nb);
                /* same index block (header and length), values 1 byte + 8 */
                size_t vstart = o32.len - 4 * na;
                assert_int_equal(o8.len, vstart + 8 + na);
                float lo = INFINITY, hi = 0;
                for (size_t j = 0; j < na; j++) {
                        lo = fminf(lo, fabsf(va[j]));
                        hi = fmaxf(hi, fabsf(va[j]));
                }
                assert_true(hi / lo > 100.0f);
                double half_level = exp(log((double)hi / lo) / 126.0 / 2.0);
                for (size_t j = 0; j < na; j++) {
                        assert_int_equal(ia[j], ib[j]);
                        double q = (double)vb[j] / (double)va[j]; /* same sign: q > 0 */
                        assert_true(q > 0);
                        assert_true(q <= half_level * (1 + 1e-6) &&
                                    q >= 1 / half_level / (1 + 1e-6));
                }
                check_rounded_sent(c8, &o8, g, b, N, ib, vb, nb);
                /* every truncation and the wrong flags are rejected */
                for (size_t cut = 0; cut < o8.len; cut++)
                        assert_int_not_equal(
                            sc_codec_payload_info(o8.data, cut, &info, errbuf, sizeof(errbuf)),
                            SC_OK);
                o8.data[2] ^= SC_CODEC_FLAG_LOG8;
                assert_int_equal(
                    sc_codec_decode_add(o8.data, o8.len, b, N, 1.0f, errbuf, sizeof(errbuf)),
                    SC_ERR_CORRUPT);
                o8.data[2] ^= SC_CODEC_FLAG_LOG8 | SC_CODEC_FLAG_HALF;
                assert_int_equal(
                    sc_codec_decode_add(o8.data, o8.len, b, N, 1.0f, errbuf, sizeof(errbuf)),
                    SC_ERR_CORRUPT);
                assert_non_null(strstr(errbuf, "both"));
                o8.data[2] ^= SC_CODEC_FLAG_HALF;
                /* code 0x80 ("negative zero") */
                uint8_t keep = o8.data[o8.len - 1];
                o8.data[o8.len - 1] = 0x80;
                assert_int_equal(
                    sc_codec_payload_info(o8.data, o8.len, &info, errbuf, sizeof(errbuf)),
                    SC_ERR_CORRUPT);
                assert_non_null(strstr(errbuf, "log8 code"));
                o8.data[o8.len - 1] = keep;
                /* lo above hi, a NaN hi */
                uint8_t *range = o8.data + o8.len - na - 8, save[8];
                memcpy(save, range, 8);
                memcpy(range, range + 4, 4);
                range[0] ^= 1;
                float bad = NAN;
                assert_int_equal(
                    sc_codec_payload_info(o8.data, o8.len, &info, errbuf, sizeof(errbuf)),
                    SC_ERR_CORRUPT);
                assert_non_null(strstr(errbuf, "range"));
                memcpy(range, save, 8);
                memcpy(range + 4, &bad, 4);
                assert_int_equal(
                    sc_codec_payload_info(o8.data, o8.len, &info, errbuf, sizeof(errbuf)),
                    SC_ERR_CORRUPT);
                memcpy(range, save, 8);
                assert_int_equal(
                    sc_codec_payload_info(o8.data, o8.len, &info, errbuf, sizeof(errbuf)), SC_OK);
                sc_buf_free(&o32);
                sc_buf_free(&o8);
                sc_codec_destroy(c32);
                sc_codec_destroy(c8);
        }
        /* all zeros: codes 0, decoded 0; a NaN: float32 values, NaN decoded */
        sc_codec_params_t p;
        sc_codec_t *c;
        sc_buf_t o = {0};
        size_t nn;
        sc_codec_info_t info;
        sc_codec_params_default(&p, SC_CODEC_ADACOMP);
        p.log8_values = 1;
        assert_int_equal(sc_codec_new(&c, SC_CODEC_ADACOMP, &p, N, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_OK);
        memset(g, 0, N * sizeof(*g));
        assert_int_equal(sc_codec_encode(c, g, NULL, &o, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(
            sc_codec_decode_sparse(o.data, o.len, ib, vb, N, &nn, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(nn, 50);
        for (size_t j = 0; j < nn; j++)
                assert_true(vb[j] == 0.0f);
        o.len = 0;
        g[3] = NAN;
        assert_int_equal(sc_codec_encode(c, g, NULL, &o, errbuf, sizeof(errbuf)), SC_OK);
        assert_int_equal(sc_codec_payload_info(o.data, o.len, &info, errbuf, sizeof(errbuf)),
                         SC_OK);
        assert_false(info.flags & SC_CODEC_FLAG_LOG8);
        assert_int_equal(
            sc_codec_decode_sparse(o.data, o.len, ib, vb, N, &nn, errbuf, sizeof(errbuf)), SC_OK);
        int saw_nan = 0;
        for (size_t j = 0; j < nn; j++)
                saw_nan |= ib[j] == 3 && isnan(vb[j]);
        assert_true(saw_nan);
        sc_codec_destroy(c);
        sc_buf_free(&o);
        /* half and log8 together are refused */
        p.half_values = 1;
        assert_int_equal(sc_codec_new(&c, SC_CODEC_ADACOMP, &p, N, NULL, 0, errbuf, sizeof(errbuf)),
                         SC_ERR_INVAL);
        assert_non_null(strstr(errbuf, "exclusive"));
        free(g);
        free(b);
        free(ia);
        free(ib);
        free(va);
        free(vb);
        (void)state;
}

static void fp16_conversion(void **state)
{
        for (uint32_t h = 0; h < 0x10000; h++) {
                float f = sc_codec_f16_to_f32((uint16_t)h);
                if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
                        assert_true(isnan(f) && isnan(sc_codec_f16_to_f32(sc_codec_f32_to_f16(f))));
                else
                        assert_int_equal(sc_codec_f32_to_f16(f), h);
        }
        assert_int_equal(sc_codec_f32_to_f16(65504.0f), 0x7bff);
        assert_int_equal(sc_codec_f32_to_f16(65519.99f), 0x7bff);
        assert_int_equal(sc_codec_f32_to_f16(65520.0f), 0x7c00);
        assert_int_equal(sc_codec_f32_to_f16(-INFINITY), 0xfc00);
        assert_int_equal(sc_codec_f32_to_f16(0x1p-24f), 0x0001);
        assert_int_equal(sc_codec_f32_to_f16(0x1p-25f), 0x0000);      /* tie to even */
        assert_int_equal(sc_codec_f32_to_f16(0x1.8p-24f), 0x0002);    /* 1.5 units: even */
        assert_int_equal(sc_codec_f32_to_f16(0x1.0p-25f * 1.01f), 1); /* above half a unit */
        assert_int_equal(sc_codec_f32_to_f16(-0.0f), 0x8000);
        assert_int_equal(sc_codec_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);   /* tie: even */
        assert_int_equal(sc_codec_f32_to_f16(1.0f + 0x1.8p-11f), 0x3c01); /* above half */
        assert_int_equal(sc_codec_f32_to_f16(1.0f + 0x1.8p-10f), 0x3c02); /* tie: even */
        assert_int_equal(sc_codec_f32_to_f16(0x1.ffcp-15f), 0x0400);      /* rounds up to normal */
        assert_true(isnan(sc_codec_f16_to_f32(sc_codec_f32_to_f16(NAN))));
#if defined(__FLT16_MAX__)
        /* against the compiler's own conversion on random bit patterns */
        sc_rng_t r;
        sc_rng_seed(&r, 77);
        for (int i = 0; i < 2000000; i++) {
                uint32_t bits = (uint32_t)sc_rng_u64(&r);
                float f;
                memcpy(&f, &bits, 4);
                if (isnan(f))
                        continue;
                _Float16 h = (_Float16)f;
                uint16_t hb;
                memcpy(&hb, &h, 2);
                if (hb != sc_codec_f32_to_f16(f))
                        fail_msg("%a: got %04x, compiler %04x", (double)f, sc_codec_f32_to_f16(f),
                                 hb);
        }
#endif
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(topk_matches_sort_reference),
            cmocka_unit_test(topk_all_equal_and_zero),
            cmocka_unit_test(topk_structured_inputs),
            cmocka_unit_test(topk_sample_fallback),
            cmocka_unit_test(randk_is_seeded),
            cmocka_unit_test(k_rounding),
            cmocka_unit_test(names_and_bad_arguments),
            cmocka_unit_test(round_trips),
            cmocka_unit_test(error_feedback_conserves),
            cmocka_unit_test(topk_ef_sends_residual_later),
            cmocka_unit_test(topk_nan_is_sent_not_kept),
            cmocka_unit_test(adaptive_switches),
            cmocka_unit_test(index_coding_edges),
            cmocka_unit_test(damaged_payloads_rejected),
            cmocka_unit_test(q8_tiny_tensor_is_zero),
            cmocka_unit_test(q8_rejects_non_finite),
            cmocka_unit_test(fp16_conversion),
            cmocka_unit_test(sparse_half_values),
            cmocka_unit_test(sparse_log8_values),
            cmocka_unit_test(index_rice),
            cmocka_unit_test(sparse_count_dos_rejected_fast),
        };
        return cmocka_run_group_tests_name("codec", tests, NULL, NULL);
}
