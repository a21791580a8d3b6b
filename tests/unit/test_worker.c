/* test_worker.c — the worker runtime fed by pushed records (no broker):
 * training, malformed records, offsets committable only for finished
 * records, stop conditions and the summary's accounting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "sc_conf.h"
#include "sc_decode.h"
#include "sc_worker.h"

static const char conf_text[] =
    "{\"model\": {\"input\": [1, 4, 4], \"layers\": [{\"type\": \"flatten\"},"
    " {\"type\": \"dense\", \"units\": 3}]},"
    " \"optim\": {\"lr\": 0.1}, \"train\": {\"seed\": 5},"
    " \"source\": {\"topics\": [{\"topic\": \"t\"}]},"
    " \"streams\": {\"format\": \"raw\", \"label\": \"key\", \"scale\": 0.0039, \"cap\": 64},"
    " \"worker\": {\"batch\": \"fixed\", \"b\": 8, \"shuffle\": 0, \"eval\": false,"
    "  \"progress_interval\": 0, \"max_samples\": 32}}";

typedef struct {
        int calls;
        int64_t next[4];
} commits_t;

static void on_commit(void *opaque, const char *topic, int32_t partition, int64_t next)
{
        commits_t *c = opaque;
        assert_string_equal(topic, "t");
        assert_true(partition >= 0 && partition < 4);
        assert_true(next > c->next[partition]);
        c->next[partition] = next;
        c->calls++;
}

/* The worker's last line about a malformed record. */
static char malformed_line[1024];

static void on_log(void *opaque, int level, const char *line)
{
        (void)opaque;
        (void)level;
        if (strstr(line, "malformed record"))
                snprintf(malformed_line, sizeof(malformed_line), "%s", line);
}

/* A push-mode worker on conf_text, with one "path=value" override if set is
 * not NULL. */
static sc_worker_t *new_worker(sc_conf_t *conf, const char *set)
{
        char err[512];
        sc_worker_spec_t spec;
        sc_worker_t *w = NULL;
        memset(conf, 0, sizeof(*conf));
        assert_int_equal(sc_conf_parse(conf, conf_text, "test", err, sizeof(err)), SC_OK);
        if (set)
                assert_int_equal(sc_conf_set(conf, set, err, sizeof(err)), SC_OK);
        sc_worker_spec_defaults(&spec);
        spec.conf = conf;
        spec.input = SC_WORKER_INPUT_PUSH;
        spec.log = on_log;
        assert_int_equal(sc_worker_new(&w, &spec, err, sizeof(err)), SC_OK);
        return w;
}

/* The worker's summary, parsed, with its accounting identity checked. Caller
 * decrefs. */
static json_t *stats_of(sc_worker_t *w)
{
        char *text = sc_worker_stats_json(w);
        assert_non_null(text);
        json_t *j = json_loads(text, 0, NULL);
        free(text);
        assert_non_null(j);
        assert_true(json_is_true(json_object_get(j, "identity_ok")));
        return j;
}

static void push_trains_and_commits(void **state)
{
        (void)state;
        sc_conf_t conf;
        sc_worker_t *w = new_worker(&conf, NULL);
        char err[512], key[4];
        uint8_t px[16];
        commits_t c = {0};
        for (int i = 0; i < 40; i++) {
                for (int k = 0; k < 16; k++)
                        px[k] = (uint8_t)(i * 7 + k);
                snprintf(key, sizeof(key), "%d", i % 3);
                size_t len = i == 5 ? 3 : sizeof(px); /* one malformed record */
                assert_int_equal(sc_worker_push(w, "t", i % 2, i / 2, key, strlen(key), px, len,
                                                NULL, 0, 0, err, sizeof(err)),
                                 SC_OK);
        }
        assert_int_equal(sc_worker_paused(w, "t"), 0);
        assert_int_equal(sc_worker_paused(w, "nope"), -1);
        /* An offset that does not increase is refused. */
        assert_int_equal(
            sc_worker_push(w, "t", 0, 3, "1", 1, px, sizeof(px), NULL, 0, 0, err, sizeof(err)),
            SC_ERR_STATE);
        double t = 1.0, t_first = -1, t_last = -1; /* the polls that took steps */
        uint64_t steps = 0;
        for (int i = 0; i < 100 && !sc_worker_done(w, NULL); i++, t += 0.01) {
                assert_int_equal(sc_worker_poll(w, t, 0, err, sizeof(err)), SC_OK);
                sc_worker_counters_t now;
                sc_worker_counters(w, &now);
                if (now.steps > steps) {
                        t_first = t_first < 0 ? t : t_first;
                        t_last = t;
                        steps = now.steps;
                }
        }
        const char *reason;
        assert_true(sc_worker_done(w, &reason));
        assert_string_equal(reason, "max-samples");
        sc_worker_counters_t cnt;
        sc_worker_counters(w, &cnt);
        assert_int_equal(cnt.samples, 32);
        assert_int_equal(cnt.steps, 4);
        sc_worker_commits(w, on_commit, &c);
        assert_true(c.calls > 0);
        /* 32 trained + 1 rejected of 40: commits never pass an unfinished one. */
        assert_true(c.next[0] + c.next[1] <= 33);
        assert_int_equal(sc_worker_finish(w, 100, err, sizeof(err)), SC_OK);
        json_t *j = stats_of(w);
        assert_int_equal(json_integer_value(json_object_get(j, "consumed")), 40);
        assert_int_equal(json_integer_value(json_object_get(j, "trained")), 32);
        assert_int_equal(json_integer_value(json_object_get(j, "rejected")), 1);
        assert_int_equal(json_integer_value(json_object_get(j, "samples")), 32);
        /* From the first step to the last, on the caller's clock. */
        assert_true(t_first > 0 && t_last > t_first);
        assert_true(fabs(json_real_value(json_object_get(j, "train_span_s")) - (t_last - t_first)) <
                    1e-9);
        /* The rows the stream's buffer holds: whole rows of 16 floats, and
         * the summary's total is the one stream's. */
        json_t *st = json_array_get(json_object_get(j, "streams"), 0);
        assert_non_null(st);
        json_int_t rb = json_integer_value(json_object_get(st, "row_bytes"));
        assert_true(rb > 0 && rb % (16 * sizeof(float)) == 0);
        assert_int_equal(json_integer_value(json_object_get(j, "row_bytes")), rb);
        assert_true(json_is_integer(json_object_get(st, "chunks_freed")));
        json_decref(j);
        sc_worker_destroy(w);
        sc_conf_free(&conf);
}

/* A record with more than SC_DECODE_MAX_HEADERS headers is rejected like
 * any malformed one (counted per kind, logged with topic, partition and
 * offset, its offset finished), not trained on a part of its headers. */
static void too_many_headers_are_rejected(void **state)
{
        (void)state;
        sc_conf_t conf;
        sc_worker_t *w = new_worker(&conf, NULL);
        char err[512];
        uint8_t px[16] = {0};
        sc_worker_header_t h[100];
        const size_t counts[3] = {SC_DECODE_MAX_HEADERS, SC_DECODE_MAX_HEADERS + 1, 100};
        commits_t c = {0};

        for (int i = 0; i < 100; i++)
                h[i] = (sc_worker_header_t){"h", "v", 1};
        malformed_line[0] = 0;
        for (int i = 0; i < 3; i++)
                assert_int_equal(sc_worker_push(w, "t", 0, i, "1", 1, px, sizeof(px), h, counts[i],
                                                0, err, sizeof(err)),
                                 SC_OK);
        assert_non_null(
            strstr(malformed_line, "t [0] offset 1: malformed record (too_many_headers)"));
        assert_non_null(strstr(malformed_line, "more than 64"));
        sc_worker_commits(w, on_commit, &c);
        assert_int_equal(c.next[0], 0); /* offset 0 is buffered, not trained yet */
        json_t *j = stats_of(w);
        assert_int_equal(json_integer_value(json_object_get(j, "consumed")), 3);
        assert_int_equal(json_integer_value(json_object_get(j, "rejected")), 2);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(j, "faults"), "too_many_headers")),
            2);
        json_decref(j);
        sc_worker_destroy(w);
        sc_conf_free(&conf);
}

/* Features of 1e30 make the logits overflow within a few steps: the worker stops
 * with SC_ERR_DIVERGED and a message naming the step, not an I/O error. */
static void divergence_is_reported_as_such(void **state)
{
        (void)state;
        sc_conf_t conf;
        sc_worker_t *w = new_worker(&conf, "streams.scale=1e30");
        char err[512] = "";
        uint8_t px[16];
        sc_err_t rc = SC_OK;

        for (int i = 0; i < 32; i++) {
                memset(px, 100 + i, sizeof(px));
                assert_int_equal(sc_worker_push(w, "t", 0, i, i % 2 ? "1" : "2", 1, px, sizeof(px),
                                                NULL, 0, 0, err, sizeof(err)),
                                 SC_OK);
        }
        double t = 1.0;
        for (int i = 0; i < 100 && rc == SC_OK && !sc_worker_done(w, NULL); i++, t += 0.01)
                rc = sc_worker_poll(w, t, 0, err, sizeof(err));
        assert_int_equal(rc, SC_ERR_DIVERGED);
        assert_non_null(strstr(err, "loss diverged at step "));
        assert_string_equal(sc_err2str(SC_ERR_DIVERGED), "training diverged (non-finite loss)");
        sc_worker_destroy(w);
        sc_conf_free(&conf);
}

static void bad_spec_is_a_config_error(void **state)
{
        (void)state;
        char err[512];
        sc_conf_t conf;
        sc_worker_spec_t spec;
        sc_worker_t *w = NULL;
        memset(&conf, 0, sizeof(conf));
        assert_int_equal(sc_conf_parse(&conf, conf_text, "test", err, sizeof(err)), SC_OK);
        sc_worker_spec_defaults(&spec);
        spec.conf = &conf;
        spec.input = SC_WORKER_INPUT_PUSH;
        spec.distributed = 1;
        spec.worker_id = 9; /* job.workers defaults to 4 */
        assert_int_equal(sc_worker_new(&w, &spec, err, sizeof(err)), SC_ERR_CONFIG);
        assert_null(w);
        assert_non_null(strstr(err, "worker id 9"));
        spec.distributed = 0;
        spec.inject_alpha = 2;
        assert_int_equal(sc_worker_new(&w, &spec, err, sizeof(err)), SC_ERR_CONFIG);
        sc_worker_destroy(NULL);
        sc_conf_free(&conf);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(push_trains_and_commits),
            cmocka_unit_test(too_many_headers_are_rejected),
            cmocka_unit_test(divergence_is_reported_as_such),
            cmocka_unit_test(bad_spec_is_a_config_error),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
