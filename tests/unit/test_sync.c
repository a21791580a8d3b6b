/* test_sync.c — sync policies: names and parameter checks, the worker state
 * machines (bsp waiting, ssp blocking, asp never waiting, adsp commit timing),
 * AdaComp staleness against a full-history brute force, the ADSP loss-curve
 * fit on synthetic curves and the commit-rate search. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_rng.h"
#include "sc_sync.h"

static void names_and_spec_checks(void **state)
{
        sc_sync_kind_t k;
        sc_sync_spec_t sp;
        char err[256];

        for (int i = 0; i < SC_SYNC__END; i++) {
                assert_int_equal(
                    sc_sync_kind_parse(sc_sync_kind_name((sc_sync_kind_t)i), &k, err, sizeof(err)),
                    SC_OK);
                assert_int_equal(k, i);
        }
        assert_int_equal(sc_sync_kind_parse("bsb", &k, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "'bsb'"));
        assert_true(sc_sync_sends_gradients(SC_SYNC_ADACOMP));
        assert_false(sc_sync_sends_gradients(SC_SYNC_ADSP));
        assert_true(sc_sync_is_round_based(SC_SYNC_LOCALSGD));
        assert_false(sc_sync_is_round_based(SC_SYNC_SSP));

        memset(&sp, 0, sizeof(sp));
        sp.kind = SC_SYNC_SCADLES;
        sp.n_workers = 16;
        assert_int_equal(sc_sync_spec_check(&sp, err, sizeof(err)), SC_OK);
        assert_true(sp.base_batch == 1024.0); /* 64 * N */
        assert_int_equal(sp.b_min, 8);
        assert_int_equal(sp.b_max, 1024);
        sp.staleness = -1;
        assert_int_equal(sc_sync_spec_check(&sp, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "sync.staleness"));
        sc_sync_spec_defaults(&sp, SC_SYNC_SCADLES, 4);
        sp.b_min = 100;
        sp.b_max = 10;
        assert_int_equal(sc_sync_spec_check(&sp, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "b_min"));
        sc_sync_spec_defaults(&sp, SC_SYNC_ADSP, 4);
        sp.adsp_mu = 1.5;
        assert_int_equal(sc_sync_spec_check(&sp, err, sizeof(err)), SC_ERR_CONFIG);
        sp.adsp_mu = 0;
        sp.n_workers = 0;
        assert_int_equal(sc_sync_spec_check(&sp, err, sizeof(err)), SC_ERR_CONFIG);
        sc_sync_worker_t *w;
        sc_sync_spec_defaults(&sp, SC_SYNC_BSP, 2);
        assert_int_equal(sc_sync_worker_new(&w, &sp, 2, err, sizeof(err)), SC_ERR_INVAL);
        assert_null(w);
}

/* One worker cycle: compute, send; returns the action after sending. */
static void cycle(sc_sync_worker_t *w, double now, sc_sync_act_t *after)
{
        sc_sync_act_t act;
        sc_sync_worker_next(w, now, &act);
        assert_int_equal(act.kind, SC_ACT_COMPUTE);
        sc_sync_worker_computed(w, now, act.batch);
        sc_sync_worker_next(w, now, &act);
        assert_int_equal(act.kind, SC_ACT_SEND);
        assert_int_equal(act.update_kind, SC_UPDATE_GRAD);
        sc_sync_worker_sent(w, now);
        sc_sync_worker_next(w, now, after);
}

static void ssp_blocking_rules(void **state)
{
        sc_sync_spec_t sp;
        sc_sync_worker_t *w;
        sc_sync_act_t act;
        sc_sync_model_info_t info = {0};

        sc_sync_spec_defaults(&sp, SC_SYNC_SSP, 3);
        sp.staleness = 2;
        assert_int_equal(sc_sync_worker_new(&w, &sp, 0, NULL, 0), SC_OK);
        /* Slowest clock 0: clocks 1 and 2 may proceed (c - s <= 0). */
        cycle(w, 0, &act);
        assert_int_equal(act.kind, SC_ACT_COMPUTE);
        cycle(w, 1, &act);
        assert_int_equal(act.kind, SC_ACT_COMPUTE);
        /* At clock 3 it needs the slowest at >= 1. */
        cycle(w, 2, &act);
        assert_int_equal(act.kind, SC_ACT_WAIT);
        assert_int_equal(act.wait, SC_WAIT_CLOCK);
        assert_int_equal(act.clock, 1);
        sc_sync_worker_next(w, 2.5, &act);
        assert_int_equal(act.kind, SC_ACT_WAIT);
        info.version = 5;
        info.min_clock = 1;
        sc_sync_worker_model(w, 3.0, &info);
        sc_sync_worker_next(w, 3.0, &act);
        assert_int_equal(act.kind, SC_ACT_COMPUTE);
        assert_true(fabs(sc_sync_worker_wait_seconds(w) - 1.0) < 1e-12);
        assert_int_equal(act.t_read, 5);
        /* Clock 4 needs >= 2; clock 1 from the server is not enough. */
        sc_sync_worker_computed(w, 3, 64);
        sc_sync_worker_next(w, 3, &act);
        sc_sync_worker_sent(w, 3);
        sc_sync_worker_next(w, 3, &act);
        assert_int_equal(act.kind, SC_ACT_WAIT);
        assert_int_equal(act.clock, 2);
        sc_sync_worker_destroy(w);

        /* s = 0 is lock-step: every clock waits for the slowest to match. */
        sp.staleness = 0;
        assert_int_equal(sc_sync_worker_new(&w, &sp, 1, NULL, 0), SC_OK);
        cycle(w, 0, &act);
        assert_int_equal(act.kind, SC_ACT_WAIT);
        assert_int_equal(act.clock, 1);
        sc_sync_worker_destroy(w);
}

/* asp and adacomp never wait for other workers; with sync.max_inflight m
 * (default 4) a worker waits only for its own updates: at clock c (updates
 * sent) it computes once its model holds its updates up to c - m. m = 0 is
 * no bound. */
static void asp_and_adacomp_wait_only_for_their_own_updates(void **state)
{
        sc_sync_kind_t kinds[2] = {SC_SYNC_ASP, SC_SYNC_ADACOMP};
        for (int k = 0; k < 2; k++) {
                sc_sync_spec_t sp;
                sc_sync_worker_t *w;
                sc_sync_act_t act;
                sc_sync_model_info_t info;
                sc_sync_spec_defaults(&sp, kinds[k], 4);
                assert_int_equal(sp.max_inflight, 4);
                sp.batch = 10;
                assert_int_equal(sc_sync_worker_new(&w, &sp, 3, NULL, 0), SC_OK);
                for (int i = 0; i < 4; i++) {
                        cycle(w, i, &act);
                        assert_int_equal(act.kind, SC_ACT_COMPUTE);
                        assert_int_equal(act.batch, 10);
                        assert_int_equal(act.local_step, 0);
                }
                cycle(w, 4, &act); /* clock 5: update 1 must be in the model */
                assert_int_equal(act.kind, SC_ACT_WAIT);
                assert_int_equal(act.wait, SC_WAIT_APPLIED);
                assert_int_equal(act.seq, 1);
                /* Other workers' clocks do not matter, nor a newer version. */
                memset(&info, 0, sizeof(info));
                info.version = 9;
                sc_sync_worker_model(w, 5, &info);
                sc_sync_worker_next(w, 5, &act);
                assert_int_equal(act.kind, SC_ACT_WAIT);
                info.applied_seq = 1;
                sc_sync_worker_model(w, 6, &info);
                sc_sync_worker_next(w, 6, &act);
                assert_int_equal(act.kind, SC_ACT_COMPUTE);
                assert_int_equal(act.t_read, 9);
                assert_true(fabs(sc_sync_worker_wait_seconds(w) - 2.0) < 1e-12);
                sc_sync_worker_destroy(w);

                sp.max_inflight = 0; /* no bound */
                assert_int_equal(sc_sync_worker_new(&w, &sp, 3, NULL, 0), SC_OK);
                for (int i = 0; i < 50; i++) {
                        cycle(w, i, &act);
                        assert_int_equal(act.kind, SC_ACT_COMPUTE);
                }
                assert_int_equal(sc_sync_worker_clock(w), 50);
                assert_true(sc_sync_worker_wait_seconds(w) == 0);
                sc_sync_worker_destroy(w);
        }
}

/* An update's t_read is the version its compute started from, even when a
 * newer model arrived while computing (async replies). */
static void t_read_is_the_version_at_compute_start(void **state)
{
        sc_sync_spec_t sp;
        sc_sync_worker_t *w;
        sc_sync_act_t act;
        sc_sync_model_info_t info = {.version = 9};
        sc_sync_spec_defaults(&sp, SC_SYNC_ADACOMP, 2);
        assert_int_equal(sc_sync_worker_new(&w, &sp, 0, NULL, 0), SC_OK);
        sc_sync_worker_next(w, 0, &act);
        assert_int_equal(act.kind, SC_ACT_COMPUTE);
        assert_int_equal(act.t_read, 0);
        sc_sync_worker_model(w, 0.5, &info);
        sc_sync_worker_computed(w, 1, 10);
        sc_sync_worker_next(w, 1, &act);
        assert_int_equal(act.kind, SC_ACT_SEND);
        assert_int_equal(act.t_read, 0);
        sc_sync_worker_sent(w, 1);
        sc_sync_worker_next(w, 1, &act);
        assert_int_equal(act.kind, SC_ACT_COMPUTE);
        assert_int_equal(act.t_read, 9);
        sc_sync_worker_destroy(w);
}

static void bsp_waits_for_next_version(void **state)
{
        sc_sync_spec_t sp;
        sc_sync_worker_t *w;
        sc_sync_act_t act;
        sc_sync_model_info_t info = {.version = 0};
        sc_sync_spec_defaults(&sp, SC_SYNC_BSP, 2);
        assert_int_equal(sc_sync_worker_new(&w, &sp, 0, NULL, 0), SC_OK);
        cycle(w, 1.0, &act);
        assert_int_equal(act.kind, SC_ACT_WAIT);
        assert_int_equal(act.version, 1);
        sc_sync_worker_model(w, 2.0, &info); /* an old model does not release it */
        sc_sync_worker_next(w, 2.0, &act);
        assert_int_equal(act.kind, SC_ACT_WAIT);
        info.version = 1;
        sc_sync_worker_model(w, 4.0, &info);
        sc_sync_worker_next(w, 4.0, &act);
        assert_int_equal(act.kind, SC_ACT_COMPUTE);
        assert_int_equal(act.batch, 64);
        assert_true(fabs(sc_sync_worker_wait_seconds(w) - 3.0) < 1e-12);
        sc_sync_worker_destroy(w);

        /* scadles sizes batches by the stream rate. */
        sc_sync_spec_defaults(&sp, SC_SYNC_SCADLES, 2);
        assert_int_equal(sc_sync_worker_new(&w, &sp, 1, NULL, 0), SC_OK);
        sc_sync_worker_set_rate(w, 256.4);
        sc_sync_worker_next(w, 0, &act);
        assert_int_equal(act.batch, 256);
        sc_sync_worker_set_rate(w, 2.0);
        sc_sync_worker_next(w, 0, &act);
        assert_int_equal(act.batch, 8);
        sc_sync_worker_destroy(w);
}

/* The auto window w = B / sum_j S_j makes the global batch B; each b_i is
 * still clamped to [b_min, b_max], and until a rate sum is known the fixed
 * window applies. */
static void scadles_auto_window(void **state)
{
        sc_sync_spec_t sp;
        sc_sync_worker_t *w;
        sc_sync_act_t act;
        char err[256];
        double rates[4] = {150, 250, 350, 450}, sum = 1200, got = 0;

        assert_true(fabs(sc_sync_scadles_window(1024, 4800) - 1024.0 / 4800) < 1e-15);
        assert_true(fabs(sc_sync_scadles_window(1024, 1024) - 1.0) < 1e-15);
        assert_true(fabs(sc_sync_scadles_window(1024, 600) - 1024.0 / 600) < 1e-15);
        assert_true(sc_sync_scadles_window(1024, 0) == 0); /* no sum: no window */
        assert_true(sc_sync_scadles_window(1024, -5) == 0);
        assert_true(sc_sync_scadles_window(1024, NAN) == 0);
        assert_true(sc_sync_scadles_window(0, 100) == 0);
        assert_true(sc_sync_scadles_window(1e12, 1e-9) == 1e6); /* capped */
        /* The clamp: 0.2 s of 20 samples/s is 4 -> b_min; 1.6 s of 2000 -> b_max. */
        assert_int_equal(sc_sync_scadles_batch(20, sc_sync_scadles_window(1024, 5120), 8, 1024), 8);
        assert_int_equal(sc_sync_scadles_batch(2000, sc_sync_scadles_window(1024, 640), 8, 1024),
                         1024);

        sc_sync_spec_defaults(&sp, SC_SYNC_SCADLES, 4);
        sp.window_auto = 1; /* B = 64 * 4 = 256 */
        for (int i = 0; i < 4; i++) {
                assert_int_equal(sc_sync_worker_new(&w, &sp, (uint32_t)i, NULL, 0), SC_OK);
                sc_sync_worker_set_rate(w, rates[i]);
                sc_sync_worker_next(w, 0, &act);
                assert_int_equal(act.batch, (int)rates[i]); /* no sum yet: window 1 s */
                assert_true(sc_sync_worker_window(w) == 1.0);
                sc_sync_worker_set_rate_sum(w, sum);
                sc_sync_worker_set_rate_sum(w, NAN); /* ignored */
                sc_sync_worker_set_rate_sum(w, -1);
                assert_true(fabs(sc_sync_worker_window(w) - 256.0 / 1200) < 1e-15);
                assert_true(sc_sync_worker_rate(w) == rates[i]);
                sc_sync_worker_next(w, 0, &act);
                assert_int_equal(act.batch, (int)lround(rates[i] * 256.0 / 1200));
                got += act.batch;
                sc_sync_worker_destroy(w);
        }
        assert_true(fabs(got - 256) <= 2); /* 32 + 53 + 75 + 96 */
        /* A slow stream is clamped up to b_min, a sparse sum up to b_max. */
        assert_int_equal(sc_sync_worker_new(&w, &sp, 0, NULL, 0), SC_OK);
        sc_sync_worker_set_rate(w, 10);
        sc_sync_worker_set_rate_sum(w, 1000);
        sc_sync_worker_next(w, 0, &act);
        assert_int_equal(act.batch, 8);
        sc_sync_worker_set_rate(w, 900);
        sc_sync_worker_set_rate_sum(w, 100); /* w = 2.56 s */
        sc_sync_worker_next(w, 0, &act);
        assert_int_equal(act.batch, 1024);
        sc_sync_worker_destroy(w);
        /* Without window_auto the sum changes nothing. */
        sp.window_auto = 0;
        sp.window = 0.5;
        assert_int_equal(sc_sync_worker_new(&w, &sp, 0, NULL, 0), SC_OK);
        sc_sync_worker_set_rate(w, 300);
        sc_sync_worker_set_rate_sum(w, 4800);
        sc_sync_worker_next(w, 0, &act);
        assert_int_equal(act.batch, 150);
        assert_true(sc_sync_worker_window(w) == 0.5);
        sc_sync_worker_destroy(w);
        sp.window_auto = 2;
        assert_int_equal(sc_sync_spec_check(&sp, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "sync.window"));
        (void)state;
}

static void adsp_commit_interval_and_timing(void **state)
{
        sc_sync_spec_t sp;
        sc_sync_worker_t *w;
        sc_sync_act_t act;
        double t = 0;
        int steps = 0;

        /* B_i = max(B_min, Gamma / DeltaC - O_i) */
        assert_true(fabs(sc_sync_adsp_interval(60, 2, 5, 10) - 25) < 1e-12);
        assert_true(fabs(sc_sync_adsp_interval(60, 5, 5, 10) - 10) < 1e-12);
        assert_true(fabs(sc_sync_adsp_interval(60, 1, 0, 10) - 60) < 1e-12);

        sc_sync_spec_defaults(&sp, SC_SYNC_ADSP, 2);
        sp.commit_rate = 2; /* every 30 s */
        assert_int_equal(sc_sync_worker_new(&w, &sp, 0, NULL, 0), SC_OK);
        for (;;) {
                sc_sync_worker_next(w, t, &act);
                if (act.kind != SC_ACT_COMPUTE)
                        break;
                assert_int_equal(act.local_step, 1);
                assert_true(fabs(act.commit_at - 30) < 1e-12);
                t += 1.5; /* seconds per local step */
                sc_sync_worker_computed(w, t, act.batch);
                steps++;
        }
        assert_int_equal(act.kind, SC_ACT_SEND);
        assert_int_equal(act.update_kind, SC_UPDATE_DELTA);
        assert_int_equal(steps, 20); /* 20 * 1.5 = 30 s */
        assert_int_equal(sc_sync_worker_local_steps(w), 20);
        sc_sync_worker_sent(w, t);
        sc_sync_worker_next(w, t, &act);
        assert_int_equal(act.kind, SC_ACT_WAIT);
        assert_int_equal(act.wait, SC_WAIT_APPLIED);
        assert_int_equal(act.seq, 1);
        sc_sync_model_info_t info = {.version = 7, .applied_seq = 1};
        sc_sync_worker_model(w, t + 4, &info);
        sc_sync_worker_next(w, t + 4, &act);
        assert_int_equal(act.kind, SC_ACT_COMPUTE);
        assert_true(fabs(sc_sync_worker_overhead(w) - 4) < 1e-12);
        /* next commit: 34 + max(10, 30 - 4) = 60 */
        assert_true(fabs(act.commit_at - 60) < 1e-12);
        assert_int_equal(sc_sync_worker_local_steps(w), 0);
        /* A faster commit rate from the tuner shortens the interval after the
         * next commit: 60 / 6 - O = 6 -> clamped to B_min = 10. */
        sc_sync_worker_set_commit_rate(w, 6);
        t += 4;
        while (act.kind == SC_ACT_COMPUTE) {
                t += 1.5;
                sc_sync_worker_computed(w, t, act.batch);
                sc_sync_worker_next(w, t, &act);
        }
        sc_sync_worker_sent(w, t);
        info.applied_seq = 2;
        sc_sync_worker_model(w, t + 1, &info);
        sc_sync_worker_next(w, t + 1, &act);
        assert_true(fabs(act.commit_at - (t + 1 + 10)) < 1e-12);
        sc_sync_worker_destroy(w);
}

/* ---- AdaComp staleness vs full history ------------------------------------ */

enum { AN = 40, AW = 12, AUPD = 600 };

typedef struct hist {
        uint8_t touched[AUPD][AN]; /* update number (1-based) -> coordinates */
} hist_t;

static void adacomp_matches_brute_force(void **state)
{
        static hist_t h;
        sc_adacomp_t *ada;
        sc_rng_t rng;
        float p_fast[AN], p_ref[AN];
        uint32_t idx[AN], sigma[AN], perm[AN];
        float val[AN];
        int beyond = 0, exact_nonzero = 0;

        sc_rng_seed(&rng, 5);
        memset(&h, 0, sizeof(h));
        assert_int_equal(sc_adacomp_new(&ada, AN, AW), SC_OK);
        for (int i = 0; i < AN; i++)
                p_fast[i] = p_ref[i] = 0;
        for (uint64_t t = 0; t < AUPD - 1; t++) {
                assert_int_equal(sc_adacomp_count(ada), t);
                uint64_t d = sc_rng_below(&rng, AW + 8); /* sometimes beyond W */
                if (d > t)
                        d = t;
                uint64_t t_read = t - d;
                int dense = sc_rng_below(&rng, 20) == 0;
                size_t count = dense ? AN : 1 + sc_rng_below(&rng, 8);
                for (uint32_t i = 0; i < AN; i++)
                        perm[i] = i;
                sc_rng_shuffle_u32(&rng, perm, AN);
                for (size_t k = 0; k < count; k++) {
                        idx[k] = dense ? (uint32_t)k : perm[k];
                        val[k] = sc_rng_normal(&rng);
                }
                assert_int_equal(
                    sc_adacomp_staleness(ada, t_read, dense ? NULL : idx, count, sigma), SC_OK);
                /* Brute force over the full history, window-clipped. */
                uint64_t dd = d < AW ? d : AW;
                for (size_t k = 0; k < count; k++) {
                        uint32_t s = 0;
                        for (uint64_t u = t - dd + 1; u <= t && dd > 0; u++)
                                s += h.touched[u][idx[k]];
                        assert_int_equal(sigma[k], s);
                        if (d == 0)
                                assert_int_equal(sigma[k], 0);
                        exact_nonzero += s > 0;
                        p_ref[idx[k]] -= 0.1f * val[k] / (float)(s > 1 ? s : 1);
                }
                beyond += d > AW;
                assert_int_equal(
                    sc_adacomp_apply(ada, p_fast, 0.1f, t_read, dense ? NULL : idx, val, count),
                    SC_OK);
                for (size_t k = 0; k < count; k++)
                        h.touched[t + 1][idx[k]] = 1;
        }
        assert_true(beyond > 20);
        assert_true(exact_nonzero > 100);
        assert_memory_equal(p_fast, p_ref, sizeof(p_fast));
        /* Bad input: future t_read, repeated or out-of-range indices. */
        idx[0] = 3;
        idx[1] = 3;
        assert_int_equal(sc_adacomp_staleness(ada, AUPD + 5, idx, 1, sigma), SC_ERR_INVAL);
        assert_int_equal(sc_adacomp_staleness(ada, 0, idx, 2, sigma), SC_ERR_INVAL);
        idx[1] = AN;
        assert_int_equal(sc_adacomp_record(ada, idx, 2), SC_ERR_INVAL);
        assert_int_equal(sc_adacomp_count(ada), AUPD - 1);
        sc_adacomp_destroy(ada);
}

static void adacomp_full_step_when_fresh(void **state)
{
        /* d = 0: sigma = 0 and the step is the full lr * g, even when the same
         * coordinate was touched by every earlier update. */
        sc_adacomp_t *ada;
        float p[4] = {0};
        uint32_t idx[1] = {2};
        float g[1] = {1.0f};
        assert_int_equal(sc_adacomp_new(&ada, 4, 8), SC_OK);
        for (uint64_t t = 0; t < 5; t++)
                assert_int_equal(sc_adacomp_apply(ada, p, 0.5f, t, idx, g, 1), SC_OK);
        assert_true(p[2] == -2.5f);
        /* Read at t = 2, three later updates touched coordinate 2: step / 3. */
        assert_int_equal(sc_adacomp_apply(ada, p, 0.6f, 2, idx, g, 1), SC_OK);
        assert_true(fabsf(p[2] - (-2.5f - 0.2f)) < 1e-6f);
        sc_adacomp_destroy(ada);
}

static void adacomp_save_load_continues_identically(void **state)
{
        sc_adacomp_t *a, *b;
        sc_rng_t rng;
        uint32_t idx[6], sa[6], sb[6];
        sc_rng_seed(&rng, 9);
        assert_int_equal(sc_adacomp_new(&a, 30, 7), SC_OK);
        assert_int_equal(sc_adacomp_new(&b, 30, 7), SC_OK);
        for (int t = 0; t < 25; t++) {
                uint32_t perm[30];
                for (uint32_t i = 0; i < 30; i++)
                        perm[i] = i;
                sc_rng_shuffle_u32(&rng, perm, 30);
                if (t % 9 == 4)
                        assert_int_equal(sc_adacomp_record(a, NULL, 0), SC_OK);
                else
                        assert_int_equal(sc_adacomp_record(a, perm, 6), SC_OK);
        }
        size_t len = sc_adacomp_save_size(a);
        uint8_t *buf = malloc(len);
        sc_adacomp_save(a, buf);
        assert_int_equal(sc_adacomp_load(b, buf, len), SC_OK);
        assert_int_equal(sc_adacomp_count(b), 25);
        for (uint64_t tr = 15; tr <= 25; tr++) {
                for (int k = 0; k < 6; k++)
                        idx[k] = (uint32_t)(k * 5 + tr % 5);
                assert_int_equal(sc_adacomp_staleness(a, tr, idx, 6, sa), SC_OK);
                assert_int_equal(sc_adacomp_staleness(b, tr, idx, 6, sb), SC_OK);
                assert_memory_equal(sa, sb, sizeof(sa));
        }
        assert_int_equal(sc_adacomp_load(b, buf, len - 1), SC_ERR_CORRUPT);
        buf[12 + 1] = 0xff; /* first slot's count */
        assert_int_equal(sc_adacomp_load(b, buf, len), SC_ERR_CORRUPT);
        free(buf);
        sc_adacomp_destroy(a);
        sc_adacomp_destroy(b);
}

/* ---- ADSP loss fit and tuner ----------------------------------------------- */

static void lossfit_recovers_known_curve(void **state)
{
        double t[60], l[60];
        sc_lossfit_t fit;
        sc_rng_t rng;
        for (int k = 0; k < 60; k++) {
                t[k] = 2.0 * k;
                l[k] = 1.0 / (0.04 * t[k] + 0.5) + 0.3;
        }
        assert_int_equal(sc_lossfit_fit(t, l, 60, &fit), SC_OK);
        assert_true(fabs(fit.a2 - 0.04) < 1e-4);
        assert_true(fabs(fit.b - 0.5) < 1e-3);
        assert_true(fabs(fit.c0 - 0.3) < 1e-4);
        /* reaches 0.4 when 1/(0.04 t + 0.5) = 0.1: t = 237.5 */
        assert_true(fabs(sc_lossfit_time_to(&fit, 0.4) - 237.5) < 1.0);
        assert_true(isinf(sc_lossfit_time_to(&fit, 0.25)));
        assert_true(fabs(sc_lossfit_eval(&fit, 10) - (1.0 / 0.9 + 0.3)) < 1e-4);

        /* With 1% noise the curve is still close. */
        sc_rng_seed(&rng, 4);
        for (int k = 0; k < 60; k++)
                l[k] = (1.0 / (0.02 * t[k] + 0.8) + 0.1) * (1.0 + 0.01 * sc_rng_normal(&rng));
        assert_int_equal(sc_lossfit_fit(t, l, 60, &fit), SC_OK);
        for (int k = 0; k < 60; k += 10)
                assert_true(fabs(sc_lossfit_eval(&fit, t[k]) - (1.0 / (0.02 * t[k] + 0.8) + 0.1)) <
                            0.02);
        assert_int_equal(sc_lossfit_fit(t, l, 2, &fit), SC_ERR_INVAL);
        l[3] = NAN;
        assert_int_equal(sc_lossfit_fit(t, l, 60, &fit), SC_ERR_INVAL);
}

/* Synthetic training: with commit rate c the loss follows a curve whose speed
 * a2(c) peaks at c = 3; time continues across periods. */
static double a2_of(double c)
{
        return 0.01 * (5.0 - (c - 3) * (c - 3));
}

static void feed_period(sc_adsp_tuner_t *tu, double c, double t0, double gamma, double *phase,
                        double bump)
{
        for (int k = 0; k < 20; k++) {
                double t = t0 + gamma * k / 20.0;
                double x = *phase + a2_of(c) * (gamma * k / 20.0);
                sc_adsp_tuner_observe(tu, t, 1.0 / (x + 0.5) + 0.2 + bump);
        }
        *phase += a2_of(c) * gamma;
}

static void adsp_tuner_searches_and_researches(void **state)
{
        sc_adsp_tuner_spec_t spec = {
            .gamma = 60, .c_init = 1, .c_step = 1, .c_max = 10, .target_loss = 0.25, .rise = 0.3};
        sc_adsp_tuner_t *tu;
        double t = 0, phase = 0, c;
        char err[128];

        assert_int_equal(sc_adsp_tuner_new(&tu, &spec, 0, err, sizeof(err)), SC_OK);
        c = sc_adsp_tuner_tick(tu, 10); /* before Gamma: unchanged */
        assert_true(c == 1);
        double seen[8];
        int n = 0;
        while (sc_adsp_tuner_searching(tu) && n < 8) {
                feed_period(tu, c, t, 60, &phase, 0);
                t += 60;
                seen[n++] = c;
                c = sc_adsp_tuner_tick(tu, t);
        }
        /* 1 -> 2 -> 3 improve, 4 is worse: settle on 3. */
        assert_int_equal(n, 4);
        assert_true(seen[0] == 1 && seen[1] == 2 && seen[2] == 3 && seen[3] == 4);
        assert_true(c == 3);
        assert_false(sc_adsp_tuner_searching(tu));
        /* Steady progress keeps it; a 40% loss rise restarts the search. */
        feed_period(tu, c, t, 60, &phase, 0);
        t += 60;
        assert_true(sc_adsp_tuner_tick(tu, t) == 3);
        assert_false(sc_adsp_tuner_searching(tu));
        feed_period(tu, c, t, 60, &phase, 0.2);
        t += 60;
        /* ... from one step below the rate in use */
        assert_true(sc_adsp_tuner_tick(tu, t) == 2);
        assert_true(sc_adsp_tuner_searching(tu));
        sc_adsp_tuner_destroy(tu);

        spec.c_max = 0.5;
        assert_int_equal(sc_adsp_tuner_new(&tu, &spec, 0, err, sizeof(err)), SC_ERR_CONFIG);
}

/* A loss stream where each commit rate c trains at speed a2 = 0.002 c (peak
 * 0) or 0.002 c (2 peak - c) (fastest at c = peak) on the curve
 * 1/(a2 t + b) + c0 (time continues across periods), with a steep first
 * minute (warm_drop added, falling linearly to 0) and multiplicative noise of
 * sd `noise`; runs the tuner until it stops searching or `periods` passed and
 * returns the rate it ends with; *seen gets the rates tried. */
static double run_climb(double target, double c0, double warm_drop, double noise, double peak,
                        int periods, double research_every, int *seen_n, double *seen)
{
        sc_adsp_tuner_spec_t spec = {.gamma = 60,
                                     .c_init = 1,
                                     .c_step = 1,
                                     .c_max = 6,
                                     .target_loss = target,
                                     .rise = 0.3,
                                     .research_every = research_every,
                                     .warmup = 60};
        sc_adsp_tuner_t *tu;
        sc_rng_t rng;
        double t = 0, x = 0.5, c = 1;
        char err[128];

        sc_rng_seed(&rng, 7);
        assert_int_equal(sc_adsp_tuner_new(&tu, &spec, 0, err, sizeof(err)), SC_OK);
        *seen_n = 0;
        for (int p = 0; p < periods; p++) {
                for (int k = 0; k < 120; k++) {
                        double tk = t + 0.5 * k;
                        double extra = tk < 60 ? warm_drop * (1 - tk / 60) : 0;
                        double l = (1.0 / x + c0 + extra) * (1 + noise * sc_rng_normal(&rng));
                        sc_adsp_tuner_observe(tu, tk, l);
                        x += 0.002 * (peak > 0 ? c * (2 * peak - c) : c) * 0.5;
                }
                t += 60;
                if (p > 0 && sc_adsp_tuner_searching(tu))
                        seen[(*seen_n)++] = c;
                c = sc_adsp_tuner_tick(tu, t);
                if (p > 0 && !sc_adsp_tuner_searching(tu) && research_every == 0)
                        break;
        }
        sc_adsp_tuner_destroy(tu);
        return c;
}

/* A larger rate is truly better: the search climbs to c_max, also when the
 * target lies below the curves' asymptote (every candidate's predicted time
 * is infinite; equal rewards used to end the search at c = 1), after a steep
 * first minute (the first candidate's fit used to look best), and with noisy
 * losses. */
static void adsp_tuner_climbs_when_faster_is_better(void **state)
{
        double seen[64];
        double c;
        int n;

        assert_true(run_climb(0.2, 0.3, 0, 0, 0, 20, 0, &n, seen) == 6);
        assert_int_equal(n, 6);
        for (int k = 0; k < n; k++)
                assert_true(seen[k] == k + 1);
        assert_true(run_climb(0.35, 0.3, 1.5, 0, 0, 20, 0, &n, seen) == 6);
        /* With 5% noise on every loss it gets near the top, and it still stops
         * near the best rate when there is one (c = 3). */
        assert_true(run_climb(0.35, 0.3, 1.5, 0.05, 0, 20, 0, &n, seen) >= 5);
        c = run_climb(0.35, 0.3, 1.5, 0.05, 3, 20, 0, &n, seen);
        assert_true(c >= 2 && c <= 4);
        (void)state;
}

/* After a search ends it starts again research_every seconds later, from one
 * step below the rate found. */
static void adsp_tuner_researches_periodically(void **state)
{
        double seen[64];
        int n;

        assert_true(run_climb(0.35, 0.3, 0, 0, 0, 14, 300, &n, seen) == 6);
        /* warm-up, 1..6 (search ends at 420 s), then 5 periods at 6, then
         * 5, 6 again */
        assert_int_equal(n, 8);
        assert_true(seen[5] == 6 && seen[6] == 5 && seen[7] == 6);
        (void)state;
}

/* A period whose losses all fall in its first quarter (Gamma short against
 * the time between batches) has no fitted speed: a tie, the search moves on
 * instead of settling on the rate before. An observation long after the
 * period began (no tick in between) lands in the last bin. */
static void adsp_tuner_sparse_and_late_observations(void **state)
{
        sc_adsp_tuner_spec_t spec = {.gamma = 60,
                                     .c_init = 1,
                                     .c_step = 1,
                                     .c_max = 6,
                                     .target_loss = 0.2,
                                     .rise = 0.3,
                                     .warmup = 60};
        sc_adsp_tuner_t *tu;
        double x = 0.5;
        char err[128];

        assert_int_equal(sc_adsp_tuner_new(&tu, &spec, 0, err, sizeof(err)), SC_OK);
        /* warm-up and the first candidate (c = 1): losses all period long */
        for (int p = 0; p < 2; p++) {
                for (int k = 0; k < 120; k++) {
                        sc_adsp_tuner_observe(tu, 60 * p + 0.5 * k, 1.0 / x + 0.3);
                        x += 0.001;
                }
                assert_true(sc_adsp_tuner_tick(tu, 60.0 * (p + 1)) == p + 1);
        }
        /* c = 2: losses only in its first 10 s */
        for (int k = 0; k < 20; k++) {
                sc_adsp_tuner_observe(tu, 120 + 0.5 * k, 1.0 / x + 0.3);
                x += 0.002;
        }
        assert_true(sc_adsp_tuner_tick(tu, 180) == 3);
        assert_true(sc_adsp_tuner_searching(tu));
        sc_adsp_tuner_destroy(tu);

        spec.gamma = 1e-6;
        spec.warmup = 1e-6;
        assert_int_equal(sc_adsp_tuner_new(&tu, &spec, 0, err, sizeof(err)), SC_OK);
        sc_adsp_tuner_observe(tu, 1e9, 0.5);
        sc_adsp_tuner_observe(tu, 1e300, 0.5);
        assert_true(sc_adsp_tuner_tick(tu, 1e300) >= 1);
        sc_adsp_tuner_destroy(tu);
        (void)state;
}

static void adacomm_tau_follows_the_loss(void **state)
{
        assert_int_equal(sc_sync_adacomm_tau(40, 2.0, 2.0), 40);
        assert_int_equal(sc_sync_adacomm_tau(40, 0.5, 2.0), 20);
        assert_int_equal(sc_sync_adacomm_tau(40, 0.1, 2.3), 9); /* ceil(8.34) */
        assert_int_equal(sc_sync_adacomm_tau(1, 1e-6, 1.0), 1);
        assert_int_equal(sc_sync_adacomm_tau(40, 0, 1.0), 40);
        assert_int_equal(sc_sync_adacomm_tau(40, 1.0, NAN), 40);
        (void)state;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(names_and_spec_checks),
            cmocka_unit_test(ssp_blocking_rules),
            cmocka_unit_test(asp_and_adacomp_wait_only_for_their_own_updates),
            cmocka_unit_test(bsp_waits_for_next_version),
            cmocka_unit_test(scadles_auto_window),
            cmocka_unit_test(t_read_is_the_version_at_compute_start),
            cmocka_unit_test(adsp_commit_interval_and_timing),
            cmocka_unit_test(adacomp_matches_brute_force),
            cmocka_unit_test(adacomp_full_step_when_fresh),
            cmocka_unit_test(adacomp_save_load_continues_identically),
            cmocka_unit_test(lossfit_recovers_known_curve),
            cmocka_unit_test(adsp_tuner_searches_and_researches),
            cmocka_unit_test(adsp_tuner_climbs_when_faster_is_better),
            cmocka_unit_test(adsp_tuner_researches_periodically),
            cmocka_unit_test(adsp_tuner_sparse_and_late_observations),
            cmocka_unit_test(adacomm_tau_follows_the_loss),
        };
        return cmocka_run_group_tests_name("sync", tests, NULL, NULL);
}
