/* test_server_limits.c — the shard server under hostile updates: a seq far
 * ahead, a 1e30 update, updates whose sum or step overflows, a huge scadles
 * sample count. Each is refused and counted, the shard stays finite and
 * unchanged, and the honest updates around it are all applied. Robust
 * rounds (trimmed mean, median) against one outlier. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_crc32c.h"
#include "sc_server.h"
#include "sc_sync.h"

#define D 8

static char err[256];

static sc_server_t *new_server(sc_sync_kind_t kind, int nw, double momentum,
                               const sc_server_limits_t *lim)
{
        sc_server_spec_t spec;
        sc_server_t *srv = NULL;
        float init[D];

        memset(&spec, 0, sizeof(spec));
        sc_sync_spec_defaults(&spec.sync, kind, nw);
        spec.sgd.momentum = momentum;
        spec.sched.kind = SC_SCHED_CONSTANT;
        spec.sched.lr = 0.1;
        spec.begin = 0;
        spec.end = D;
        if (lim)
                spec.limits = *lim;
        for (int i = 0; i < D; i++)
                init[i] = 0.5f * (float)i;
        assert_int_equal(sc_server_new(&srv, &spec, init, err, sizeof(err)), SC_OK);
        return srv;
}

static sc_update_t grad(uint32_t worker, uint64_t seq, uint64_t t_read, uint32_t samples,
                        const float *v)
{
        sc_update_t u = {.worker = worker,
                         .seq = seq,
                         .t_read = t_read,
                         .samples = samples,
                         .kind = SC_UPDATE_GRAD,
                         .n = D,
                         .values = v};
        return u;
}

static void assert_finite(const sc_server_t *srv)
{
        const float *p = sc_server_params(srv);
        for (int i = 0; i < D; i++)
                assert_true(isfinite(p[i]));
}

static sc_apply_status_t apply(sc_server_t *srv, sc_update_t u, sc_apply_result_t *res)
{
        assert_int_equal(sc_server_apply(srv, &u, res, err, sizeof(err)), SC_OK);
        return res->status;
}

/* A forged seq + 1000 is refused (not marked), and the honest worker's
 * next 100 updates are all applied, none a duplicate. */
static void seq_jump_is_refused(void **state)
{
        sc_server_limits_t lim = {.seq_window = 64};
        sc_server_t *srv = new_server(SC_SYNC_ASP, 2, 0.0, &lim);
        float g[D] = {0.01f, 0, 0, 0, 0, 0, 0, 0};
        sc_apply_result_t res;
        sc_server_stats_t st;
        (void)state;

        for (uint64_t s = 1; s <= 10; s++)
                assert_int_equal(apply(srv, grad(0, s, 0, 8, g), &res), SC_APPLY_APPLIED);
        assert_int_equal(apply(srv, grad(0, 1010, 0, 8, g), &res), SC_APPLY_AHEAD);
        assert_non_null(strstr(err, "ahead"));
        assert_int_equal(res.stepped, 0);
        assert_int_equal(sc_server_applied_seq(srv, 0), 10);
        for (uint64_t s = 11; s <= 110; s++)
                assert_int_equal(apply(srv, grad(0, s, 0, 8, g), &res), SC_APPLY_APPLIED);
        sc_server_stats(srv, &st);
        assert_int_equal(st.applied, 110);
        assert_int_equal(st.duplicates, 0);
        assert_int_equal(st.ahead, 1);
        assert_int_equal(st.lost, 0);
        /* within the window a gap is still fine */
        assert_int_equal(apply(srv, grad(0, 150, 0, 8, g), &res), SC_APPLY_APPLIED);
        assert_int_equal(res.gap, 39);
        sc_server_destroy(srv);
}

/* 1e30 in one coordinate: refused over max_norm (shard unchanged), or
 * clipped to it (the step has the limit's length). */
static void huge_update_refused_or_clipped(void **state)
{
        sc_server_limits_t lim = {.seq_window = 64, .max_norm = 10};
        sc_server_t *srv = new_server(SC_SYNC_ASP, 2, 0.0, &lim);
        float bad[D] = {1e30f, 0, 0, 0, 0, 0, 0, 0}, ok[D] = {1, 1, 0, 0, 0, 0, 0, 0};
        float before[D];
        sc_apply_result_t res;
        sc_server_stats_t st;
        (void)state;

        memcpy(before, sc_server_params(srv), sizeof(before));
        assert_int_equal(apply(srv, grad(1, 1, 0, 8, bad), &res), SC_APPLY_REJECTED);
        assert_non_null(strstr(err, "max_norm"));
        assert_memory_equal(before, sc_server_params(srv), sizeof(before));
        assert_int_equal(sc_server_version(srv), 0);
        /* its seq is consumed: the honest next one is applied without a gap */
        assert_int_equal(apply(srv, grad(1, 2, 0, 8, ok), &res), SC_APPLY_APPLIED);
        assert_int_equal(res.gap, 0);
        assert_float_equal(sc_server_params(srv)[0], before[0] - 0.1f, 1e-6);
        sc_server_stats(srv, &st);
        assert_int_equal(st.rejected, 1);
        assert_int_equal(st.applied, 1);
        sc_server_destroy(srv);

        lim.clip = 1;
        srv = new_server(SC_SYNC_ASP, 2, 0.0, &lim);
        assert_int_equal(apply(srv, grad(1, 1, 0, 8, bad), &res), SC_APPLY_APPLIED);
        assert_int_equal(res.clipped, 1);
        /* lr 0.1 x the clipped length 10 along coordinate 0 */
        assert_float_equal(sc_server_params(srv)[0], before[0] - 1.0f, 1e-5);
        assert_float_equal(sc_server_params(srv)[1], before[1], 0);
        assert_finite(srv);
        sc_server_destroy(srv);
}

/* Two 3.4e38 updates with momentum 0.9 and no norm limit: the second step
 * overflows the velocity; it is undone and refused, the shard stays at the
 * first step, finite, and an honest update after it applies. */
/* norm_factor: after 16 updates of norm ~1, an update 1000x larger is
 * scaled down to 10x the median (direction kept, counted clipped); before
 * the warm-up nothing is bounded; norms that grow for good are followed
 * (each clipped update counts at its bound, so the bound rises). */
static void norm_bound_follows_honest_norms(void **state)
{
        (void)state;
        sc_server_limits_t lim = {.norm_factor = 10};
        sc_server_t *srv = new_server(SC_SYNC_ASP, 1, 0, &lim);
        sc_apply_result_t res;
        float g[D], big[D];
        uint64_t seq = 0;
        for (int i = 0; i < D; i++) {
                g[i] = i % 2 ? 0.5f : -0.5f; /* norm sqrt(8) / 2 = 1.414 */
                big[i] = 1000.0f * g[i];
        }
        /* before the warm-up: passed as it is */
        sc_update_t u = grad(0, ++seq, 0, 8, big);
        assert_int_equal(sc_server_apply(srv, &u, &res, err, sizeof(err)), SC_OK);
        assert_false(res.clipped);
        for (int k = 0; k < 30; k++) {
                u = grad(0, ++seq, sc_server_version(srv), 8, g);
                assert_int_equal(sc_server_apply(srv, &u, &res, err, sizeof(err)), SC_OK);
                assert_false(res.clipped);
        }
        float before[D];
        memcpy(before, sc_server_params(srv), sizeof(before));
        u = grad(0, ++seq, sc_server_version(srv), 8, big);
        assert_int_equal(sc_server_apply(srv, &u, &res, err, sizeof(err)), SC_OK);
        assert_int_equal(res.status, SC_APPLY_APPLIED);
        assert_true(res.clipped);
        /* the step is lr x 10 x the median-norm update: |delta| = 0.1 x 10 x 0.5 */
        for (int i = 0; i < D; i++)
                assert_true(fabsf(before[i] - sc_server_params(srv)[i] - 0.1f * 10 * g[i]) < 1e-4f);
        /* norms that grow 100x for good: the bound follows within a window */
        int clipped = 0;
        for (int k = 0; k < 64; k++) {
                for (int i = 0; i < D; i++)
                        big[i] = 100.0f * g[i];
                u = grad(0, ++seq, sc_server_version(srv), 8, big);
                assert_int_equal(sc_server_apply(srv, &u, &res, err, sizeof(err)), SC_OK);
                clipped += res.clipped;
        }
        assert_true(clipped > 0 && clipped < 64);
        assert_false(res.clipped);
        sc_server_destroy(srv);
}

static void overflowing_step_is_rolled_back(void **state)
{
        sc_server_limits_t lim = {.seq_window = 64};
        sc_server_t *srv = new_server(SC_SYNC_ASP, 2, 0.9, &lim);
        float big[D] = {3.4e38f, 0, 0, 0, 0, 0, 0, 0}, ok[D] = {0, 1, 0, 0, 0, 0, 0, 0};
        float after1[D];
        sc_apply_result_t res;
        sc_server_stats_t st;
        (void)state;

        assert_int_equal(apply(srv, grad(0, 1, 0, 8, big), &res), SC_APPLY_APPLIED);
        memcpy(after1, sc_server_params(srv), sizeof(after1));
        assert_int_equal(apply(srv, grad(0, 2, 1, 8, big), &res), SC_APPLY_REJECTED);
        assert_non_null(strstr(err, "non-finite"));
        assert_memory_equal(after1, sc_server_params(srv), sizeof(after1));
        assert_finite(srv);
        assert_int_equal(sc_server_version(srv), 1);
        assert_int_equal(apply(srv, grad(1, 1, 1, 8, ok), &res), SC_APPLY_APPLIED);
        assert_finite(srv);
        sc_server_stats(srv, &st);
        assert_int_equal(st.rejected, 1);
        assert_int_equal(st.applied, 2);
        sc_server_destroy(srv);

        /* bsp: the two in one round overflow the round sum; the second is
         * refused (its worker's turn taken), the round closes on the first. */
        srv = new_server(SC_SYNC_BSP, 2, 0.0, &lim);
        assert_int_equal(apply(srv, grad(0, 1, 0, 8, big), &res), SC_APPLY_APPLIED);
        assert_int_equal(apply(srv, grad(1, 1, 0, 8, big), &res), SC_APPLY_REJECTED);
        assert_int_equal(res.stepped, 1);
        assert_int_equal(sc_server_version(srv), 1);
        assert_finite(srv);
        sc_server_destroy(srv);
}

/* scadles: a worker claiming 4e9 samples is refused (b_max 1024); the round
 * closes on the honest worker's update alone, weighted as it should be. */
static void scadles_samples_capped(void **state)
{
        sc_server_limits_t lim = {.seq_window = 64};
        sc_server_t *srv = new_server(SC_SYNC_SCADLES, 2, 0.0, &lim);
        float g[D] = {1, 0, 0, 0, 0, 0, 0, 0}, evil[D] = {-1, 0, 0, 0, 0, 0, 0, 0};
        float before;
        sc_apply_result_t res;
        sc_server_stats_t st;
        (void)state;

        before = sc_server_params(srv)[0];
        assert_int_equal(apply(srv, grad(1, 1, 0, 4000000000u, evil), &res), SC_APPLY_REJECTED);
        assert_non_null(strstr(err, "b_max"));
        assert_int_equal(res.stepped, 0);
        assert_int_equal(apply(srv, grad(0, 1, 0, 64, g), &res), SC_APPLY_APPLIED);
        assert_int_equal(res.stepped, 1);
        /* g alone, lr 0.1 scaled by 64 / base_batch (64 x 2 workers) */
        assert_float_equal(sc_server_params(srv)[0], before - 0.1f * 64.0f / 128.0f, 1e-6);
        assert_finite(srv);
        sc_server_stats(srv, &st);
        assert_int_equal(st.rejected, 1);
        assert_int_equal(st.applied, 1);
        /* the refused turn survives a snapshot round trip mid-round */
        assert_int_equal(apply(srv, grad(1, 2, 1, 4000000000u, evil), &res), SC_APPLY_REJECTED);
        uint8_t *snap;
        size_t len;
        assert_int_equal(sc_server_snapshot(srv, &snap, &len), SC_OK);
        sc_server_t *b = new_server(SC_SYNC_SCADLES, 2, 0.0, &lim);
        assert_int_equal(sc_server_restore(b, snap, len, err, sizeof(err)), SC_OK);
        assert_int_equal(apply(b, grad(0, 2, 1, 64, g), &res), SC_APPLY_APPLIED);
        assert_int_equal(res.stepped, 1);
        free(snap);
        sc_server_destroy(b);
        sc_server_destroy(srv);
}

/* scadles over 2 workers with samples_factor 4: worker 0 claims 64 for 4
 * rounds, then 1024 (within b_max). The round weighs it by 4 x 64 = 256,
 * counted as clipped; the next claim of 1024 is bounded again (the median
 * of 64 x 4 and 256 is 64), and a claim under the bound is taken as it is.
 * With samples_factor 0 the 1024 is taken. Worker 1 sends zeros, so
 * coordinate 0 steps by lr x b0 / base_batch. */
static void scadles_claims_follow_rate(void **state)
{
        float g[D] = {1, 0, 0, 0, 0, 0, 0, 0}, zero[D] = {0};
        (void)state;
        for (int on = 0; on < 2; on++) {
                sc_server_limits_t lim = {.seq_window = 64, .samples_factor = on ? 4 : 0};
                sc_server_t *srv = new_server(SC_SYNC_SCADLES, 2, 0.0, &lim);
                static const uint32_t claim[7] = {64, 64, 64, 64, 1024, 1024, 100};
                static const float weighed[2][7] = {{64, 64, 64, 64, 1024, 1024, 100},
                                                    {64, 64, 64, 64, 256, 256, 100}};
                sc_apply_result_t res;
                sc_server_stats_t st;
                for (int r = 0; r < 7; r++) {
                        float before = sc_server_params(srv)[0];
                        uint64_t v = sc_server_version(srv);
                        assert_int_equal(apply(srv, grad(0, (uint64_t)r + 1, v, claim[r], g), &res),
                                         SC_APPLY_APPLIED);
                        assert_int_equal(apply(srv, grad(1, (uint64_t)r + 1, v, 64, zero), &res),
                                         SC_APPLY_APPLIED);
                        assert_int_equal(res.stepped, 1);
                        assert_float_equal(before - sc_server_params(srv)[0],
                                           0.1f * weighed[on][r] / 128.0f, 1e-6);
                }
                sc_server_stats(srv, &st);
                assert_int_equal(st.clipped, on ? 2 : 0);
                sc_server_destroy(srv);
        }
}

/* bsp over 5 workers, one sending 1e6 in coordinate 0 (no norm limit):
 * the median and the trimmed mean (trim 0.2: one value dropped at each end)
 * both step by 1.05, the plain mean by about 2e5. A snapshot taken mid-round
 * and restored gives the same step. */
static void robust_rounds(void **state)
{
        /* trim 0.2 of 5 drops one at each end: trimmed mean of {1, 1.2, 2}
         * is 1.4, the median 1.2 */
        static const float x[5] = {1.0f, 1.2f, 0.9f, 2.0f, 1e6f};
        for (int kind = SC_ROBUST_NONE; kind <= SC_ROBUST_MEDIAN; kind++) {
                sc_server_limits_t lim = {.seq_window = 64, .robust = kind, .trim = 0.2};
                sc_server_t *srv = new_server(SC_SYNC_BSP, 5, 0.0, &lim), *b;
                float g[5][D], before = sc_server_params(srv)[0];
                sc_apply_result_t res;
                uint8_t *snap;
                size_t len;
                (void)state;
                memset(g, 0, sizeof(g));
                for (int w = 0; w < 5; w++) {
                        g[w][0] = x[w];
                        g[w][1] = 1.0f; /* coordinate 1 agrees: 1 either way */
                }
                for (int w = 0; w < 3; w++)
                        assert_int_equal(apply(srv, grad((uint32_t)w, 1, 0, 8, g[w]), &res),
                                         SC_APPLY_APPLIED);
                assert_int_equal(sc_server_snapshot(srv, &snap, &len), SC_OK);
                if (kind != SC_ROBUST_NONE) { /* the rows need a robust shard */
                        sc_server_limits_t plain = lim;
                        plain.robust = SC_ROBUST_NONE;
                        b = new_server(SC_SYNC_BSP, 5, 0.0, &plain);
                        assert_int_equal(sc_server_restore(b, snap, len, err, sizeof(err)),
                                         SC_ERR_INVAL);
                        sc_server_destroy(b);
                }
                b = new_server(SC_SYNC_BSP, 5, 0.0, &lim);
                assert_int_equal(sc_server_restore(b, snap, len, err, sizeof(err)), SC_OK);
                free(snap);
                for (int w = 3; w < 5; w++) {
                        assert_int_equal(apply(srv, grad((uint32_t)w, 1, 0, 8, g[w]), &res),
                                         SC_APPLY_APPLIED);
                        assert_int_equal(apply(b, grad((uint32_t)w, 1, 0, 8, g[w]), &res),
                                         SC_APPLY_APPLIED);
                }
                assert_int_equal(res.stepped, 1);
                assert_memory_equal(sc_server_params(srv), sc_server_params(b), D * sizeof(float));
                float step = (before - sc_server_params(srv)[0]) / 0.1f;
                if (kind == SC_ROBUST_NONE)
                        assert_true(step > 1e5f);
                else
                        assert_float_equal(step, kind == SC_ROBUST_MEDIAN ? 1.2f : 1.4f, 1e-4);
                assert_float_equal((sc_server_params(srv)[1] - 0.5f) / -0.1f, 1.0f, 1e-5);
                sc_server_destroy(b);
                sc_server_destroy(srv);
        }
}

/* scadles over 3 workers, worker 2 compromised: a gradient x -10 claiming
 * 1024 samples (b_max) against two honest ones of 64. The plain round
 * steps backwards with the LR scaled by 1152 samples; the median round
 * steps as the honest gradient with the LR scaled by 3 x 64 (the median
 * claim), not by the sum. A snapshot taken mid-round (format 3: the rows'
 * weights) restores to the same step. */
static void robust_scadles_lr(void **state)
{
        static const float gh[D] = {1, 1, 1, 1, 1, 1, 1, 1};
        static const float gb[D] = {-10, -10, -10, -10, -10, -10, -10, -10};
        (void)state;
        for (int kind = SC_ROBUST_NONE; kind <= SC_ROBUST_MEDIAN; kind += SC_ROBUST_MEDIAN) {
                sc_server_limits_t lim = {.seq_window = 64, .robust = kind};
                sc_server_t *srv = new_server(SC_SYNC_SCADLES, 3, 0.0, &lim), *b;
                double base = sc_server_spec(srv)->sync.base_batch;
                float before = sc_server_params(srv)[0];
                sc_apply_result_t res;
                uint8_t *snap;
                size_t len;
                assert_int_equal(apply(srv, grad(2, 1, 0, 1024, gb), &res), SC_APPLY_APPLIED);
                assert_int_equal(apply(srv, grad(0, 1, 0, 64, gh), &res), SC_APPLY_APPLIED);
                assert_int_equal(sc_server_snapshot(srv, &snap, &len), SC_OK);
                /* format 3 with rows, 2 without (the same bytes then) */
                assert_int_equal(snap[4], kind == SC_ROBUST_NONE ? 2 : 3);
                b = new_server(SC_SYNC_SCADLES, 3, 0.0, &lim);
                assert_int_equal(sc_server_restore(b, snap, len, err, sizeof(err)), SC_OK);
                if (kind != SC_ROBUST_NONE) {
                        /* the last weight (64, f64 before the adacomp length
                         * and the crc) set to 0.5: not a sample count */
                        uint8_t *bad = malloc(len);
                        static const uint8_t half_le[8] = {0, 0, 0, 0, 0, 0, 0xe0, 0x3f};
                        sc_server_t *c = new_server(SC_SYNC_SCADLES, 3, 0.0, &lim);
                        memcpy(bad, snap, len);
                        memcpy(bad + len - 4 - 8 - 8, half_le, 8);
                        uint32_t crc = sc_crc32c(0, bad, len - 4);
                        for (int i = 0; i < 4; i++)
                                bad[len - 4 + i] = (uint8_t)(crc >> (8 * i));
                        assert_int_equal(sc_server_restore(c, bad, len, err, sizeof(err)),
                                         SC_ERR_CORRUPT);
                        free(bad);
                        sc_server_destroy(c);
                }
                free(snap);
                assert_int_equal(apply(srv, grad(1, 1, 0, 64, gh), &res), SC_APPLY_APPLIED);
                assert_int_equal(res.stepped, 1);
                assert_int_equal(apply(b, grad(1, 1, 0, 64, gh), &res), SC_APPLY_APPLIED);
                assert_memory_equal(sc_server_params(srv), sc_server_params(b), D * sizeof(float));
                double step = before - sc_server_params(srv)[0];
                if (kind == SC_ROBUST_NONE) /* lr 0.1 x 1152 / base x (128 - 10240) / 1152 */
                        assert_float_equal(step, 0.1 * (128.0 - 10240.0) / base, 1e-4);
                else
                        assert_float_equal(step, 0.1 * 3 * 64 / base, 1e-6);
                sc_server_destroy(b);
                sc_server_destroy(srv);
        }
}

/* limits.max_abs 10 (job.limits.model_max_abs): a step that would move
 * parameter 0 (0.0) to 20 is undone (bsp: the round, rolled back) or
 * refused (asp, adacomp: checked before) and the shard is unchanged; one to
 * 5 or less is taken. Workers would refuse the first model: it is never
 * published. A shard restored beyond the bound still takes a step that
 * brings the parameter back towards it, not one that takes it further. */
static void max_abs_bounds_steps(void **state)
{
        static const sc_sync_kind_t kinds[3] = {SC_SYNC_BSP, SC_SYNC_ASP, SC_SYNC_ADACOMP};
        float big[D] = {-200}, ok[D] = {-50};
        (void)state;
        for (int k = 0; k < 3; k++) {
                sc_server_limits_t lim = {.seq_window = 64, .max_abs = 10};
                sc_server_t *srv = new_server(kinds[k], 1, 0.0, &lim);
                float before[D];
                sc_apply_result_t res;
                memcpy(before, sc_server_params(srv), sizeof(before));
                sc_apply_status_t st = apply(srv, grad(0, 1, 0, 8, big), &res);
                if (kinds[k] == SC_SYNC_BSP)
                        assert_int_equal(res.rolled_back, 1);
                else
                        assert_int_equal(st, SC_APPLY_REJECTED);
                assert_memory_equal(sc_server_params(srv), before, sizeof(before));
                assert_int_equal(apply(srv, grad(0, 2, sc_server_version(srv), 8, ok), &res),
                                 SC_APPLY_APPLIED);
                float p0 = sc_server_params(srv)[0];
                assert_true(p0 > 0.0f && p0 <= 5.0f + 1e-6f);
                sc_server_destroy(srv);
        }
        /* A shard already beyond the bound (restored from before it): a step
         * that shrinks the parameter is taken, one that grows it undone. */
        for (int k = 0; k < 3; k++) {
                sc_server_limits_t off = {.seq_window = 64}, lim = off;
                lim.max_abs = 10;
                sc_server_t *a = new_server(kinds[k], 1, 0.0, &off), *b;
                float shrink[D] = {50}, grow[D] = {-50};
                sc_apply_result_t res;
                uint8_t *snap;
                size_t len;
                assert_int_equal(apply(a, grad(0, 1, 0, 8, big), &res), SC_APPLY_APPLIED);
                assert_true(sc_server_params(a)[0] > 10.0f);
                assert_int_equal(sc_server_snapshot(a, &snap, &len), SC_OK);
                b = new_server(kinds[k], 1, 0.0, &lim);
                assert_int_equal(sc_server_restore(b, snap, len, err, sizeof(err)), SC_OK);
                free(snap);
                float before = sc_server_params(b)[0];
                uint64_t v = sc_server_version(b);
                assert_int_equal(apply(b, grad(0, 2, v, 8, shrink), &res), SC_APPLY_APPLIED);
                assert_int_equal(res.rolled_back, 0);
                assert_true(sc_server_params(b)[0] < before);
                before = sc_server_params(b)[0];
                sc_apply_status_t st = apply(b, grad(0, 3, sc_server_version(b), 8, grow), &res);
                assert_true(st == SC_APPLY_REJECTED || res.rolled_back == 1);
                assert_true(sc_server_params(b)[0] == before);
                sc_server_destroy(a);
                sc_server_destroy(b);
        }
}

/* adacomp (a sparse step checked before it is taken): 3.4e38 updates push
 * coordinate 0 down by lr x 3.4e38 each until the next would overflow;
 * that one is refused, the shard stays finite, and a later update applies. */
static void adacomp_overflow_refused(void **state)
{
        sc_server_limits_t lim = {.seq_window = 64};
        sc_server_t *srv = new_server(SC_SYNC_ADACOMP, 2, 0.0, &lim);
        float v[1] = {3.4e38f}, ok[1] = {-1.0f};
        uint32_t idx[1] = {0};
        sc_apply_result_t res;
        sc_server_stats_t st;
        uint64_t seq = 0;
        (void)state;
        for (;;) {
                sc_update_t u = grad(0, ++seq, sc_server_version(srv), 8, v);
                u.indices = idx;
                u.count = 1;
                assert_true(seq < 20);
                if (apply(srv, u, &res) == SC_APPLY_REJECTED)
                        break;
                assert_int_equal(res.status, SC_APPLY_APPLIED);
        }
        assert_non_null(strstr(err, "non-finite"));
        assert_finite(srv);
        assert_true(sc_server_params(srv)[0] < -3e38f);
        sc_update_t u = grad(0, ++seq, sc_server_version(srv), 8, ok);
        u.indices = idx;
        u.count = 1;
        assert_int_equal(apply(srv, u, &res), SC_APPLY_APPLIED);
        sc_server_stats(srv, &st);
        assert_int_equal(st.rejected, 1);
        assert_int_equal(st.applied, seq - 1);
        sc_server_destroy(srv);
}

/* A snapshot holding a NaN parameter (CRC intact) is not restored. */
static void restore_refuses_non_finite(void **state)
{
        sc_server_t *srv = new_server(SC_SYNC_ASP, 2, 0.9, NULL), *b;
        static const uint8_t nan_le[4] = {0x00, 0x00, 0xc0, 0x7f};
        uint8_t *snap;
        size_t len;
        uint32_t crc;
        (void)state;
        assert_int_equal(sc_server_snapshot(srv, &snap, &len), SC_OK);
        memcpy(snap + 104 + 2 * 26 + 4 * 3, nan_le, 4); /* parameter 3 */
        crc = sc_crc32c(0, snap, len - 4);
        for (int i = 0; i < 4; i++)
                snap[len - 4 + i] = (uint8_t)(crc >> (8 * i));
        b = new_server(SC_SYNC_ASP, 2, 0.9, NULL);
        assert_int_equal(sc_server_restore(b, snap, len, err, sizeof(err)), SC_ERR_CORRUPT);
        assert_non_null(strstr(err, "not finite"));
        assert_true(sc_server_is_finite(b));
        free(snap);
        sc_server_destroy(b);
        sc_server_destroy(srv);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(seq_jump_is_refused),
            cmocka_unit_test(huge_update_refused_or_clipped),
            cmocka_unit_test(norm_bound_follows_honest_norms),
            cmocka_unit_test(overflowing_step_is_rolled_back),
            cmocka_unit_test(scadles_samples_capped),
            cmocka_unit_test(scadles_claims_follow_rate),
            cmocka_unit_test(robust_rounds),
            cmocka_unit_test(robust_scadles_lr),
            cmocka_unit_test(max_abs_bounds_steps),
            cmocka_unit_test(adacomp_overflow_refused),
            cmocka_unit_test(restore_refuses_non_finite),
        };
        return cmocka_run_group_tests_name("server_limits", tests, NULL, NULL);
}
