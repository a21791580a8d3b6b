/* test_worker_drift.c — drift detection in the worker (drift.*): a pushed
 * stream of a learnable task whose label mapping changes mid-way. The
 * detector stays silent on the stationary part, fires within a bounded
 * number of samples after the change, and drift.action boost brings the
 * prequential accuracy back to its level before the change sooner than no
 * action (both figures printed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sc_conf.h"
#include "sc_rng.h"
#include "sc_worker.h"

#define C 4        /* classes */
#define D 16       /* features (bytes of a raw record) */
#define N1 6000    /* samples before the change */
#define N2 9000    /* after it */
#define B 16       /* batch */
#define WINDOW 400 /* eval.window: the recent accuracy */
/* Largest detection delay accepted, in samples after the change: the
 * error rises from ~0.05 to ~1 (every label moved), which the defaults
 * detect after about threshold / (rise - delta) ~ 35 samples; the bound
 * leaves room for the batch granularity and for an error that rises less
 * abruptly while the model starts to adapt. */
#define MAX_DELAY 200

static const char conf_text[] =
    "{\"model\": {\"input\": [1, 1, 16], \"layers\": [{\"type\": \"flatten\"},"
    " {\"type\": \"dense\", \"units\": 4}]},"
    " \"optim\": {\"lr\": 0.01, \"momentum\": 0.9}, \"train\": {\"seed\": 7},"
    " \"source\": {\"topics\": [{\"topic\": \"t\"}]},"
    " \"streams\": {\"format\": \"raw\", \"label\": \"key\", \"scale\": 0.00392156862745098,"
    "  \"cap\": 256},"
    " \"eval\": {\"window\": 400},"
    " \"worker\": {\"batch\": \"fixed\", \"b\": 16, \"shuffle\": 0, \"eval\": false,"
    "  \"progress_interval\": 0}}";

typedef struct {
        uint64_t false_alarms; /* drift events before the change */
        uint64_t delay;        /* samples after the change to the first event */
        uint64_t recovery;     /* samples after the change until the recent accuracy is back
                                  within 0.02 of its level at the change */
        double level;          /* recent accuracy at the change */
        uint64_t events;
} run_t;

/* One run with drift.action = action over the same stream (seeded). */
static void run(const char *action, run_t *r)
{
        char err[512], set[64], key[4];
        sc_conf_t conf;
        sc_worker_spec_t spec;
        sc_worker_t *w = NULL;
        memset(&conf, 0, sizeof(conf));
        memset(r, 0, sizeof(*r));
        assert_int_equal(sc_conf_parse(&conf, conf_text, "test", err, sizeof(err)), SC_OK);
        snprintf(set, sizeof(set), "drift.action=\"%s\"", action);
        assert_int_equal(sc_conf_set(&conf, set, err, sizeof(err)), SC_OK);
        sc_worker_spec_defaults(&spec);
        spec.conf = &conf;
        spec.input = SC_WORKER_INPUT_PUSH;
        assert_int_equal(sc_worker_new(&w, &spec, err, sizeof(err)), SC_OK);

        sc_rng_t rng;
        sc_rng_seed(&rng, 11);
        uint8_t proto[C][D], px[D];
        for (int c = 0; c < C; c++)
                for (int k = 0; k < D; k++)
                        proto[c][k] = (uint8_t)(sc_rng_u64(&rng) % 256);
        double t = 1.0;
        sc_worker_clock(w, t);
        int recovered = 0;
        for (int64_t i = 0; i < N1 + N2; i++) {
                int c = (int)(sc_rng_u64(&rng) % C);
                for (int k = 0; k < D; k++) {
                        int v = proto[c][k] + (int)(sc_rng_u64(&rng) % 321) - 160;
                        px[k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
                int label = i < N1 ? c : (c + 1) % C; /* the mapping changes */
                snprintf(key, sizeof(key), "%d", label);
                assert_int_equal(sc_worker_push(w, "t", 0, i, key, strlen(key), px, sizeof(px),
                                                NULL, 0, 0, err, sizeof(err)),
                                 SC_OK);
                if ((i + 1) % B)
                        continue;
                sc_worker_counters_t cnt;
                do {
                        t += 0.001;
                        assert_int_equal(sc_worker_poll(w, t, 0, err, sizeof(err)), SC_OK);
                        sc_worker_counters(w, &cnt);
                } while (cnt.samples < (uint64_t)(i + 1));
                if (cnt.preq_samples == N1) {
                        r->false_alarms = cnt.drift_events;
                        r->level = cnt.preq_window_acc;
                }
                if (cnt.preq_samples > N1 && !r->delay && cnt.drift_events > r->false_alarms)
                        r->delay = cnt.drift_last - N1;
                /* Back once a window of samples after the change scores as
                 * well as the window before it. */
                if (cnt.preq_samples >= N1 + WINDOW && !recovered &&
                    cnt.preq_window_acc >= r->level - 0.02) {
                        recovered = 1;
                        r->recovery = cnt.preq_samples - N1;
                }
                r->events = cnt.drift_events;
        }
        if (!recovered)
                r->recovery = UINT64_MAX;
        sc_worker_destroy(w);
        sc_conf_free(&conf);
}

static void label_change_is_detected_and_boost_recovers_sooner(void **state)
{
        (void)state;
        run_t none, boost, reset;
        run("none", &none);
        run("boost", &boost);
        run("reset", &reset);
        const run_t *rs[] = {&none, &boost, &reset};
        const char *names[] = {"none", "boost", "reset"};
        for (int k = 0; k < 3; k++)
                printf("drift: action %-5s: accuracy before the change %.4f, false alarms %" PRIu64
                       ", detected %" PRIu64
                       " samples after the change, back within 0.02 after %" PRIu64
                       " samples, events %" PRIu64 "\n",
                       names[k], rs[k]->level, rs[k]->false_alarms, rs[k]->delay, rs[k]->recovery,
                       rs[k]->events);
        for (int k = 0; k < 3; k++) {
                assert_true(rs[k]->level > 0.9); /* the task was learnt before the change */
                assert_int_equal(rs[k]->false_alarms, 0);
                assert_true(rs[k]->delay > 0 && rs[k]->delay <= MAX_DELAY);
                assert_true(rs[k]->recovery < N2);
        }
        assert_true(boost.recovery < none.recovery);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(label_change_is_detected_and_boost_recovers_sooner),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
