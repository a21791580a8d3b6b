/* test_server.c — the shard server: bsp and scadles against single-worker SGD
 * on the union batch, local-SGD averaging, membership, exactly-once under
 * duplicates and reordering, gap reports, bad updates, and snapshot/restore +
 * replay giving bit-identical parameters for every policy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_crc32c.h"
#include "sc_nn.h"
#include "sc_optim.h"
#include "sc_rng.h"
#include "sc_server.h"
#include "sc_sync.h"

#define D 8 /* linear model parameters */

/* Linear least squares: loss = mean_b 0.5 (w.x_b - y_b)^2; writes the mean
 * gradient (D) over B samples of x (B, D), y (B). */
static void lsq_grad(const float *w, const float *x, const float *y, int B, float *g)
{
        memset(g, 0, D * sizeof(float));
        for (int b = 0; b < B; b++) {
                float r = -y[b];
                for (int i = 0; i < D; i++)
                        r += w[i] * x[b * D + i];
                for (int i = 0; i < D; i++)
                        g[i] += r * x[b * D + i] / (float)B;
        }
}

static void make_data(sc_rng_t *rng, float *x, float *y, int B)
{
        for (int b = 0; b < B; b++) {
                float t = 0;
                for (int i = 0; i < D; i++) {
                        x[b * D + i] = sc_rng_normal(rng);
                        t += (float)(i + 1) * 0.1f * x[b * D + i];
                }
                y[b] = t + 0.01f * sc_rng_normal(rng);
        }
}

static sc_server_t *new_server(sc_sync_kind_t kind, int nw, double lr, double momentum)
{
        sc_server_spec_t spec;
        sc_server_t *srv = NULL;
        char err[256];

        memset(&spec, 0, sizeof(spec));
        sc_sync_spec_defaults(&spec.sync, kind, nw);
        spec.sgd.momentum = momentum;
        spec.sched.kind = SC_SCHED_CONSTANT;
        spec.sched.lr = lr;
        spec.begin = 100;
        spec.end = 100 + D;
        assert_int_equal(sc_server_new(&srv, &spec, NULL, err, sizeof(err)), SC_OK);
        return srv;
}

static sc_update_t dense_update(uint32_t worker, uint64_t seq, uint64_t t_read, uint32_t samples,
                                sc_update_kind_t kind, const float *v)
{
        sc_update_t u = {.worker = worker,
                         .seq = seq,
                         .t_read = t_read,
                         .samples = samples,
                         .kind = kind,
                         .n = D,
                         .values = v};
        return u;
}

/* Runs `rounds` rounds of a round policy with N workers of batch sizes b[i]
 * through the worker state machines, and the same rounds as single-worker
 * SGD on the union batch with lr_ref; returns the max abs difference. */
static float run_vs_union(sc_sync_kind_t kind, int N, const int *b, double lr, double lr_ref,
                          double momentum)
{
        sc_server_t *srv = new_server(kind, N, lr, momentum);
        sc_sync_worker_t *w[8];
        sc_rng_t rng;
        float ref[D] = {0}, vel[D] = {0}, g[D], x[8 * 64 * D], y[8 * 64], maxdiff = 0;
        sc_sync_spec_t sp;
        int total = 0, order[8];

        sc_rng_seed(&rng, 11);
        sc_sync_spec_defaults(&sp, kind, N);
        for (int i = 0; i < N; i++) {
                assert_int_equal(sc_sync_worker_new(&w[i], &sp, (uint32_t)i, NULL, 0), SC_OK);
                total += b[i];
                order[i] = i;
        }
        for (int r = 0; r < 20; r++) {
                float *xp = x, *yp = y;
                make_data(&rng, x, y, total);
                /* Workers in a shuffled order. */
                for (int i = N - 1; i > 0; i--) {
                        int j = (int)sc_rng_below(&rng, (uint32_t)i + 1), t = order[i];
                        order[i] = order[j];
                        order[j] = t;
                }
                int off[8], o = 0;
                for (int i = 0; i < N; i++) {
                        off[i] = o;
                        o += b[i];
                }
                for (int k = 0; k < N; k++) {
                        int i = order[k];
                        sc_sync_act_t act;
                        sc_apply_result_t res;
                        float gi[D];
                        sc_sync_worker_next(w[i], r, &act);
                        assert_int_equal(act.kind, SC_ACT_COMPUTE);
                        lsq_grad(sc_server_params(srv), x + off[i] * D, y + off[i], b[i], gi);
                        sc_sync_worker_computed(w[i], r, b[i]);
                        sc_sync_worker_next(w[i], r, &act);
                        assert_int_equal(act.kind, SC_ACT_SEND);
                        assert_int_equal(act.seq, (uint64_t)r + 1);
                        assert_int_equal(act.t_read, (uint64_t)r);
                        sc_update_t u = dense_update((uint32_t)i, act.seq, act.t_read,
                                                     (uint32_t)b[i], SC_UPDATE_GRAD, gi);
                        assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
                        assert_int_equal(res.status, SC_APPLY_APPLIED);
                        assert_int_equal(res.stepped, k == N - 1);
                        sc_sync_worker_sent(w[i], r);
                        sc_sync_worker_next(w[i], r, &act);
                        assert_int_equal(act.kind, SC_ACT_WAIT);
                        assert_int_equal(act.wait, SC_WAIT_VERSION);
                        assert_int_equal(act.version, (uint64_t)r + 1);
                }
                for (int i = 0; i < N; i++) {
                        sc_sync_model_info_t info;
                        sc_server_model_info(srv, (uint32_t)i, &info);
                        sc_sync_worker_model(w[i], r + 0.5, &info);
                }
                /* Reference: momentum SGD on the union batch. */
                lsq_grad(ref, xp, yp, total, g);
                for (int i = 0; i < D; i++) {
                        vel[i] = (float)momentum * vel[i] + g[i];
                        ref[i] -= (float)lr_ref * vel[i];
                }
        }
        assert_int_equal(sc_server_version(srv), 20);
        for (int i = 0; i < D; i++) {
                float d = fabsf(ref[i] - sc_server_params(srv)[i]);
                maxdiff = d > maxdiff ? d : maxdiff;
                assert_true(fabsf(ref[i]) > 0.01f); /* training moved the weights */
        }
        for (int i = 0; i < N; i++) {
                assert_int_equal(sc_sync_worker_version(w[i]), 20);
                sc_sync_worker_destroy(w[i]);
        }
        sc_server_destroy(srv);
        return maxdiff;
}

static void bsp_equals_union_sgd(void **state)
{
        int b[4] = {16, 16, 16, 16};
        float d = run_vs_union(SC_SYNC_BSP, 4, b, 0.05, 0.05, 0.9);
        assert_true(d < 1e-5f);
}

static void scadles_weighted_equals_union_sgd(void **state)
{
        /* Unequal batches: weights b_i / sum b make sum r_i g_i the union mean;
         * LR is scaled by sum b / B with B = 64 * N. */
        int b[3] = {8, 40, 100};
        float d = run_vs_union(SC_SYNC_SCADLES, 3, b, 0.1, 0.1 * 148.0 / 192.0, 0.0);
        assert_true(d < 1e-5f);
        /* Equal weights (bsp) would not match the union batch here. */
        assert_true(run_vs_union(SC_SYNC_BSP, 3, b, 0.1, 0.1, 0.0) > 1e-4f);
}

/* BSP over 4 workers of a real model (dense-relu-dense, softmax) equals one
 * model trained with SGD + momentum on the union batch. */
static void bsp_nn_equals_union_sgd(void **state)
{
        enum { NW = 4, B = 8, IN = 6, CL = 3 };
        sc_model_spec_t ms = {.input = {IN, 1, 1},
                              .n_layers = 3,
                              .layers = {{.kind = SC_LAYER_DENSE, .units = 10},
                                         {.kind = SC_LAYER_RELU},
                                         {.kind = SC_LAYER_DENSE, .units = CL}},
                              .loss = SC_LOSS_SOFTMAX_XENT};
        sc_model_t *wm, *ref;
        sc_server_spec_t spec;
        sc_server_t *srv;
        sc_sgd_t sgd;
        sc_rng_t rng;
        float x[NW * B * IN];
        int32_t y[NW * B];
        size_t n;

        assert_int_equal(sc_model_new(&wm, &ms, NULL, 0), SC_OK);
        assert_int_equal(sc_model_new(&ref, &ms, NULL, 0), SC_OK);
        sc_rng_seed(&rng, 21);
        sc_model_init(ref, &rng);
        n = sc_model_nparams(ref);
        memset(&spec, 0, sizeof(spec));
        sc_sync_spec_defaults(&spec.sync, SC_SYNC_BSP, NW);
        spec.sgd.momentum = 0.9;
        spec.sched.lr = 0.1;
        spec.begin = 0;
        spec.end = n;
        assert_int_equal(sc_server_new(&srv, &spec, sc_model_params(ref), NULL, 0), SC_OK);
        assert_int_equal(sc_sgd_init(&sgd, &spec.sgd, n), SC_OK);
        for (int r = 0; r < 15; r++) {
                for (int i = 0; i < NW * B; i++) {
                        y[i] = (int32_t)sc_rng_below(&rng, CL);
                        for (int k = 0; k < IN; k++)
                                x[i * IN + k] = sc_rng_normal(&rng) + (k == y[i] ? 2.0f : 0.0f);
                }
                for (int w = 0; w < NW; w++) {
                        sc_apply_result_t res;
                        memcpy(sc_model_params(wm), sc_server_params(srv), n * sizeof(float));
                        sc_model_train_batch(wm, x + w * B * IN, y + w * B, NULL, B, &rng, NULL);
                        sc_update_t u = {.worker = (uint32_t)w,
                                         .seq = (uint64_t)r + 1,
                                         .t_read = (uint64_t)r,
                                         .samples = B,
                                         .kind = SC_UPDATE_GRAD,
                                         .n = n,
                                         .values = sc_model_grads(wm)};
                        assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
                }
                sc_model_train_batch(ref, x, y, NULL, NW * B, &rng, NULL);
                sc_sgd_step(&sgd, sc_model_params(ref), sc_model_grads(ref), 0.1f);
        }
        for (size_t k = 0; k < n; k++)
                assert_true(fabsf(sc_model_params(ref)[k] - sc_server_params(srv)[k]) < 1e-4f);
        sc_sgd_free(&sgd);
        sc_server_destroy(srv);
        sc_model_destroy(wm);
        sc_model_destroy(ref);
}

static void scadles_formulas(void **state)
{
        assert_int_equal(sc_sync_scadles_batch(300.0, 1.0, 8, 1024), 300);
        assert_int_equal(sc_sync_scadles_batch(3.0, 1.0, 8, 1024), 8);
        assert_int_equal(sc_sync_scadles_batch(5000.0, 1.0, 8, 1024), 1024);
        assert_int_equal(sc_sync_scadles_batch(NAN, 1.0, 8, 1024), 8);
        assert_int_equal(sc_sync_scadles_batch(100.0, 0.5, 8, 1024), 50);
        assert_true(fabs(sc_sync_scadles_weight(30, 120) - 0.25) < 1e-12);
        /* eta * sum b / B: 16 devices, B = 1024, sum b = 4608 -> 4.5x */
        assert_true(fabs(sc_sync_scadles_lr(0.1, 4608, 1024, 0) - 0.45) < 1e-12);
        /* capped: a scale of 4.5 held at 2, a scale under the cap kept */
        assert_true(fabs(sc_sync_scadles_lr(0.1, 4608, 1024, 2) - 0.2) < 1e-12);
        assert_true(fabs(sc_sync_scadles_lr(0.1, 512, 1024, 2) - 0.05) < 1e-12);
}

static void localsgd_averages_deltas_and_models(void **state)
{
        for (int models = 0; models <= 1; models++) {
                sc_server_spec_t spec;
                sc_server_t *srv;
                float init[D], v[3][D];
                memset(&spec, 0, sizeof(spec));
                sc_sync_spec_defaults(&spec.sync, SC_SYNC_LOCALSGD, 3);
                spec.sync.send_models = models;
                spec.sync.local_steps = 4;
                spec.begin = 0;
                spec.end = D;
                for (int i = 0; i < D; i++)
                        init[i] = (float)i;
                assert_int_equal(sc_server_new(&srv, &spec, init, NULL, 0), SC_OK);
                for (int k = 0; k < 3; k++)
                        for (int i = 0; i < D; i++)
                                v[k][i] = (models ? init[i] : 0.0f) + (float)(k + 1) * 0.25f;
                for (int k = 0; k < 3; k++) {
                        sc_update_t u =
                            dense_update((uint32_t)k, 1, 0, 10,
                                         models ? SC_UPDATE_MODEL : SC_UPDATE_DELTA, v[k]);
                        sc_apply_result_t res;
                        assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
                        assert_int_equal(res.stepped, k == 2);
                }
                for (int i = 0; i < D; i++)
                        assert_true(fabsf(sc_server_params(srv)[i] - (init[i] + 0.5f)) < 1e-6f);
                /* A gradient is not what local SGD takes. */
                sc_update_t bad = dense_update(0, 2, 1, 10, SC_UPDATE_GRAD, v[0]);
                char err[256];
                assert_int_equal(sc_server_apply(srv, &bad, NULL, err, sizeof(err)), SC_ERR_INVAL);
                assert_non_null(strstr(err, "localsgd"));
                sc_server_destroy(srv);
        }
}

static void localsgd_worker_sends_after_tau(void **state)
{
        sc_sync_spec_t sp;
        sc_sync_worker_t *w;
        sc_sync_act_t act;
        sc_sync_spec_defaults(&sp, SC_SYNC_LOCALSGD, 2);
        sp.local_steps = 5;
        assert_int_equal(sc_sync_worker_new(&w, &sp, 1, NULL, 0), SC_OK);
        for (int s = 0; s < 5; s++) {
                sc_sync_worker_next(w, s, &act);
                assert_int_equal(act.kind, SC_ACT_COMPUTE);
                assert_int_equal(act.local_step, 1);
                sc_sync_worker_computed(w, s + 1, 64);
        }
        sc_sync_worker_next(w, 5, &act);
        assert_int_equal(act.kind, SC_ACT_SEND);
        assert_int_equal(act.update_kind, SC_UPDATE_DELTA);
        sc_sync_worker_sent(w, 5);
        sc_sync_worker_next(w, 5, &act);
        assert_int_equal(act.kind, SC_ACT_WAIT);
        sc_sync_model_info_t info = {.version = 1, .applied_seq = 1};
        sc_sync_worker_model(w, 7, &info);
        sc_sync_worker_next(w, 7, &act);
        assert_int_equal(act.kind, SC_ACT_COMPUTE);
        assert_int_equal(sc_sync_worker_local_steps(w), 0);
        assert_true(fabs(sc_sync_worker_wait_seconds(w) - 2.0) < 1e-12);
        sc_sync_worker_destroy(w);
}

/* Applies worker w's round gradient (seq, t_read) and checks it was applied,
 * late or not, closing the round or not. */
static void apply_applied(sc_server_t *srv, uint32_t w, uint64_t seq, uint64_t t_read, float *g,
                          int late, int stepped)
{
        sc_apply_result_t res;
        sc_update_t u = dense_update(w, seq, t_read, 16, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
        assert_int_equal(res.status, SC_APPLY_APPLIED);
        assert_int_equal(res.late, late);
        assert_int_equal(res.stepped, stepped);
}

static void membership_closes_round(void **state)
{
        sc_server_t *srv = new_server(SC_SYNC_BSP, 3, 0.1, 0);
        float g[D];
        sc_apply_result_t res;
        for (int i = 0; i < D; i++)
                g[i] = 1.0f;
        for (uint32_t k = 0; k < 2; k++) {
                sc_update_t u = dense_update(k, 1, 0, 16, SC_UPDATE_GRAD, g);
                assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
                assert_false(res.stepped);
        }
        assert_int_equal(sc_server_set_live(srv, 2, 0, &res), SC_OK);
        assert_true(res.stepped);
        assert_int_equal(sc_server_version(srv), 1);
        assert_true(fabsf(sc_server_params(srv)[0] + 0.1f) < 1e-7f);
        /* Worker 2's late gradient for round 0 (its rejoin crossed the close)
         * is added to round 1 beside its own update for round 1, which is
         * applied too (not stale), and the round waits for it. */
        float h[D];
        for (int i = 0; i < D; i++)
                h[i] = 5.0f;
        apply_applied(srv, 2, 1, 0, h, 1, 0);
        assert_int_equal(sc_server_applied_seq(srv, 2), 1);
        apply_applied(srv, 0, 2, 1, g, 0, 0);
        apply_applied(srv, 1, 2, 1, g, 0, 0); /* worker 2's turn is still to come */
        apply_applied(srv, 2, 2, 1, g, 0, 1);
        assert_int_equal(sc_server_applied_seq(srv, 2), 2);
        /* the mean over the round's four updates: (1 + 1 + 1 + 5) / 4 = 2 */
        assert_int_equal(sc_server_version(srv), 2);
        assert_true(fabsf(sc_server_params(srv)[0] + 0.1f + 0.2f) < 1e-6f);
        sc_server_stats_t st;
        sc_server_stats(srv, &st);
        assert_int_equal(st.stale, 0);
        /* A second update of one worker in a round is still stale. */
        sc_update_t a = dense_update(0, 3, 2, 16, SC_UPDATE_GRAD, g);
        sc_update_t twice = dense_update(0, 4, 2, 16, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(srv, &a, &res, NULL, 0), SC_OK);
        assert_int_equal(sc_server_apply(srv, &twice, &res, NULL, 0), SC_OK);
        assert_int_equal(res.status, SC_APPLY_STALE);
        /* A future round is a state error. */
        sc_update_t fut = dense_update(0, 2, 5, 16, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(srv, &fut, &res, NULL, 0), SC_ERR_STATE);
        sc_server_destroy(srv);
}

/* A round update more than sync.late_rounds versions behind is consumed as
 * stale, its seq marked: the worker's work is counted, not aggregated. */
/* Rounds always close: an update refused before the server (the caller
 * knows it is the worker's) takes the worker's turn; a round timeout closes
 * a round with the turns it has and names the live workers missing;
 * neither does anything to an asynchronous policy. */
static void refused_turns_and_round_timeout(void **state)
{
        (void)state;
        sc_server_t *srv = new_server(SC_SYNC_BSP, 3, 0.1, 0);
        float g[D];
        uint32_t miss[4];
        int n = -1;
        sc_apply_result_t res;
        for (int i = 0; i < D; i++)
                g[i] = 1.0f;
        /* a round timeout with no turn closes nothing */
        assert_int_equal(sc_server_round_close_now(srv, miss, 4, &n, &res), 0);
        assert_int_equal(n, 0);
        sc_update_t u0 = dense_update(0, 1, 0, 16, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(srv, &u0, &res, NULL, 0), SC_OK);
        assert_int_equal(sc_server_round_turns(srv), 1);
        /* worker 1's update was refused as ahead: its turn; worker 2 missing */
        assert_int_equal(sc_server_refused_turn(srv, 1, &res), 0);
        assert_int_equal(sc_server_round_turns(srv), 2);
        assert_int_equal(sc_server_refused_turn(srv, 1, &res), 0); /* had its turn */
        assert_int_equal(sc_server_refused_turn(srv, 7, &res), 0); /* not a worker */
        assert_int_equal(sc_server_version(srv), 0);
        assert_int_equal(sc_server_round_close_now(srv, miss, 4, &n, &res), 1);
        assert_true(res.stepped);
        assert_int_equal(n, 1);
        assert_int_equal(miss[0], 2);
        assert_int_equal(sc_server_version(srv), 1);
        /* the step is the mean over the one contribution */
        assert_true(fabsf(sc_server_params(srv)[0] + 0.1f) < 1e-7f);
        assert_true(sc_server_live(srv, 2)); /* the next round waits for it again */
        /* a round whose last missing turn is a refusal closes at once */
        sc_update_t a = dense_update(0, 2, 1, 16, SC_UPDATE_GRAD, g);
        sc_update_t b = dense_update(2, 1, 1, 16, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(srv, &a, &res, NULL, 0), SC_OK);
        assert_int_equal(sc_server_apply(srv, &b, &res, NULL, 0), SC_OK);
        assert_false(res.stepped);
        assert_int_equal(sc_server_refused_turn(srv, 1, &res), 1);
        assert_int_equal(sc_server_version(srv), 2);
        sc_server_destroy(srv);

        srv = new_server(SC_SYNC_ASP, 2, 0.1, 0);
        assert_int_equal(sc_server_refused_turn(srv, 0, &res), 0);
        assert_int_equal(sc_server_round_turns(srv), 0);
        assert_int_equal(sc_server_round_close_now(srv, miss, 4, &n, &res), 0);
        assert_int_equal(sc_server_version(srv), 0);
        sc_server_destroy(srv);
}

static void round_update_too_far_behind_is_stale(void **state)
{
        sc_server_spec_t spec;
        sc_server_t *srv = NULL;
        sc_apply_result_t res;
        char err[256];
        float g[D];
        (void)state;
        for (int i = 0; i < D; i++)
                g[i] = 1.0f;
        memset(&spec, 0, sizeof(spec));
        sc_sync_spec_defaults(&spec.sync, SC_SYNC_BSP, 2);
        spec.sync.late_rounds = 1;
        spec.sched.kind = SC_SCHED_CONSTANT;
        spec.sched.lr = 0.1;
        spec.begin = 100;
        spec.end = 100 + D;
        assert_int_equal(sc_server_new(&srv, &spec, NULL, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_server_set_live(srv, 1, 0, &res), SC_OK);
        for (uint64_t v = 0; v < 2; v++) {
                sc_update_t u = dense_update(0, v + 1, v, 16, SC_UPDATE_GRAD, g);
                assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
                assert_true(res.stepped);
        }
        sc_update_t old = dense_update(1, 1, 0, 16, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(srv, &old, &res, NULL, 0), SC_OK);
        assert_int_equal(res.status, SC_APPLY_STALE);
        assert_int_equal(sc_server_applied_seq(srv, 1), 1);
        sc_update_t one = dense_update(1, 2, 1, 16, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(srv, &one, &res, NULL, 0), SC_OK);
        assert_int_equal(res.status, SC_APPLY_APPLIED);
        assert_true(res.late);
        sc_server_stats_t st;
        sc_server_stats(srv, &st);
        assert_int_equal(st.stale, 1);
        assert_int_equal(st.applied, 3);
        sc_server_destroy(srv);
}

static void ssp_clocks_and_model_info(void **state)
{
        sc_server_t *srv = new_server(SC_SYNC_SSP, 3, 0.1, 0);
        float g[D] = {0};
        sc_sync_model_info_t info;
        for (uint64_t s = 1; s <= 3; s++) {
                sc_update_t u = dense_update(0, s, s - 1, 1, SC_UPDATE_GRAD, g);
                assert_int_equal(sc_server_apply(srv, &u, NULL, NULL, 0), SC_OK);
        }
        sc_update_t u = dense_update(1, 1, 0, 1, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(srv, &u, NULL, NULL, 0), SC_OK);
        assert_int_equal(sc_server_min_clock(srv), 0); /* worker 2 sent nothing */
        assert_int_equal(sc_server_set_live(srv, 2, 0, NULL), SC_OK);
        assert_int_equal(sc_server_min_clock(srv), 1);
        sc_server_model_info(srv, 0, &info);
        assert_int_equal(info.version, 4);
        assert_int_equal(info.applied_seq, 3);
        assert_int_equal(info.min_clock, 1);
        /* Worker 2 comes back with an update: live again, slowest again. */
        u = dense_update(2, 1, 4, 1, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(srv, &u, NULL, NULL, 0), SC_OK);
        assert_int_equal(sc_server_min_clock(srv), 1);
        assert_int_equal(sc_server_set_live(srv, 7, 0, NULL), SC_ERR_INVAL);
        sc_server_destroy(srv);
}

static void bad_updates_are_rejected(void **state)
{
        sc_server_t *srv = new_server(SC_SYNC_ASP, 2, 0.1, 0);
        float g[D] = {0};
        uint32_t idx[2] = {1, D};
        char err[256];
        sc_update_t u = dense_update(5, 1, 0, 1, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(srv, &u, NULL, err, sizeof(err)), SC_ERR_INVAL);
        assert_non_null(strstr(err, "unknown worker 5"));
        u = dense_update(0, 0, 0, 1, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(srv, &u, NULL, err, sizeof(err)), SC_ERR_INVAL);
        assert_non_null(strstr(err, "seq 0"));
        u = dense_update(0, 1, 0, 1, SC_UPDATE_GRAD, g);
        u.n = D + 1;
        assert_int_equal(sc_server_apply(srv, &u, NULL, err, sizeof(err)), SC_ERR_INVAL);
        assert_non_null(strstr(err, "length"));
        u.n = D;
        u.indices = idx;
        u.count = 2;
        assert_int_equal(sc_server_apply(srv, &u, NULL, err, sizeof(err)), SC_ERR_INVAL);
        assert_non_null(strstr(err, "out of range"));
        u = dense_update(0, 1, 0, 1, SC_UPDATE_DELTA, g);
        assert_int_equal(sc_server_apply(srv, &u, NULL, err, sizeof(err)), SC_ERR_INVAL);
        /* A non-finite value is refused but consumes its seq (a worker whose
         * training diverged must not leave a hole in its seqs). */
        sc_server_t *nf = new_server(SC_SYNC_ASP, 2, 0.1, 0);
        sc_apply_result_t nres;
        g[3] = NAN;
        u = dense_update(0, 1, 0, 1, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(nf, &u, &nres, err, sizeof(err)), SC_OK);
        assert_int_equal(nres.status, SC_APPLY_REJECTED);
        assert_non_null(strstr(err, "value 3 is not finite"));
        assert_int_equal(sc_server_applied_seq(nf, 0), 1);
        assert_int_equal(sc_server_version(nf), 0);
        sc_server_destroy(nf);
        g[3] = 0;
        sc_server_t *sc = new_server(SC_SYNC_SCADLES, 2, 0.1, 0);
        u = dense_update(0, 1, 0, 0, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(sc, &u, NULL, err, sizeof(err)), SC_ERR_INVAL);
        assert_non_null(strstr(err, "samples"));
        sc_server_destroy(sc);
        /* Nothing was consumed by the rejected updates. */
        assert_int_equal(sc_server_applied_seq(srv, 0), 0);
        assert_int_equal(sc_server_version(srv), 0);
        sc_server_destroy(srv);
        sc_server_spec_t spec;
        memset(&spec, 0, sizeof(spec));
        sc_sync_spec_defaults(&spec.sync, SC_SYNC_ASP, 1);
        spec.begin = spec.end = 4;
        assert_int_equal(sc_server_new(&srv, &spec, NULL, err, sizeof(err)), SC_ERR_INVAL);
        assert_null(srv);
        spec.end = 8;
        spec.sync.n_workers = 0;
        assert_int_equal(sc_server_new(&srv, &spec, NULL, err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "sync.workers"));
}

/* Gradient values that are multiples of 1/8 with lr 1/2 keep every sum
 * exact, so any application order gives the same bits. */
static void exactly_once_under_duplicates_and_reordering(void **state)
{
        enum { NW = 3, PER = 40 };
        float g[NW][PER][D];
        sc_rng_t rng;
        sc_server_t *a = new_server(SC_SYNC_ASP, NW, 0.5, 0),
                    *b = new_server(SC_SYNC_ASP, NW, 0.5, 0);
        sc_update_t stream[NW * PER * 3];
        size_t ns = 0;
        sc_server_stats_t st;

        sc_rng_seed(&rng, 3);
        for (int w = 0; w < NW; w++)
                for (int s = 0; s < PER; s++)
                        for (int i = 0; i < D; i++)
                                g[w][s][i] = (float)((int)sc_rng_below(&rng, 17) - 8) / 8.0f;
        /* a: in order, once. */
        for (int s = 0; s < PER; s++)
                for (int w = 0; w < NW; w++) {
                        sc_update_t u = dense_update((uint32_t)w, (uint64_t)s + 1, 0, 1,
                                                     SC_UPDATE_GRAD, g[w][s]);
                        assert_int_equal(sc_server_apply(a, &u, NULL, NULL, 0), SC_OK);
                }
        /* b: each update 1-3 times, shuffled within windows of 12. */
        for (int s = 0; s < PER; s++)
                for (int w = 0; w < NW; w++) {
                        int copies = 1 + (int)sc_rng_below(&rng, 3);
                        for (int c = 0; c < copies; c++)
                                stream[ns++] = dense_update((uint32_t)w, (uint64_t)s + 1, 0, 1,
                                                            SC_UPDATE_GRAD, g[w][s]);
                }
        for (size_t base = 0; base < ns; base += 12) {
                size_t m = ns - base < 12 ? ns - base : 12;
                for (size_t i = m - 1; i > 0; i--) {
                        size_t j = sc_rng_below(&rng, (uint32_t)i + 1);
                        sc_update_t t = stream[base + i];
                        stream[base + i] = stream[base + j];
                        stream[base + j] = t;
                }
        }
        uint64_t dups = 0, gaps = 0;
        for (size_t k = 0; k < ns; k++) {
                sc_apply_result_t res;
                assert_int_equal(sc_server_apply(b, &stream[k], &res, NULL, 0), SC_OK);
                dups += res.status == SC_APPLY_DUPLICATE;
                gaps += res.gap > 0;
                assert_int_equal(res.lost, 0);
        }
        assert_int_equal(dups, ns - NW * PER);
        assert_true(gaps > 0);
        assert_memory_equal(sc_server_params(a), sc_server_params(b), D * sizeof(float));
        assert_int_equal(sc_server_version(b), NW * PER);
        sc_server_stats(b, &st);
        assert_int_equal(st.applied, NW * PER);
        assert_int_equal(st.duplicates, dups);
        for (uint32_t w = 0; w < NW; w++)
                assert_int_equal(sc_server_applied_seq(b, w), PER);
        sc_server_destroy(a);
        sc_server_destroy(b);
}

static void gaps_and_lost_seqs_are_reported(void **state)
{
        sc_server_t *srv = new_server(SC_SYNC_ASP, 1, 0.1, 0);
        float g[D] = {0};
        sc_apply_result_t res;
        sc_update_t u = dense_update(0, 1, 0, 1, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
        u.seq = 4;
        assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
        assert_int_equal(res.gap, 2);
        assert_int_equal(sc_server_applied_seq(srv, 0), 1);
        u.seq = 2;
        assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
        assert_int_equal(res.status, SC_APPLY_APPLIED);
        assert_int_equal(res.gap, 0);
        u.seq = 3;
        assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
        assert_int_equal(sc_server_applied_seq(srv, 0), 4);
        /* 96 ahead: the window slides and 5..36 are given up as lost. */
        u.seq = 100;
        assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
        assert_int_equal(res.lost, 32);
        u.seq = 6;
        assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
        assert_int_equal(res.status, SC_APPLY_DUPLICATE);
        u.seq = 50;
        assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
        assert_int_equal(res.status, SC_APPLY_APPLIED);
        /* A wildly far seq costs constant time: everything below is lost. */
        uint64_t before = sc_server_applied_seq(srv, 0);
        u.seq = (uint64_t)1 << 62;
        assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
        assert_int_equal(res.status, SC_APPLY_APPLIED);
        assert_true(res.gap > ((uint64_t)1 << 61));
        assert_true(res.lost > ((uint64_t)1 << 61));
        /* The 63 seqs just below stay acceptable; older ones were given up. */
        assert_int_equal(sc_server_applied_seq(srv, 0), ((uint64_t)1 << 62) - 64);
        assert_true(before < 100);
        u.seq = ((uint64_t)1 << 62) - 5;
        assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
        assert_int_equal(res.status, SC_APPLY_APPLIED);
        u.seq = ((uint64_t)1 << 62) - 100;
        assert_int_equal(sc_server_apply(srv, &u, &res, NULL, 0), SC_OK);
        assert_int_equal(res.status, SC_APPLY_DUPLICATE);
        sc_server_destroy(srv);
}

/* ---- snapshot / restore / replay ------------------------------------------ */

enum { SN_NW = 3, SN_MAX = 400 };

typedef struct sn_stream {
        sc_update_t u[SN_MAX];
        float vals[SN_MAX][D];
        uint32_t idx[SN_MAX][D];
        size_t n;
} sn_stream_t;

/* A valid stream for kind: rounds for round policies, random workers and
 * staleness for the asynchronous ones; half of the updates sparse. */
static void sn_make(sn_stream_t *s, sc_sync_kind_t kind, sc_rng_t *rng)
{
        int round = sc_sync_is_round_based(kind);
        sc_update_kind_t uk = sc_sync_sends_gradients(kind) ? SC_UPDATE_GRAD : SC_UPDATE_DELTA;
        uint64_t seq[SN_NW] = {0};
        s->n = 0;
        for (size_t k = 0; k < 120; k++) {
                sc_update_t *u = &s->u[s->n];
                uint32_t w = round ? (uint32_t)(k % SN_NW) : sc_rng_below(rng, SN_NW);
                uint64_t t = round ? k / SN_NW : k;
                memset(u, 0, sizeof(*u));
                u->worker = w;
                u->seq = ++seq[w];
                u->t_read =
                    round ? t : t - (t > 0 ? sc_rng_below(rng, (uint32_t)(t < 6 ? t + 1 : 6)) : 0);
                u->samples = 4 + sc_rng_below(rng, 60);
                u->kind = uk;
                u->n = D;
                for (int i = 0; i < D; i++)
                        s->vals[s->n][i] = sc_rng_normal(rng);
                u->values = s->vals[s->n];
                if (sc_rng_below(rng, 2)) {
                        uint32_t perm[D];
                        for (uint32_t i = 0; i < D; i++)
                                perm[i] = i;
                        sc_rng_shuffle_u32(rng, perm, D);
                        u->count = 1 + sc_rng_below(rng, D - 1);
                        memcpy(s->idx[s->n], perm, u->count * sizeof(uint32_t));
                        u->indices = s->idx[s->n];
                }
                s->n++;
        }
}

static sc_server_t *sn_server(sc_sync_kind_t kind)
{
        sc_server_spec_t spec;
        sc_server_t *srv;
        memset(&spec, 0, sizeof(spec));
        sc_sync_spec_defaults(&spec.sync, kind, SN_NW);
        spec.sync.ada_window = 5;
        spec.sync.adsp_mu = kind == SC_SYNC_ADSP ? 0.5 : 0;
        spec.sgd.momentum = 0.9;
        spec.sgd.weight_decay = 1e-3;
        spec.sched.kind = SC_SCHED_MULTISTEP;
        spec.sched.lr = 0.05;
        spec.sched.gamma = 0.5;
        spec.sched.n_milestones = 1;
        spec.sched.milestones[0] = 20;
        spec.shard = 2;
        spec.begin = 16;
        spec.end = 16 + D;
        assert_int_equal(sc_server_new(&srv, &spec, NULL, NULL, 0), SC_OK);
        return srv;
}

static void snapshot_restore_replay_is_bit_identical(void **state)
{
        static sn_stream_t s;
        sc_rng_t rng;
        sc_rng_seed(&rng, 77);
        for (int kind = 0; kind < SC_SYNC__END; kind++) {
                if (kind == SC_SYNC_LOCALSGD)
                        continue; /* same server path as bsp (round of deltas) */
                sn_make(&s, (sc_sync_kind_t)kind, &rng);
                for (size_t cut = 1; cut < s.n; cut += 17) {
                        sc_server_t *a = sn_server((sc_sync_kind_t)kind),
                                    *b = sn_server((sc_sync_kind_t)kind), *c;
                        uint8_t *snap;
                        size_t len;
                        sc_server_stats_t sa, sb;
                        char err[256];
                        for (size_t k = 0; k < s.n; k++)
                                assert_int_equal(
                                    sc_server_apply(a, &s.u[k], NULL, err, sizeof(err)), SC_OK);
                        for (size_t k = 0; k < cut; k++)
                                assert_int_equal(sc_server_apply(b, &s.u[k], NULL, NULL, 0), SC_OK);
                        assert_int_equal(sc_server_snapshot(b, &snap, &len), SC_OK);
                        /* b keeps running (the old owner) and is discarded. */
                        sc_server_apply(b, &s.u[cut], NULL, NULL, 0);
                        sc_server_destroy(b);
                        c = sn_server((sc_sync_kind_t)kind);
                        assert_int_equal(sc_server_restore(c, snap, len, err, sizeof(err)), SC_OK);
                        /* Replay from before the cut: the overlap are duplicates. */
                        size_t from = cut > 10 ? cut - 10 : 0;
                        for (size_t k = from; k < s.n; k++) {
                                sc_apply_result_t res;
                                assert_int_equal(sc_server_apply(c, &s.u[k], &res, NULL, 0), SC_OK);
                                assert_int_equal(res.status == SC_APPLY_DUPLICATE, k < cut);
                                if (k % 7 == 0) { /* a redelivered message */
                                        assert_int_equal(sc_server_apply(c, &s.u[k], &res, NULL, 0),
                                                         SC_OK);
                                        assert_int_equal(res.status, SC_APPLY_DUPLICATE);
                                }
                        }
                        assert_memory_equal(sc_server_params(a), sc_server_params(c),
                                            D * sizeof(float));
                        assert_int_equal(sc_server_version(a), sc_server_version(c));
                        sc_server_stats(a, &sa);
                        sc_server_stats(c, &sb);
                        assert_int_equal(sa.applied, sb.applied);
                        assert_int_equal(sa.applied, s.n);
                        /* Corruption, truncation and a mismatched server are refused. */
                        snap[len / 2] ^= 0x40;
                        assert_int_equal(sc_server_restore(c, snap, len, err, sizeof(err)),
                                         SC_ERR_CORRUPT);
                        snap[len / 2] ^= 0x40;
                        assert_int_equal(sc_server_restore(c, snap, len - 3, err, sizeof(err)),
                                         SC_ERR_CORRUPT);
                        sc_server_t *other = new_server(
                            kind == SC_SYNC_ASP ? SC_SYNC_SSP : SC_SYNC_ASP, SN_NW, 0.1, 0);
                        assert_int_equal(sc_server_restore(other, snap, len, err, sizeof(err)),
                                         SC_ERR_INVAL);
                        sc_server_destroy(other);
                        free(snap);
                        sc_server_destroy(a);
                        sc_server_destroy(c);
                }
        }
}

/* A snapshot with a valid CRC but impossible round state is refused. */
static void restore_checks_round_state(void **state)
{
        sc_server_t *srv = new_server(SC_SYNC_BSP, 3, 0.1, 0.9);
        float g[D] = {1, 2, 3};
        uint8_t *snap;
        size_t len;
        char err[256];
        sc_update_t u = dense_update(1, 1, 0, 8, SC_UPDATE_GRAD, g);
        assert_int_equal(sc_server_apply(srv, &u, NULL, NULL, 0), SC_OK);
        assert_int_equal(sc_server_snapshot(srv, &snap, &len), SC_OK);
        /* worker 0's "got" byte: after the 104-byte header, live then got */
        snap[105] = 1;
        uint32_t crc = sc_crc32c(0, snap, len - 4);
        for (int i = 0; i < 4; i++)
                snap[len - 4 + i] = (uint8_t)(crc >> (8 * i));
        sc_server_t *b = new_server(SC_SYNC_BSP, 3, 0.1, 0.9);
        assert_int_equal(sc_server_restore(b, snap, len, err, sizeof(err)), SC_ERR_CORRUPT);
        assert_non_null(strstr(err, "round state"));
        snap[105] = 0;
        crc = sc_crc32c(0, snap, len - 4);
        for (int i = 0; i < 4; i++)
                snap[len - 4 + i] = (uint8_t)(crc >> (8 * i));
        assert_int_equal(sc_server_restore(b, snap, len, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_server_applied_seq(b, 1), 1);
        free(snap);
        sc_server_destroy(b);
        sc_server_destroy(srv);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(bsp_equals_union_sgd),
            cmocka_unit_test(scadles_weighted_equals_union_sgd),
            cmocka_unit_test(bsp_nn_equals_union_sgd),
            cmocka_unit_test(scadles_formulas),
            cmocka_unit_test(localsgd_averages_deltas_and_models),
            cmocka_unit_test(localsgd_worker_sends_after_tau),
            cmocka_unit_test(membership_closes_round),
            cmocka_unit_test(round_update_too_far_behind_is_stale),
            cmocka_unit_test(refused_turns_and_round_timeout),
            cmocka_unit_test(ssp_clocks_and_model_info),
            cmocka_unit_test(bad_updates_are_rejected),
            cmocka_unit_test(exactly_once_under_duplicates_and_reordering),
            cmocka_unit_test(gaps_and_lost_seqs_are_reported),
            cmocka_unit_test(snapshot_restore_replay_is_bit_identical),
            cmocka_unit_test(restore_checks_round_state),
        };
        return cmocka_run_group_tests_name("server", tests, NULL, NULL);
}
