/* test_sim.c — the simulator: event order, link timing, stream buffer
 * policies (persistence grows linearly, truncation stays bounded), config
 * errors naming the JSON path, and whole runs: every policy trains, the same
 * seed gives byte-identical metrics, a different seed does not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_file.h"
#include "sc_sim.h"
#include "sim_impl.h"

static void free_any(int type, void *ptr)
{
        (void)type;
        free(ptr);
}

static void queue_orders_by_time_then_insertion(void **state)
{
        sc_sim_queue_t q = {0};
        sc_sim_event_t ev;
        double ts[] = {3.0, 1.0, 2.0, 1.0, 0.5, 2.0, 1.0};
        int last_dev = -1;
        double last_t = -1;
        for (int i = 0; i < 7; i++)
                assert_int_equal(sc_sim_queue_push(&q, ts[i], 0, i, NULL), SC_OK);
        for (int i = 0; i < 7; i++) {
                assert_true(sc_sim_queue_pop(&q, &ev));
                assert_true(ev.t >= last_t);
                if (ev.t == last_t)
                        assert_true(ev.dev > last_dev); /* FIFO among equal times */
                last_t = ev.t;
                last_dev = ev.dev;
        }
        assert_false(sc_sim_queue_pop(&q, &ev));
        sc_sim_queue_push(&q, 1.0, 0, 0, malloc(8)); /* freed by the queue */
        sc_sim_queue_free(&q, free_any);
}

static void link_serializes_and_adds_latency(void **state)
{
        sc_sim_link_t l = {.bps = 1000, .latency = 0.1};
        assert_true(fabs(sc_sim_link_send(&l, 0, 500) - 0.6) < 1e-12);
        /* Sent at 0.2 while the link is busy until 0.5: done at 1.5, +0.1. */
        assert_true(fabs(sc_sim_link_send(&l, 0.2, 1000) - 1.6) < 1e-12);
        /* Idle link later. */
        assert_true(fabs(sc_sim_link_send(&l, 10, 100) - 10.2) < 1e-12);
        assert_int_equal(l.bytes, 1600);
}

static void stream_buffer_policies(void **state)
{
        uint32_t pool[3] = {7, 8, 9}, idx[64];
        sc_rng_t rng;
        sc_sim_stream_t p = {.rate = 100, .pool = pool, .pool_n = 3};
        sc_sim_stream_t tr = {
            .rate = 100, .truncation = 1, .window = 1.0, .pool = pool, .pool_n = 3};
        sc_rng_seed(&rng, 1);
        /* 100 samples/s in, 40 trained per 1 s iteration. Persistence: the
         * backlog grows linearly, Q(T) = (t S - b) T = 60 T. Truncation keeps
         * one window (100) and drops the rest. */
        for (int it = 1; it <= 50; it++) {
                sc_sim_stream_advance(&p, 1.0 * it);
                sc_sim_stream_advance(&tr, 1.0 * it);
                assert_true(tr.buffered <= 100);
                sc_sim_stream_take(&p, &rng, 40, idx);
                sc_sim_stream_take(&tr, &rng, 40, idx);
                assert_int_equal(p.buffered, (uint64_t)(60 * it));
                assert_int_equal(tr.buffered, 60);
        }
        assert_int_equal(p.dropped, 0);
        assert_int_equal(p.arrived, 5000);
        assert_int_equal(tr.arrived, 5000);
        assert_int_equal(tr.dropped, 60 * 49);
        assert_int_equal(tr.arrived - tr.dropped - 40 * 50, tr.buffered);
        assert_int_equal(tr.peak, 100);
        assert_int_equal(p.peak, 3000 + 40);
        for (int k = 0; k < 40; k++)
                assert_true(idx[k] >= 7 && idx[k] <= 9);
        /* Waiting for data: 30 more samples at 100/s from t = 50 -> 50.3. */
        sc_sim_stream_t w = {.rate = 100, .pool = pool, .pool_n = 3};
        sc_sim_stream_advance(&w, 50);
        w.buffered = 0;
        double at = sc_sim_stream_ready_at(&w, 50, 30);
        assert_true(fabs(at - 50.3) < 1e-6);
        sc_sim_stream_advance(&w, at);
        assert_int_equal(w.buffered, 30);
        assert_true(sc_sim_stream_ready_at(&w, 51, 30) == 51);
}

static const char *base_conf =
    "{\"model\": {\"input\": [16], \"layers\": [{\"type\": \"dense\", \"units\": 16},"
    " {\"type\": \"relu\"}, {\"type\": \"dense\", \"units\": 4}], \"loss\": \"softmax_xent\"},"
    " \"optim\": {\"lr\": 0.05, \"momentum\": 0.5}, \"train\": {\"seed\": 5},"
    " \"data\": {\"source\": \"synthetic\", \"synthetic\": {\"train\": 800, \"test\": 200,"
    " \"classes\": 4, \"noise\": 0.8}}}";

/* Runs a simulation of the configuration conf_json with the "sim" object
 * sim_json; returns the metrics text (caller frees) and the final test
 * accuracy. */
static char *run_sim_conf(const char *conf_json, const char *sim_json, double *acc)
{
        sc_conf_t conf;
        sc_sim_spec_t spec;
        sc_dataset_t train = {0}, test = {0};
        sc_synth_spec_t ss = {.shape = {16, 1, 1}, .n_classes = 4, .noise = 0.8f, .proto_seed = 5};
        sc_rng_t rng;
        sc_sim_t *sim;
        json_t *j;
        char err[512], *text = NULL;
        size_t len = 0;
        FILE *out;

        assert_int_equal(sc_conf_parse(&conf, conf_json, "test", err, sizeof(err)), SC_OK);
        assert_non_null(j = json_loads(sim_json, 0, NULL));
        assert_int_equal(sc_sim_spec_parse(&spec, j, "test", err, sizeof(err)), SC_OK);
        json_decref(j);
        sc_rng_seed(&rng, 1);
        ss.n = 800;
        assert_int_equal(sc_synth_make(&train, &ss, &rng, err, sizeof(err)), SC_OK);
        ss.n = 200;
        assert_int_equal(sc_synth_make(&test, &ss, &rng, err, sizeof(err)), SC_OK);
        assert_int_equal(sc_sim_new(&sim, &spec, &conf, &train, &test, err, sizeof(err)), SC_OK);
        assert_non_null(out = open_memstream(&text, &len));
        assert_int_equal(sc_sim_run(sim, out, err, sizeof(err)), SC_OK);
        fclose(out);
        const char *end = strstr(text, "{\"event\":\"end\"");
        assert_non_null(end);
        const char *a = strstr(end, "\"test_acc\":");
        assert_non_null(a);
        *acc = atof(a + 11);
        sc_sim_destroy(sim);
        sc_dataset_free(&train);
        sc_dataset_free(&test);
        sc_conf_free(&conf);
        return text;
}

static char *run_sim(const char *sim_json, double *acc)
{
        return run_sim_conf(base_conf, sim_json, acc);
}

static const char *bn_conf =
    "{\"model\": {\"input\": [16], \"layers\": [{\"type\": \"dense\", \"units\": 16},"
    " {\"type\": \"batchnorm\"}, {\"type\": \"relu\"}, {\"type\": \"dense\", \"units\": 4}],"
    " \"loss\": \"softmax_xent\"},"
    " \"optim\": {\"lr\": 0.05, \"momentum\": 0.5}, \"train\": {\"seed\": 5},"
    " \"data\": {\"source\": \"synthetic\", \"synthetic\": {\"train\": 800, \"test\": 200,"
    " \"classes\": 4, \"noise\": 0.8}}}";

/* A model with batchnorm: each device keeps its own running statistics and
 * evaluation uses device 0's. On IID devices BSP trains as without it; with
 * one label per device, device 0's statistics are those of label 0 alone and
 * each device's batch statistics remove its label's mean, so the model
 * evaluates far worse. */
static void batchnorm_statistics_per_device(void **state)
{
        double iid, iid2, noniid, plain;
        const char *s_iid = "{\"devices\": 4, \"policy\": \"bsp\", \"batch\": 16, \"max_time\": 8}";
        const char *s_non = "{\"devices\": 4, \"policy\": \"bsp\", \"batch\": 16, \"max_time\": 8,"
                            " \"labels_per_device\": 1}";
        char *a = run_sim_conf(bn_conf, s_iid, &iid), *b = run_sim_conf(bn_conf, s_iid, &iid2);
        assert_string_equal(a, b);
        char *c = run_sim_conf(bn_conf, s_non, &noniid), *d = run_sim(s_non, &plain);
        fprintf(stderr, "batchnorm: IID %.3f, one label per device %.3f (without batchnorm %.3f)\n",
                iid, noniid, plain);
        assert_true(iid >= 0.6);
        assert_true(noniid < iid - 0.2);
        assert_true(noniid < plain - 0.2);
        free(a);
        free(b);
        free(c);
        free(d);
}

static void every_policy_trains_deterministically(void **state)
{
        static const char *const sims[] = {
            "{\"devices\": 3, \"policy\": \"bsp\", \"batch\": 16, \"max_time\": 8}",
            "{\"devices\": 3, \"policy\": \"scadles\", \"rates\": [20, 40, 80], \"b_min\": 8,"
            " \"buffer\": \"truncation\", \"codec\": \"adaptive\", \"codec_vote\": true,"
            " \"max_time\": 8}",
            "{\"devices\": 3, \"policy\": \"scadles\", \"rates\": [20, 40, 80], \"scadles_drain\": "
            "true,"
            " \"max_time\": 8}",
            "{\"devices\": 3, \"policy\": \"asp\", \"batch\": 16, \"heterogeneity\": 3,"
            " \"max_time\": 8}",
            "{\"devices\": 3, \"policy\": \"ssp\", \"staleness\": 2, \"batch\": 16,"
            " \"heterogeneity\": 3, \"max_time\": 8}",
            "{\"devices\": 3, \"policy\": \"adacomp\", \"codec\": \"adacomp\","
            " \"codec_ratio\": 0.05, \"batch\": 10, \"max_time\": 8}",
            "{\"devices\": 3, \"policy\": \"adsp\", \"batch\": 16, \"gamma\": 2,"
            " \"commit_min\": 0.2, \"tune\": true, \"heterogeneity\": 2, \"max_time\": 8}",
            "{\"devices\": 3, \"policy\": \"localsgd\", \"local_steps\": 4, \"batch\": 16,"
            " \"labels_per_device\": 2, \"inject_alpha\": 0.5, \"inject_beta\": 0.5,"
            " \"max_time\": 8}",
            "{\"devices\": 3, \"policy\": \"localsgd\", \"local_steps\": 4, \"batch\": 16,"
            " \"labels_per_device\": 2, \"inject_alpha\": 0.5, \"inject_beta\": 0.5,"
            " \"inject_draw\": \"pooled\", \"max_time\": 8}",
        };
        for (size_t k = 0; k < sizeof(sims) / sizeof(sims[0]); k++) {
                double acc1, acc2;
                char *a = run_sim(sims[k], &acc1), *b = run_sim(sims[k], &acc2);
                assert_string_equal(a, b);
                if (acc1 < 0.6)
                        fprintf(stderr, "policy %zu: accuracy %.3f\n%s", k, acc1, a);
                assert_true(acc1 >= 0.6); /* 4 classes: chance is 0.25 */
                assert_null(strstr(a, "\"stalled\":true"));
                free(a);
                free(b);
        }
        /* Another seed, other bytes. */
        double acc;
        char *a = run_sim("{\"devices\": 2, \"max_time\": 3}", &acc);
        char *b = run_sim("{\"devices\": 2, \"max_time\": 3, \"seed\": 99}", &acc);
        assert_true(strcmp(a, b) != 0);
        free(a);
        free(b);
}

static void end_field(const char *line, const char *key, char *buf, size_t size);

/* Truncation on a stream slower than b_min: one window (1 sample) is less than
 * the batch the device waits for; the buffer keeps one batch instead of
 * dropping it forever (the run used to stall with no step at all). */
static void truncation_keeps_one_batch(void **state)
{
        uint32_t pool[3] = {7, 8, 9};
        sc_sim_stream_t s = {
            .rate = 1, .truncation = 1, .window = 1.0, .min_keep = 8, .pool = pool, .pool_n = 3};
        sc_sim_stream_advance(&s, 20);
        assert_int_equal(s.buffered, 8);
        assert_int_equal(s.dropped, 12);
        assert_true(sc_sim_stream_ready_at(&s, 20, 8) == 20);

        char f[64], g[64];
        double acc;
        char *out = run_sim("{\"devices\": 3, \"policy\": \"scadles\", \"rates\": [1, 40, 60],"
                            " \"b_min\": 8, \"buffer\": \"truncation\", \"eval_every\": 5,"
                            " \"max_time\": 40}",
                            &acc);
        const char *end = strstr(out, "{\"event\":\"end\"");
        assert_null(strstr(end, "\"stalled\":true"));
        end_field(end, "step", f, sizeof(f));
        assert_true(atol(f) >= 4); /* a round per 8 s of the slowest stream */
        end_field(end, "dropped", g, sizeof(g));
        assert_true(atol(g) > 0);
        free(out);
        (void)state;
}

/* The auto window B / sum_j S_j: with rates 20, 40, 60 and B = 64 * 3 it is
 * 1.6 s and every round trains on 32 + 64 + 96 = 192 samples; the fixed 1-s
 * window trains on 120. When device 2 leaves the sum is 60 and the window
 * 3.2 s (64 + 128 per round). */
static void auto_window_sets_the_global_batch(void **state)
{
        static const struct {
                const char *window, *churn, *end_window;
                long per_round;
        } cases[] = {
            {"\"auto\"", "[]", "1.6000", 192},
            {"1", "[]", "1.0000", 120},
            {"\"auto\"", "[[2, 0.5, null]]", "3.2000", 192},
        };
        for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
                char json[512], f[64], n[64];
                double acc;
                snprintf(json, sizeof(json),
                         "{\"devices\": 3, \"policy\": \"scadles\", \"rates\": [20, 40, 60],"
                         " \"window\": %s, \"churn\": %s, \"max_steps\": 6,"
                         " \"max_time\": 1000, \"eval_every\": 100}",
                         cases[k].window, cases[k].churn);
                char *out = run_sim(json, &acc);
                const char *end = strstr(out, "{\"event\":\"end\"");
                assert_null(strstr(end, "\"stalled\":true"));
                end_field(end, "window", f, sizeof(f));
                assert_string_equal(f, cases[k].end_window);
                end_field(end, "step", n, sizeof(n));
                assert_string_equal(n, "6");
                end_field(end, "samples", n, sizeof(n));
                if (atol(n) != 6 * cases[k].per_round)
                        fprintf(stderr, "case %zu: %s samples in 6 rounds\n", k, n);
                assert_int_equal(atol(n), 6 * cases[k].per_round);
                free(out);
        }
        (void)state;
}

/* Devices leaving and rejoining: rounds close without them (no stall), the
 * live count follows, and a returning device catches up from the model. */
static void churn_keeps_training(void **state)
{
        static const char *const pols[] = {"bsp", "ssp", "localsgd", "adsp", "asp"};
        for (size_t k = 0; k < sizeof(pols) / sizeof(pols[0]); k++) {
                char json[512], f[64];
                double acc;
                snprintf(json, sizeof(json),
                         "{\"devices\": 4, \"policy\": \"%s\", \"batch\": 16, \"staleness\": 1,"
                         " \"local_steps\": 3, \"gamma\": 1, \"commit_min\": 0.2,"
                         " \"heterogeneity\": 3, \"eval_every\": 1, \"max_time\": 12,"
                         " \"churn\": [[1, 2.0, 6.0], [3, 3.0, null]]}",
                         pols[k]);
                char *out = run_sim(json, &acc);
                const char *end = strstr(out, "{\"event\":\"end\"");
                assert_null(strstr(end, "\"stalled\":true"));
                end_field(end, "live", f, sizeof(f));
                assert_string_equal(f, "3");
                /* The metrics line at t = 4 has 2 live devices. */
                const char *l4 = strstr(out, "{\"t\":4.000000");
                assert_non_null(l4);
                end_field(l4, "live", f, sizeof(f));
                assert_string_equal(f, "2");
                /* Training went on after the departures. */
                char s4[32], s12[32];
                end_field(l4, "step", s4, sizeof(s4));
                end_field(end, "step", s12, sizeof(s12));
                if (!(atol(s12) > atol(s4)))
                        fprintf(stderr, "%s: step %s at t=4, %s at the end\n", pols[k], s4, s12);
                assert_true(atol(s12) > atol(s4));
                free(out);
        }
}

/* Copies the text of "key":value from a metrics line into buf. */
static void end_field(const char *line, const char *key, char *buf, size_t size)
{
        char pat[64];
        const char *p;
        size_t k = 0;
        snprintf(pat, sizeof(pat), "\"%s\":", key);
        assert_non_null(p = strstr(line, pat));
        p += strlen(pat);
        while (p[k] && p[k] != ',' && p[k] != '}' && k + 1 < size) {
                buf[k] = p[k];
                k++;
        }
        buf[k] = 0;
}

/* Local steps with momentum: one device doing local SGD with tau = 1 commits
 * every step, so its trajectory is the server optimizer's (BSP, lr 0.05,
 * momentum 0.5 in base_conf) up to float rounding of the deltas; without
 * local momentum it is not. */
static void local_momentum_matches_server_momentum(void **state)
{
        double a_bsp, a_mom, a_plain;
        char lb[64], lm[64], lp[64];
        char *bsp = run_sim("{\"devices\": 1, \"batch\": 16, \"max_steps\": 40,"
                            " \"max_time\": 1000}",
                            &a_bsp);
        char *mom = run_sim("{\"devices\": 1, \"policy\": \"localsgd\", \"local_steps\": 1,"
                            " \"local_lr\": 0.05, \"local_momentum\": 0.5, \"batch\": 16,"
                            " \"max_steps\": 40, \"max_time\": 1000}",
                            &a_mom);
        char *plain = run_sim("{\"devices\": 1, \"policy\": \"localsgd\", \"local_steps\": 1,"
                              " \"local_lr\": 0.05, \"batch\": 16, \"max_steps\": 40,"
                              " \"max_time\": 1000}",
                              &a_plain);
        end_field(strstr(bsp, "{\"event\":\"end\""), "test_loss", lb, sizeof(lb));
        end_field(strstr(mom, "{\"event\":\"end\""), "test_loss", lm, sizeof(lm));
        end_field(strstr(plain, "{\"event\":\"end\""), "test_loss", lp, sizeof(lp));
        assert_non_null(strstr(mom, "\"step\":40,"));
        assert_true(fabs(atof(lb) - atof(lm)) < 1e-4);
        assert_true(fabs(atof(lb) - atof(lp)) > 1e-3);
        free(bsp);
        free(mom);
        free(plain);
        (void)state;
}

/* ADACOMM: as the training loss falls, tau = ceil(sqrt(F / F0) tau0) falls
 * below tau0, so the devices average more often than with a fixed tau0. */
static void adacomm_shrinks_tau_as_the_loss_falls(void **state)
{
        double a_fixed, a_ada, a2;
        char tau[32], s_fixed[32], s_ada[32];
        const char *ada_json = "{\"devices\": 3, \"policy\": \"localsgd\", \"local_steps\": 8,"
                               " \"batch\": 16, \"adacomm_interval\": 2, \"max_time\": 30}";
        char *fixed = run_sim("{\"devices\": 3, \"policy\": \"localsgd\", \"local_steps\": 8,"
                              " \"batch\": 16, \"max_time\": 30}",
                              &a_fixed);
        char *ada = run_sim(ada_json, &a_ada), *again = run_sim(ada_json, &a2);
        assert_string_equal(ada, again);
        assert_null(strstr(fixed, "\"local_steps\""));
        end_field(strstr(ada, "{\"event\":\"end\""), "local_steps", tau, sizeof(tau));
        end_field(strstr(ada, "{\"event\":\"end\""), "step", s_ada, sizeof(s_ada));
        end_field(strstr(fixed, "{\"event\":\"end\""), "step", s_fixed, sizeof(s_fixed));
        assert_true(atoi(tau) >= 1 && atoi(tau) < 8);
        assert_true(atoi(s_ada) > atoi(s_fixed));
        assert_true(a_ada >= 0.6);
        free(fixed);
        free(ada);
        free(again);
        (void)state;
}

/* Sharding splits the flat model across servers; for bsp the math is the
 * same per coordinate, so the model after N steps matches one shard's. */
static void shards_match_one_server(void **state)
{
        double a1, a3;
        char *one =
            run_sim("{\"devices\": 3, \"batch\": 16, \"max_steps\": 12, \"max_time\": 1000}", &a1);
        char *three = run_sim("{\"devices\": 3, \"shards\": 3, \"batch\": 16, \"max_steps\": 12,"
                              " \"max_time\": 1000}",
                              &a3);
        const char *e1 = strstr(one, "{\"event\":\"end\""),
                   *e3 = strstr(three, "{\"event\":\"end\"");
        assert_non_null(strstr(e1, "\"step\":12,"));
        assert_non_null(strstr(e3, "\"step\":12,"));
        assert_non_null(strstr(e3, "\"shards\":3"));
        char f1[64], f3[64];
        end_field(e1, "test_loss", f1, sizeof(f1));
        end_field(e3, "test_loss", f3, sizeof(f3));
        assert_string_equal(f1, f3);
        assert_true(a1 == a3);
        free(one);
        free(three);
        /* Asynchronous policies run sharded too (per-shard staleness). */
        char *as = run_sim("{\"devices\": 3, \"shards\": 2, \"policy\": \"adacomp\", \"codec\":"
                           " \"adacomp\", \"codec_ratio\": 0.05, \"batch\": 10, \"max_time\": 8}",
                           &a1);
        assert_true(a1 >= 0.6);
        free(as);
}

static void config_errors_name_the_path(void **state)
{
        static const struct {
                const char *json, *want;
        } cases[] = {
            {"{\"devices\": 0}", "$.sim.devices"},
            {"{\"policy\": \"bsb\"}", "$.sim.policy"},
            {"{\"polcy\": \"bsp\"}", "$.sim.polcy: unknown property"},
            {"{\"rates\": \"S3\"}", "$.sim.rates"},
            {"{\"rates\": [10, -1]}", "$.sim.rates[1]"},
            {"{\"buffer\": \"keep\"}", "$.sim.buffer"},
            {"{\"batch\": 1.5}", "$.sim.batch: expected integer"},
            {"{\"tune\": 1}", "$.sim.tune"},
            {"{\"codec\": \"zip\"}", "$.sim.codec"},
            {"{\"inject_alpha\": 2}", "$.sim.inject_alpha"},
            {"{\"inject_draw\": \"uniform\"}", "$.sim.inject_draw: expected"},
            {"{\"b_min\": 50, \"b_max\": 10}", "$.sim"},
            {"{\"window\": \"soon\"}", "$.sim.window: expected seconds (a number) or \"auto\""},
            {"{\"window\": 0}", "$.sim.window: 0 is out of range"},
            {"[]", "$.sim: expected object"},
            {"{\"up_bps\": 1000, \"up_bps_max\": 10}",
             "$.sim.up_bps_max: 10 is below $.sim.up_bps"},
            {"{\"latency\": 0.5, \"latency_max\": 0.1}", "$.sim.latency_max"},
            {"{\"apply_rate\": -1}", "$.sim.apply_rate"},
        };
        for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
                sc_sim_spec_t spec;
                char err[512];
                json_t *j = json_loads(cases[k].json, JSON_DECODE_ANY, NULL);
                assert_non_null(j);
                assert_int_equal(sc_sim_spec_parse(&spec, j, "cfg.json", err, sizeof(err)),
                                 SC_ERR_CONFIG);
                if (!strstr(err, cases[k].want))
                        fprintf(stderr, "case %zu: %s\n", k, err);
                assert_non_null(strstr(err, cases[k].want));
                assert_non_null(strstr(err, "cfg.json"));
                json_decref(j);
        }
}

/* The sim section is rows of the one property table, read only for the
 * simulator: every other command's parser and overrides report $.sim as an
 * unknown property (and do not offer it); the simulator's configuration
 * takes overrides of sim.* and dumps the section, special values included,
 * so that it parses back to the same dump. */
static void sim_section_only_for_the_simulator(void **state)
{
        const char *text = "{\"sim\": {\"devices\": 3, \"rates\": [10, 20.5], "
                           "\"window\": \"auto\", \"buffer\": \"truncation\", "
                           "\"inject_draw\": \"pooled\", \"churn\": [[1, 2, null], [2, 1, 4]], "
                           "\"policy\": \"scadles\", \"codec\": \"topk\", \"seed\": 9}}";
        sc_conf_t *conf = malloc(sizeof(*conf)), *back = malloc(sizeof(*back));
        char err[1024], *dump, *dump2;

        assert_non_null(conf);
        assert_non_null(back);
        assert_int_equal(sc_conf_parse(conf, text, "w.json", err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "w.json: $.sim: unknown property (known here: model,"));
        assert_null(strstr(err, "sim,"));
        assert_null(strstr(err, ", sim"));
        assert_int_equal(sc_conf_set(conf, "sim.devices=2", err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "$.sim: unknown property"));
        assert_null(strstr(dump = sc_conf_dump(conf), "\"sim\""));
        free(dump);

        assert_int_equal(sc_conf_parse_sim(conf, text, "s.json", err, sizeof(err)), SC_OK);
        assert_int_equal(conf->sim.devices, 3);
        assert_int_equal(conf->sim.sync.n_workers, 3);
        assert_int_equal(conf->sim.rates, SC_SIM_RATES_LIST);
        assert_int_equal(conf->sim.n_rates, 2);
        assert_true(conf->sim.rate_list[1] == 20.5);
        assert_true(conf->sim.sync.window_auto);
        assert_int_equal(conf->sim.truncation, 1);
        assert_int_equal(conf->sim.inject_draw, 1);
        assert_int_equal(conf->sim.n_churn, 2);
        assert_true(conf->sim.churn[0].rejoin_at == -1);
        assert_int_equal(conf->sim.sync.kind, SC_SYNC_SCADLES);
        assert_int_equal(conf->sim.codec, SC_CODEC_TOPK);
        assert_int_equal(conf->sim.seed, 9);

        assert_int_equal(sc_conf_set(conf, "sim.devices=0", err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "override: $.sim.devices: expected integer in [1, 1024]"));
        assert_int_equal(sc_conf_set(conf, "sim.devices=2", err, sizeof(err)), SC_ERR_CONFIG);
        assert_non_null(strstr(err, "$.sim.churn[1]: device 2 of 2"));
        assert_int_equal(conf->sim.devices, 3);
        assert_int_equal(sc_conf_set(conf, "sim.rates=S10", err, sizeof(err)), SC_OK);
        assert_int_equal(conf->sim.rates, SC_SIM_RATES_S10);

        assert_non_null(dump = sc_conf_dump(conf));
        assert_non_null(strstr(dump, "\"rates\": \"S10\""));
        assert_non_null(strstr(dump, "\"window\": \"auto\""));
        assert_int_equal(sc_conf_parse_sim(back, dump, "dump", err, sizeof(err)), SC_OK);
        assert_non_null(dump2 = sc_conf_dump(back));
        assert_string_equal(dump, dump2);
        free(dump);
        free(dump2);
        sc_conf_free(conf);
        sc_conf_free(back);
        free(conf);
        free(back);
}

/* tests/data/sim/invalid/<case>/{input.json,error}: loading fails with a
 * configuration error whose message contains the expected text. */
static void invalid_config_files(void **state)
{
        const char *root = "tests/data/sim/invalid";
        DIR *dir = opendir(root);
        struct dirent *de;
        int cases = 0;

        assert_non_null(dir);
        while ((de = readdir(dir))) {
                char path[512], want[512], err[1024];
                sc_conf_t conf;
                FILE *f;
                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/%s/error", root, de->d_name);
                assert_non_null(f = fopen(path, "r"));
                assert_non_null(fgets(want, sizeof(want), f));
                fclose(f);
                want[strcspn(want, "\n")] = 0;
                snprintf(path, sizeof(path), "%s/%s/input.json", root, de->d_name);
                sc_err_t e = sc_conf_load_sim(&conf, path, err, sizeof(err));
                if (e != SC_ERR_CONFIG || !strstr(err, want) || !strstr(err, "input.json"))
                        fprintf(stderr, "case %s: got %d '%s', want '%s'\n", de->d_name, (int)e,
                                err, want);
                assert_int_equal(e, SC_ERR_CONFIG);
                assert_non_null(strstr(err, want));
                assert_non_null(strstr(err, "input.json"));
                sc_conf_free(&conf);
                cases++;
        }
        closedir(dir);
        assert_true(cases >= 10);
}

/* Edge links: a device's bandwidths are drawn log-uniformly within their
 * range (fixed without one), its latency uniformly; the server's ingress
 * link, its apply rate and the devices' encoders each cost time, so the same
 * virtual time holds fewer steps, and the end line counts the server's
 * queueing. */
static void edge_links_and_server_costs(void **state)
{
        sc_sim_spec_t spec;
        sc_rng_t rng;
        sc_sim_link_t up, down;
        char err[256];
        assert_int_equal(sc_sim_spec_parse(&spec, NULL, "defaults", err, sizeof(err)), SC_OK);
        sc_rng_seed(&rng, 7);
        sc_sim_links_draw(&spec, &rng, &up, &down);
        assert_true(up.bps == spec.up_bps && down.bps == spec.down_bps);
        assert_true(up.latency == spec.latency);
        spec.up_bps = 1000;
        spec.up_bps_max = 16000;
        spec.down_bps = 2000;
        spec.down_bps_max = 4000;
        spec.latency = 0.01;
        spec.latency_max = 0.05;
        int below = 0;
        for (int i = 0; i < 2000; i++) {
                sc_sim_links_draw(&spec, &rng, &up, &down);
                assert_true(up.bps >= 1000 && up.bps <= 16000);
                assert_true(down.bps >= 2000 && down.bps <= 4000);
                assert_true(up.latency >= 0.01 && up.latency <= 0.05);
                assert_true(up.latency == down.latency);
                below += up.bps < 4000; /* log-uniform: half below the geometric mean */
        }
        assert_true(below > 900 && below < 1100);

        static const char *const runs[] = {
            "{\"devices\": 3, \"policy\": \"asp\", \"batch\": 16, \"max_time\": 8}",
            "{\"devices\": 3, \"policy\": \"asp\", \"batch\": 16, \"max_time\": 8,"
            " \"server_ingress_bps\": 2000}",
            "{\"devices\": 3, \"policy\": \"asp\", \"batch\": 16, \"max_time\": 8,"
            " \"apply_rate\": 2000}",
            "{\"devices\": 3, \"policy\": \"asp\", \"batch\": 16, \"max_time\": 8,"
            " \"encode_rate\": 200}",
            "{\"devices\": 3, \"policy\": \"asp\", \"batch\": 16, \"max_time\": 8,"
            " \"up_bps\": 500, \"up_bps_max\": 5000}",
        };
        char f[64];
        long steps0 = 0;
        for (size_t k = 0; k < sizeof(runs) / sizeof(runs[0]); k++) {
                double acc;
                char *out = run_sim(runs[k], &acc), *again = run_sim(runs[k], &acc);
                assert_string_equal(out, again);
                const char *end = strstr(out, "{\"event\":\"end\"");
                assert_non_null(end);
                end_field(end, "step", f, sizeof(f));
                if (k == 0) {
                        steps0 = atol(f);
                        assert_null(strstr(end, "server_wait_s"));
                } else {
                        if (atol(f) >= steps0)
                                fprintf(stderr, "run %zu: %s steps, %ld without\n", k, f, steps0);
                        assert_true(atol(f) < steps0);
                }
                if (k == 1 || k == 2) {
                        end_field(end, "server_wait_s", f, sizeof(f));
                        assert_true(atof(f) > 0);
                }
                free(out);
                free(again);
        }
        (void)state;
}

/* async_pull (the AdaComp paper's worker loop): a device computes its next
 * batch only on the server's reply to its last update, so an update is at
 * most devices - 1 versions stale; without it the device computes while its
 * update is on the uplink and the staleness is higher. Sharded runs wait for
 * every shard's reply and still train. */
static void async_pull_lowers_staleness(void **state)
{
        static const char *const pols[] = {"asp", "adacomp"};
        for (size_t k = 0; k < 2; k++) {
                for (int shards = 1; shards <= 2; shards++) {
                        char json[512], on[64], off[64];
                        double acc_on, acc_off, acc2;
                        const char *fmt =
                            "{\"devices\": 4, \"shards\": %d, \"policy\": \"%s\", \"codec\": "
                            "\"%s\","
                            " \"codec_ratio\": 0.05, \"batch\": 10, \"rates\": 1000, \"latency\": "
                            "0.05,"
                            " \"max_time\": 20, \"async_pull\": %s}";
                        snprintf(json, sizeof(json), fmt, shards, pols[k], k ? "adacomp" : "none",
                                 "true");
                        char *a = run_sim(json, &acc_on), *b = run_sim(json, &acc2);
                        assert_string_equal(a, b); /* deterministic */
                        snprintf(json, sizeof(json), fmt, shards, pols[k], k ? "adacomp" : "none",
                                 "false");
                        char *c = run_sim(json, &acc_off);
                        const char *ea = strstr(a, "{\"event\":\"end\""),
                                   *ec = strstr(c, "{\"event\":\"end\"");
                        assert_null(strstr(ea, "\"stalled\":true"));
                        end_field(ea, "staleness", on, sizeof(on));
                        end_field(ec, "staleness", off, sizeof(off));
                        if (!(atof(on) <= 3.0 && atof(on) < atof(off)))
                                fprintf(stderr,
                                        "%s, %d shards: staleness %s with pull, %s without\n",
                                        pols[k], shards, on, off);
                        assert_true(atof(on) <= 3.0 && atof(on) < atof(off));
                        assert_true(acc_on >= 0.6);
                        free(a);
                        free(b);
                        free(c);
                }
        }
        (void)state;
}

/* S1 (uniform, 38 +- 41.6) reaches below min_rate: such draws are redrawn,
 * so no stream sits exactly at min_rate and the density just above it is
 * the uniform's (about 1 in 83 per sample/s), not a point mass. */
static void rates_below_min_are_redrawn(void **state)
{
        sc_sim_spec_t spec;
        sc_rng_t rng;
        int at_min = 0, near_min = 0, n = 20000;
        char err[256];
        (void)state;
        assert_int_equal(sc_sim_spec_parse(&spec, NULL, "defaults", err, sizeof(err)), SC_OK);
        spec.rates = SC_SIM_RATES_S1;
        sc_rng_seed(&rng, 7);
        for (int i = 0; i < n; i++) {
                double r = sc_sim_draw_rate(&spec, i, &rng);
                assert_true(r >= spec.min_rate);
                at_min += r == spec.min_rate;
                near_min += r < spec.min_rate + 1;
        }
        assert_int_equal(at_min, 0);
        /* uniform on [1, 79.6]: 1 sample/s holds n / 78.6 = 254 draws */
        assert_in_range(near_min, 180, 340);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(queue_orders_by_time_then_insertion),
            cmocka_unit_test(link_serializes_and_adds_latency),
            cmocka_unit_test(stream_buffer_policies),
            cmocka_unit_test(config_errors_name_the_path),
            cmocka_unit_test(invalid_config_files),
            cmocka_unit_test(sim_section_only_for_the_simulator),
            cmocka_unit_test(auto_window_sets_the_global_batch),
            cmocka_unit_test(every_policy_trains_deterministically),
            cmocka_unit_test(shards_match_one_server),
            cmocka_unit_test(local_momentum_matches_server_momentum),
            cmocka_unit_test(adacomm_shrinks_tau_as_the_loss_falls),
            cmocka_unit_test(churn_keeps_training),
            cmocka_unit_test(truncation_keeps_one_batch),
            cmocka_unit_test(async_pull_lowers_staleness),
            cmocka_unit_test(edge_links_and_server_costs),
            cmocka_unit_test(batchnorm_statistics_per_device),
            cmocka_unit_test(rates_below_min_are_redrawn),
        };
        return cmocka_run_group_tests_name("sim", tests, NULL, NULL);
}
