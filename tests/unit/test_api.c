/* test_api.c — the public C API (scadles.h): configuration, push queue and
 * its full policies, poll and background training, flush, finish, stats,
 * callbacks, misuse (NULL handles, bad JSON, calls after finish), and
 * scadles_predict (the trained model, malformed records, concurrent use
 * with the training thread). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "scadles.h"

/* A 2x2 "image" per record, label in the key: class 0 bright on the left,
 * class 1 bright on the right. No held-out set. */
static const char *const job_json =
    "{\"model\": {\"input\": [1, 2, 2], \"layers\": [{\"type\": \"flatten\"},"
    " {\"type\": \"dense\", \"units\": 2}]},"
    " \"optim\": {\"lr\": 0.1},"
    " \"streams\": {\"format\": \"raw\", \"label\": \"key\", \"scale\": 0.0039},"
    " \"worker\": {\"batch\": \"fixed\", \"b\": 8, \"shuffle\": 0, \"eval\": false,"
    "  \"progress_interval\": 0}}";

typedef struct cb_log {
        int lines, stats, finals;
        char last_stats[4096];
} cb_log_t;

static void on_log(const scadles_worker_t *w, int level, const char *line, void *opaque)
{
        cb_log_t *l = opaque;
        l->lines++;
}

static void on_stats(scadles_worker_t *w, const char *json, void *opaque)
{
        cb_log_t *l = opaque;
        l->stats++;
        if (strstr(json, "\"final\":true"))
                l->finals++;
        snprintf(l->last_stats, sizeof(l->last_stats), "%s", json);
}

static scadles_conf_t *job_conf(void)
{
        char err[512];
        scadles_conf_t *c = scadles_conf_new();
        assert_non_null(c);
        assert_int_equal(scadles_conf_set_json(c, job_json, "test", err, sizeof(err)), SCADLES_OK);
        assert_int_equal(scadles_conf_set(c, "eval", "false", err, sizeof(err)), SCADLES_OK);
        return c;
}

static scadles_worker_t *job_worker(scadles_conf_t *c)
{
        char err[512];
        scadles_worker_t *w = scadles_worker_new(c, err, sizeof(err));
        if (!w)
                fail_msg("scadles_worker_new: %s", err);
        return w;
}

/* Pushes n records of topic t from offset off; returns how many were OK. */
static int push_n(scadles_worker_t *w, const char *t, int partition, int64_t off, int n)
{
        int ok = 0;
        for (int i = 0; i < n; i++) {
                unsigned char px[4] = {0};
                char key = (char)('0' + (i & 1));
                px[i & 1] = 250;
                px[2 + (i & 1)] = 250;
                scadles_header_t h = {"label", &key, 1};
                ok += scadles_push(w, t, partition, off + i, &key, 1, px, 4, &h, 1, 1000) ==
                      SCADLES_OK;
        }
        return ok;
}

/* An integer from the worker's statistics at a dotted path ("queue.dropped"). */
static long long stat_int(scadles_worker_t *w, const char *path)
{
        char *text = scadles_stats(w);
        assert_non_null(text);
        json_t *j = json_loads(text, 0, NULL);
        scadles_mem_free(text);
        assert_non_null(j);
        char buf[128];
        snprintf(buf, sizeof(buf), "%s", path);
        json_t *v = j;
        for (char *tok = strtok(buf, "."); tok && v; tok = strtok(NULL, "."))
                v = json_object_get(v, tok);
        if (!json_is_integer(v))
                fail_msg("no integer at %s", path);
        long long r = json_integer_value(v);
        json_decref(j);
        return r;
}

/* A number from the worker's statistics at a top-level key. */
static double stat_num(scadles_worker_t *w, const char *key)
{
        char *text = scadles_stats(w);
        assert_non_null(text);
        json_t *j = json_loads(text, 0, NULL);
        scadles_mem_free(text);
        assert_non_null(j);
        json_t *v = json_object_get(j, key);
        if (!json_is_number(v))
                fail_msg("no number at %s", key);
        double r = json_number_value(v);
        json_decref(j);
        return r;
}

static void version_and_errors(void **state)
{
        assert_int_equal(scadles_version(), SCADLES_VERSION);
        assert_string_equal(scadles_version_str(), SCADLES_VERSION_STR);
        for (int i = 0; i < SCADLES_ERR__END; i++) {
                assert_non_null(scadles_err2str((scadles_resp_err_t)i));
                for (int k = 0; k < i; k++)
                        assert_string_not_equal(scadles_err2str((scadles_resp_err_t)i),
                                                scadles_err2str((scadles_resp_err_t)k));
        }
        assert_string_equal(scadles_err2str(SCADLES_ERR__END), "Unknown error code");
        assert_string_equal(scadles_err2str((scadles_resp_err_t)-3), "Unknown error code");
}

static void conf_misuse(void **state)
{
        char err[512];
        scadles_conf_destroy(NULL);
        assert_null(scadles_conf_dup(NULL));
        assert_null(scadles_conf_dump(NULL));
        scadles_conf_set_log_cb(NULL, on_log);
        scadles_conf_set_stats_cb(NULL, on_stats);
        scadles_conf_set_opaque(NULL, err);
        assert_int_equal(scadles_conf_set(NULL, "optim.lr", "1", err, sizeof(err)),
                         SCADLES_ERR_INVALID_ARG);
        assert_int_equal(scadles_conf_set_json(NULL, "{}", NULL, err, sizeof(err)),
                         SCADLES_ERR_INVALID_ARG);
        assert_int_equal(scadles_conf_load(NULL, "x", err, sizeof(err)), SCADLES_ERR_INVALID_ARG);

        scadles_conf_t *c = job_conf();
        char *before = scadles_conf_dump(c);
        assert_non_null(before);
        /* Unknown property, bad value, bad JSON, missing file: errors, conf unchanged. */
        assert_int_equal(scadles_conf_set(c, "optim.nosuch", "1", err, sizeof(err)),
                         SCADLES_ERR_CONFIG);
        assert_non_null(strstr(err, "nosuch"));
        assert_int_equal(scadles_conf_set(c, "optim.lr", "\"fast\"", err, sizeof(err)),
                         SCADLES_ERR_CONFIG);
        assert_non_null(strstr(err, "lr"));
        assert_int_equal(scadles_conf_set(c, "", "1", err, sizeof(err)), SCADLES_ERR_INVALID_ARG);
        assert_int_equal(scadles_conf_set(c, "optim.lr", NULL, err, sizeof(err)),
                         SCADLES_ERR_INVALID_ARG);
        assert_int_equal(
            scadles_conf_set_json(c, "{\"optim\": {\"lr\": }", "bad.json", err, sizeof(err)),
            SCADLES_ERR_CONFIG);
        assert_non_null(strstr(err, "bad.json"));
        assert_int_equal(
            scadles_conf_set_json(c, "{\"optim\": {\"lr\": -1}}", "neg.json", err, sizeof(err)),
            SCADLES_ERR_CONFIG);
        assert_non_null(strstr(err, "$.optim.lr"));
        assert_int_equal(scadles_conf_load(c, "/nonexistent/job.json", err, sizeof(err)),
                         SCADLES_ERR_CONFIG);
        assert_non_null(strstr(err, "/nonexistent/job.json"));
        char *after = scadles_conf_dump(c);
        assert_string_equal(before, after);
        scadles_mem_free(before);
        scadles_mem_free(after);

        /* Embedding properties. */
        assert_int_equal(scadles_conf_set(c, "queue.full.policy", "drop", err, sizeof(err)),
                         SCADLES_OK);
        assert_int_equal(scadles_conf_set(c, "queue.full.policy", "wait", err, sizeof(err)),
                         SCADLES_ERR_CONFIG);
        assert_non_null(strstr(err, "queue.full.policy"));
        assert_int_equal(scadles_conf_set(c, "queue.buffering.max.records", "0", err, sizeof(err)),
                         SCADLES_ERR_CONFIG);
        assert_int_equal(scadles_conf_set(c, "queue.block.ms", "-2", err, sizeof(err)),
                         SCADLES_ERR_CONFIG);
        assert_int_equal(scadles_conf_set(c, "statistics.interval.ms", "x", err, sizeof(err)),
                         SCADLES_ERR_CONFIG);
        assert_int_equal(scadles_conf_set(c, "distributed", "maybe", err, sizeof(err)),
                         SCADLES_ERR_CONFIG);
        assert_int_equal(scadles_conf_set(c, "optim.lr", "0.2", err, sizeof(err)), SCADLES_OK);
        scadles_conf_t *d = scadles_conf_dup(c);
        assert_non_null(d);
        char *dc = scadles_conf_dump(c), *dd = scadles_conf_dump(d);
        assert_string_equal(dc, dd);
        scadles_mem_free(dc);
        scadles_mem_free(dd);
        scadles_conf_destroy(d);
        scadles_conf_destroy(c);
}

static void worker_new_errors(void **state)
{
        char err[512];
        assert_null(scadles_worker_new(NULL, err, sizeof(err)));
        assert_non_null(strstr(err, "NULL"));
        /* No model: refused, conf stays the caller's. */
        scadles_conf_t *c = scadles_conf_new();
        assert_null(scadles_worker_new(c, err, sizeof(err)));
        assert_non_null(strstr(err, "$.model.layers"));
        scadles_conf_destroy(c);
        /* A held-out set that cannot be loaded: a clear error, no crash. */
        c = job_conf();
        assert_int_equal(scadles_conf_set(c, "eval", "true", err, sizeof(err)), SCADLES_OK);
        assert_int_equal(scadles_conf_set(c, "worker.eval", "true", err, sizeof(err)), SCADLES_OK);
        assert_int_equal(scadles_conf_set(c, "data.dir", "/nonexistent", err, sizeof(err)),
                         SCADLES_OK);
        assert_null(scadles_worker_new(c, err, sizeof(err)));
        assert_true(strlen(err) > 0);
        scadles_conf_destroy(c);
}

static void null_handles(void **state)
{
        char err[64];
        assert_int_equal(scadles_push(NULL, "t", 0, 0, NULL, 0, NULL, 0, NULL, 0, 0),
                         SCADLES_ERR_INVALID_ARG);
        assert_int_equal(scadles_poll(NULL, 0), SCADLES_ERR_INVALID_ARG);
        assert_int_equal(scadles_start(NULL), SCADLES_ERR_INVALID_ARG);
        assert_int_equal(scadles_stop(NULL), SCADLES_ERR_INVALID_ARG);
        assert_int_equal(scadles_flush(NULL, 0), SCADLES_ERR_INVALID_ARG);
        assert_int_equal(scadles_finish(NULL, 0, err, sizeof(err)), SCADLES_ERR_INVALID_ARG);
        assert_null(scadles_stats(NULL));
        scadles_destroy(NULL);
        scadles_mem_free(NULL);
}

static void poll_mode_trains(void **state)
{
        char err[512];
        cb_log_t l = {0};
        scadles_conf_t *c = job_conf();
        scadles_conf_set_log_cb(c, on_log);
        scadles_conf_set_stats_cb(c, on_stats);
        scadles_conf_set_opaque(c, &l);
        assert_int_equal(scadles_conf_set(c, "statistics.interval.ms", "1", err, sizeof(err)),
                         SCADLES_OK);
        scadles_worker_t *w = job_worker(c);
        /* Bad arguments. */
        unsigned char px[4] = {0};
        assert_int_equal(scadles_push(w, NULL, 0, 0, "0", 1, px, 4, NULL, 0, 0),
                         SCADLES_ERR_INVALID_ARG);
        assert_int_equal(scadles_push(w, "", 0, 0, "0", 1, px, 4, NULL, 0, 0),
                         SCADLES_ERR_INVALID_ARG);
        assert_int_equal(scadles_push(w, "t", 0, 0, "0", 1, NULL, 4, NULL, 0, 0),
                         SCADLES_ERR_INVALID_ARG);
        assert_int_equal(scadles_push(w, "t", 0, 0, NULL, 1, px, 4, NULL, 0, 0),
                         SCADLES_ERR_INVALID_ARG);
        assert_int_equal(scadles_push(w, "t", 0, 0, "0", 1, px, 4, NULL, 2, 0),
                         SCADLES_ERR_INVALID_ARG);
        scadles_header_t bad = {NULL, px, 1};
        assert_int_equal(scadles_push(w, "t", 0, 0, "0", 1, px, 4, &bad, 1, 0),
                         SCADLES_ERR_INVALID_ARG);

        assert_int_equal(push_n(w, "t", 0, 0, 400), 400);
        /* A malformed record (3 bytes, not 4) is accepted and counted as rejected. */
        assert_int_equal(scadles_push(w, "t", 0, 400, "1", 1, px, 3, NULL, 0, 0), SCADLES_OK);
        /* Nothing trains before a poll. */
        assert_int_equal(stat_int(w, "queue.queued"), 401);
        for (int i = 0; i < 100; i++)
                assert_int_equal(scadles_poll(w, 5), SCADLES_OK);
        assert_int_equal(scadles_flush(w, 10000), SCADLES_OK);
        assert_int_equal(stat_int(w, "queue.queued"), 0);
        assert_int_equal(stat_int(w, "queue.handed"), 401);
        assert_int_equal(stat_int(w, "rejected"), 1);
        assert_true(stat_int(w, "trained") >= 400 - 8);
        assert_true(l.stats > 0);
        assert_int_equal(l.finals, 0);

        assert_int_equal(scadles_finish(w, 1000, err, sizeof(err)), SCADLES_OK);
        assert_int_equal(l.finals, 1);
        assert_non_null(strstr(l.last_stats, "\"state\":\"finished\""));
        /* After finish: push and poll refused, finish idempotent. */
        assert_int_equal(push_n(w, "t", 0, 1000, 1), 0);
        assert_int_equal(scadles_push(w, "t", 0, 2000, "0", 1, px, 4, NULL, 0, 0),
                         SCADLES_ERR_STATE);
        assert_int_equal(scadles_poll(w, 0), SCADLES_ERR_STATE);
        assert_int_equal(scadles_flush(w, 0), SCADLES_ERR_STATE);
        assert_int_equal(scadles_start(w), SCADLES_ERR_STATE);
        assert_int_equal(scadles_finish(w, 0, err, sizeof(err)), SCADLES_OK);
        assert_int_equal(stat_int(w, "queue.refused"), 2);
        assert_int_equal(l.finals, 1);
        scadles_destroy(w);
}

typedef struct pusher {
        scadles_worker_t *w;
        int partition, ok;
} pusher_t;

static void *push_thread(void *arg)
{
        pusher_t *p = arg;
        p->ok = push_n(p->w, "bg", p->partition, 0, 3000);
        return NULL;
}

static void background_thread_trains(void **state)
{
        char err[512];
        scadles_conf_t *c = job_conf();
        /* A small queue that blocks until there is room: nothing is dropped. */
        assert_int_equal(scadles_conf_set(c, "queue.buffering.max.records", "64", err, sizeof(err)),
                         SCADLES_OK);
        assert_int_equal(scadles_conf_set(c, "queue.block.ms", "-1", err, sizeof(err)), SCADLES_OK);
        scadles_worker_t *w = job_worker(c);
        assert_int_equal(scadles_start(w), SCADLES_OK);
        assert_int_equal(scadles_start(w), SCADLES_ERR_STATE);
        assert_int_equal(scadles_poll(w, 0), SCADLES_ERR_STATE);
        pusher_t p[2] = {{w, 0, 0}, {w, 1, 0}};
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
                assert_int_equal(pthread_create(&t[i], NULL, push_thread, &p[i]), 0);
        for (int i = 0; i < 2; i++)
                pthread_join(t[i], NULL);
        assert_int_equal(p[0].ok + p[1].ok, 6000);
        assert_int_equal(scadles_flush(w, 20000), SCADLES_OK);
        assert_int_equal(stat_int(w, "queue.dropped"), 0);
        assert_int_equal(stat_int(w, "queue.handed"), 6000);
        assert_true(stat_int(w, "queue.peak_queued") <= 64);
        assert_true(stat_int(w, "trained") >= 6000 - 8);
        assert_int_equal(scadles_stop(w), SCADLES_OK);
        assert_int_equal(scadles_stop(w), SCADLES_OK);
        /* Poll mode again after stop. */
        assert_int_equal(push_n(w, "bg", 2, 0, 16), 16);
        assert_int_equal(scadles_poll(w, 10), SCADLES_OK);
        scadles_destroy(w); /* finishes implicitly */
}

static void full_queue_is_counted(void **state)
{
        char err[512];
        scadles_conf_t *c = job_conf();
        assert_int_equal(scadles_conf_set(c, "queue.buffering.max.records", "5", err, sizeof(err)),
                         SCADLES_OK);
        assert_int_equal(scadles_conf_set(c, "queue.full.policy", "drop", err, sizeof(err)),
                         SCADLES_OK);
        scadles_worker_t *w = job_worker(c);
        /* Not started, never polled: the queue fills, the rest is dropped and counted. */
        assert_int_equal(push_n(w, "q", 0, 0, 12), 5);
        assert_int_equal(stat_int(w, "queue.dropped"), 7);
        assert_int_equal(stat_int(w, "queue.queued"), 5);
        scadles_destroy(w);

        /* Block policy with a limit: waits about block.ms, then drops. */
        c = job_conf();
        assert_int_equal(scadles_conf_set(c, "queue.buffering.max.records", "2", err, sizeof(err)),
                         SCADLES_OK);
        assert_int_equal(scadles_conf_set(c, "queue.block.ms", "50", err, sizeof(err)), SCADLES_OK);
        w = job_worker(c);
        assert_int_equal(push_n(w, "q", 0, 0, 2), 2);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        unsigned char px[4] = {0};
        assert_int_equal(scadles_push(w, "q", 0, 2, "0", 1, px, 4, NULL, 0, -1),
                         SCADLES_ERR_QUEUE_FULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        assert_true(ms >= 40 && ms < 2000);
        assert_int_equal(stat_int(w, "queue.dropped"), 1);
        assert_int_equal(stat_int(w, "queue.blocked"), 1);
        scadles_destroy(w);
}

/* The embedding properties set before a configuration is loaded stay set:
 * loading replaces the training configuration only. */
static void loading_keeps_the_embedding_properties(void **state)
{
        char err[512];
        scadles_conf_t *c = scadles_conf_new();
        assert_non_null(c);
        assert_int_equal(scadles_conf_set(c, "queue.buffering.max.records", "5", err, sizeof(err)),
                         SCADLES_OK);
        assert_int_equal(scadles_conf_set(c, "queue.full.policy", "drop", err, sizeof(err)),
                         SCADLES_OK);
        assert_int_equal(scadles_conf_set(c, "eval", "0", err, sizeof(err)), SCADLES_OK);
        assert_int_equal(scadles_conf_set_json(c, job_json, "test", err, sizeof(err)), SCADLES_OK);
        scadles_worker_t *w = job_worker(c);
        assert_int_equal(push_n(w, "q", 0, 0, 12), 5);
        assert_int_equal(stat_int(w, "queue.dropped"), 7);
        assert_int_equal(stat_int(w, "queue.capacity"), 5);
        scadles_destroy(w); /* owns c */
}

static void out_of_order_offsets_are_counted(void **state)
{
        scadles_worker_t *w = job_worker(job_conf());
        assert_int_equal(push_n(w, "o", 0, 100, 4), 4);
        assert_int_equal(push_n(w, "o", 0, 50, 2), 2); /* queued; refused by the runtime */
        assert_int_equal(scadles_poll(w, 0), SCADLES_OK);
        assert_int_equal(stat_int(w, "queue.handed"), 4);
        assert_int_equal(stat_int(w, "queue.out_of_order"), 2);
        scadles_destroy(w);
}

/* One record of class c (0 or 1), as push_n writes them. */
static scadles_resp_err_t predict_class(scadles_worker_t *w, int c, float *probs, int32_t *label,
                                        uint64_t *version, char *err, size_t err_size)
{
        unsigned char px[4] = {0};
        char key = (char)('0' + c);
        px[c] = 250;
        px[2 + c] = 250;
        return scadles_predict(w, "t", &key, 1, px, 4, NULL, 0, probs, 2, label, version, err,
                               err_size);
}

static void predict_uses_the_trained_model(void **state)
{
        char err[512];
        float probs[2];
        int32_t label = -1;
        uint64_t v0 = 99, v1 = 0;
        scadles_worker_t *w = job_worker(job_conf());
        /* Before training: the initial model, version 0. */
        assert_int_equal(predict_class(w, 0, probs, &label, &v0, err, sizeof(err)), SCADLES_OK);
        assert_int_equal(v0, 0);
        assert_true(label == 0 || label == 1);
        assert_float_equal(probs[0] + probs[1], 1.0f, 1e-5f);
        assert_int_equal(push_n(w, "t", 0, 0, 400), 400);
        assert_int_equal(scadles_flush(w, 10000), SCADLES_OK);
        /* After the flush: the model that trained on them (it learned the task). */
        for (int c = 0; c < 2; c++) {
                assert_int_equal(predict_class(w, c, probs, &label, &v1, err, sizeof(err)),
                                 SCADLES_OK);
                assert_int_equal(label, c);
                assert_true(probs[c] > 0.9f);
                assert_float_equal(probs[0] + probs[1], 1.0f, 1e-5f);
                assert_int_equal(v1, (uint64_t)stat_int(w, "batches"));
        }
        assert_true(v1 >= 40);
        /* Nothing was pushed or counted by predicting. */
        assert_int_equal(stat_int(w, "queue.pushed"), 400);
        /* Probabilities, label and version may each be left out. */
        unsigned char px[4] = {250, 0, 250, 0};
        assert_int_equal(
            scadles_predict(w, "t", "0", 1, px, 4, NULL, 0, NULL, 0, &label, NULL, NULL, 0),
            SCADLES_OK);
        assert_int_equal(label, 0);
        /* Misuse and malformed records. */
        assert_int_equal(
            scadles_predict(w, "t", "0", 1, px, 4, NULL, 0, probs, 1, NULL, NULL, err, sizeof(err)),
            SCADLES_ERR_INVALID_ARG);
        assert_non_null(strstr(err, "2 classes"));
        assert_int_equal(
            scadles_predict(w, "t", "0", 1, px, 3, NULL, 0, probs, 2, NULL, NULL, err, sizeof(err)),
            SCADLES_ERR_IO);
        assert_non_null(strstr(err, "wrong_length"));
        assert_int_equal(
            scadles_predict(w, "t", "7", 1, px, 4, NULL, 0, probs, 2, NULL, NULL, err, sizeof(err)),
            SCADLES_ERR_IO);
        assert_non_null(strstr(err, "label_range"));
        assert_int_equal(scadles_predict(NULL, "t", "0", 1, px, 4, NULL, 0, NULL, 0, NULL, NULL,
                                         err, sizeof(err)),
                         SCADLES_ERR_INVALID_ARG);
        assert_int_equal(
            scadles_predict(w, NULL, "0", 1, px, 4, NULL, 0, NULL, 0, NULL, NULL, err, sizeof(err)),
            SCADLES_ERR_INVALID_ARG);
        assert_int_equal(
            scadles_predict(w, "t", NULL, 1, px, 4, NULL, 0, NULL, 0, NULL, NULL, err, sizeof(err)),
            SCADLES_ERR_INVALID_ARG);
        /* After finish too, until destroy. */
        assert_int_equal(scadles_finish(w, 1000, err, sizeof(err)), SCADLES_OK);
        assert_int_equal(predict_class(w, 1, probs, &label, &v1, err, sizeof(err)), SCADLES_OK);
        assert_int_equal(label, 1);
        scadles_destroy(w);
}

/* A thread scoring records while the training thread trains: counts its
 * calls, the ones that failed or gave bad probabilities, versions that went
 * back, and the versions it saw (cmocka asserts only on the main thread). */
typedef struct predictor {
        scadles_worker_t *w;
        volatile int *stop;
        int calls, failed, bad, back, changes;
        uint64_t last;
} predictor_t;

static void *predict_thread(void *arg)
{
        predictor_t *p = arg;
        char err[256];
        float probs[2];
        int32_t label;
        uint64_t v;
        while (!__atomic_load_n(p->stop, __ATOMIC_ACQUIRE)) {
                int c = p->calls & 1;
                p->calls++;
                if (predict_class(p->w, c, probs, &label, &v, err, sizeof(err)) != SCADLES_OK) {
                        p->failed++;
                        continue;
                }
                if (fabsf(probs[0] + probs[1] - 1.0f) > 1e-5f || (label != 0 && label != 1))
                        p->bad++;
                if (v < p->last)
                        p->back++;
                if (v != p->last)
                        p->changes++;
                p->last = v;
        }
        return NULL;
}

static void predict_concurrent_with_training(void **state)
{
        char err[512];
        scadles_conf_t *c = job_conf();
        assert_int_equal(scadles_conf_set(c, "queue.buffering.max.records", "64", err, sizeof(err)),
                         SCADLES_OK);
        assert_int_equal(scadles_conf_set(c, "queue.block.ms", "-1", err, sizeof(err)), SCADLES_OK);
        assert_int_equal(scadles_conf_set(c, "predict.publish.steps", "-1", err, sizeof(err)),
                         SCADLES_ERR_CONFIG);
        assert_int_equal(scadles_conf_set(c, "predict.publish.steps", "50", err, sizeof(err)),
                         SCADLES_OK);
        scadles_worker_t *w = job_worker(c);
        volatile int stop = 0;
        predictor_t pr[2] = {{.w = w, .stop = &stop}, {.w = w, .stop = &stop}};
        pusher_t pu[2] = {{w, 0, 0}, {w, 1, 0}};
        pthread_t tp[2], tu[2];
        assert_int_equal(scadles_start(w), SCADLES_OK);
        for (int i = 0; i < 2; i++) {
                assert_int_equal(pthread_create(&tp[i], NULL, predict_thread, &pr[i]), 0);
                assert_int_equal(pthread_create(&tu[i], NULL, push_thread, &pu[i]), 0);
        }
        for (int i = 0; i < 2; i++)
                pthread_join(tu[i], NULL);
        assert_int_equal(scadles_flush(w, 30000), SCADLES_OK);
        __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
        for (int i = 0; i < 2; i++)
                pthread_join(tp[i], NULL);
        assert_int_equal(pu[0].ok + pu[1].ok, 6000);
        long long steps = stat_int(w, "batches");
        for (int i = 0; i < 2; i++) {
                assert_true(pr[i].calls > 0);
                assert_int_equal(pr[i].failed, 0);
                assert_int_equal(pr[i].bad, 0);
                assert_int_equal(pr[i].back, 0);
                assert_true(pr[i].last <= (uint64_t)steps);
        }
        /* The copy followed the training: several versions were seen. */
        assert_true(pr[0].changes + pr[1].changes >= 2);
        /* After the flush a call scores with the model trained on everything. */
        float probs[2];
        int32_t label;
        uint64_t v;
        assert_int_equal(predict_class(w, 1, probs, &label, &v, err, sizeof(err)), SCADLES_OK);
        assert_int_equal(v, (uint64_t)steps);
        assert_int_equal(label, 1);
        scadles_destroy(w);
}

/* One record of class c as a struct (the label in the key). */
static void record_of_class(scadles_record_t *r, int c, unsigned char *px, char *key)
{
        memset(px, 0, 4);
        *key = (char)('0' + c);
        px[c] = 250;
        px[2 + c] = 250;
        r->topic = "t";
        r->key = key;
        r->key_len = 1;
        r->value = px;
        r->value_len = 4;
}

static void records_and_predictions_as_structs(void **state)
{
        char err[512];
        unsigned char px[4];
        char key;
        float probs[2];
        scadles_worker_t *w = job_worker(job_conf());
        for (int i = 0; i < 400; i++) {
                scadles_record_t r = SCADLES_RECORD_INIT;
                record_of_class(&r, i & 1, px, &key);
                r.partition = 0;
                r.offset = i;
                assert_int_equal(scadles_push_record(w, &r), SCADLES_OK);
        }
        assert_int_equal(scadles_flush(w, 10000), SCADLES_OK);
        assert_int_equal(stat_int(w, "queue.pushed"), 400);
        for (int c = 0; c < 2; c++) {
                scadles_record_t r = SCADLES_RECORD_INIT;
                scadles_prediction_t pred = SCADLES_PREDICTION_INIT;
                pred.probabilities = probs;
                pred.n_probabilities = 2;
                record_of_class(&r, c, px, &key);
                assert_int_equal(scadles_predict_record(w, &r, &pred, err, sizeof(err)),
                                 SCADLES_OK);
                assert_int_equal(pred.label, c);
                assert_true(probs[c] > 0.9f);
                assert_int_equal(pred.model_version, (uint64_t)stat_int(w, "batches"));
        }
        /* A struct without its size is refused, not read. */
        scadles_record_t bad = SCADLES_RECORD_INIT;
        record_of_class(&bad, 0, px, &key);
        bad.partition = 0;
        bad.offset = 1000;
        bad.size = 0;
        assert_int_equal(scadles_push_record(w, &bad), SCADLES_ERR_INVALID_ARG);
        assert_int_equal(scadles_push_record(w, NULL), SCADLES_ERR_INVALID_ARG);
        scadles_prediction_t pred = SCADLES_PREDICTION_INIT;
        pred.size = 3;
        bad.size = sizeof(bad);
        assert_int_equal(scadles_predict_record(w, &bad, &pred, err, sizeof(err)),
                         SCADLES_ERR_INVALID_ARG);
        assert_non_null(strstr(err, "SCADLES_RECORD_INIT"));
        assert_int_equal(stat_int(w, "queue.pushed"), 400);
        scadles_destroy(w);
}

typedef struct commits {
        int calls;
        char topic[32];
        int32_t partition;
        int64_t next;
} commits_t;

static void on_commit(const char *topic, int32_t partition, int64_t next_offset, void *opaque)
{
        commits_t *c = opaque;
        c->calls++;
        snprintf(c->topic, sizeof(c->topic), "%s", topic);
        c->partition = partition;
        c->next = next_offset;
}

static void commits_follow_training_or_the_checkpoint(void **state)
{
        char err[512], path[] = "/tmp/test_api_commits.XXXXXX";
        /* Without a checkpoint: what was trained. */
        scadles_worker_t *w = job_worker(job_conf());
        commits_t c = {0};
        assert_int_equal(push_n(w, "t", 3, 0, 400), 400);
        assert_int_equal(scadles_flush(w, 10000), SCADLES_OK);
        assert_int_equal(scadles_commits(w, on_commit, &c), SCADLES_OK);
        /* The records' arrival is when they were handed over, also for the
         * first ones (handed before the first poll): well under the run's
         * own seconds, not the machine's uptime. */
        double lat = stat_num(w, "mean_latency_s");
        assert_true(lat >= 0 && lat < 30);
        assert_int_equal(c.calls, 1);
        assert_string_equal(c.topic, "t");
        assert_int_equal(c.partition, 3);
        assert_int_equal(c.next, 400);
        assert_int_equal(scadles_commits(w, on_commit, &c), SCADLES_OK);
        assert_int_equal(c.calls, 1); /* nothing advanced since */
        assert_int_equal(scadles_commits(NULL, on_commit, &c), SCADLES_ERR_INVALID_ARG);
        assert_int_equal(scadles_commits(w, NULL, &c), SCADLES_ERR_INVALID_ARG);
        scadles_destroy(w);

        /* With one: what the last checkpoint holds, once it is written. */
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        unlink(path);
        scadles_conf_t *conf = job_conf();
        assert_int_equal(scadles_conf_set(conf, "train.checkpoint", path, err, sizeof(err)),
                         SCADLES_OK);
        w = job_worker(conf);
        memset(&c, 0, sizeof(c));
        assert_int_equal(push_n(w, "t", 3, 0, 400), 400);
        assert_int_equal(scadles_flush(w, 10000), SCADLES_OK);
        assert_int_equal(scadles_commits(w, on_commit, &c), SCADLES_OK);
        assert_int_equal(c.calls, 0); /* trained, but no checkpoint holds it yet */
        assert_int_equal(scadles_finish(w, 1000, err, sizeof(err)), SCADLES_OK);
        assert_int_equal(scadles_commits(w, on_commit, &c), SCADLES_OK);
        assert_int_equal(c.calls, 1);
        assert_int_equal(c.next, 400);
        scadles_destroy(w);
        unlink(path);
}

typedef struct server {
        scadles_model_t *m;
        int calls, wrong, failed;
} server_t;

static void *serve_thread(void *arg)
{
        server_t *sv = arg;
        unsigned char px[4];
        char key;
        float probs[2];
        for (int i = 0; i < 500; i++) {
                scadles_record_t r = SCADLES_RECORD_INIT;
                scadles_prediction_t pred = SCADLES_PREDICTION_INIT;
                pred.probabilities = probs;
                pred.n_probabilities = 2;
                record_of_class(&r, i & 1, px, &key);
                sv->calls++;
                if (scadles_model_predict(sv->m, &r, &pred, NULL, 0) != SCADLES_OK)
                        sv->failed++;
                else if (pred.label != (i & 1) || fabsf(probs[0] + probs[1] - 1.0f) > 1e-5f)
                        sv->wrong++;
        }
        return NULL;
}

static void model_handle_serves_a_checkpoint(void **state)
{
        char err[512], path[] = "/tmp/test_api_model.XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        unlink(path);
        scadles_conf_t *c = job_conf();
        assert_int_equal(scadles_conf_set(c, "train.checkpoint", path, err, sizeof(err)),
                         SCADLES_OK);
        scadles_conf_t *serving = scadles_conf_dup(c);
        assert_non_null(serving);
        scadles_worker_t *w = job_worker(c);
        assert_int_equal(push_n(w, "t", 0, 0, 400), 400);
        assert_int_equal(scadles_flush(w, 10000), SCADLES_OK);
        long long steps = stat_int(w, "batches");
        assert_int_equal(scadles_finish(w, 1000, err, sizeof(err)), SCADLES_OK);
        scadles_destroy(w);

        scadles_model_t *m = scadles_model_open(serving, path, err, sizeof(err));
        if (!m)
                fail_msg("scadles_model_open: %s", err);
        server_t sv[2] = {{.m = m}, {.m = m}};
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
                assert_int_equal(pthread_create(&t[i], NULL, serve_thread, &sv[i]), 0);
        for (int i = 0; i < 2; i++) {
                pthread_join(t[i], NULL);
                assert_int_equal(sv[i].calls, 500);
                assert_int_equal(sv[i].failed, 0);
                assert_int_equal(sv[i].wrong, 0);
        }
        /* The version is the checkpoint's step; bad records and misuse are errors. */
        unsigned char px[4];
        char key;
        float probs[2];
        scadles_record_t r = SCADLES_RECORD_INIT;
        scadles_prediction_t pred = SCADLES_PREDICTION_INIT;
        record_of_class(&r, 1, px, &key);
        assert_int_equal(scadles_model_predict(m, &r, &pred, err, sizeof(err)), SCADLES_OK);
        assert_int_equal(pred.label, 1);
        assert_int_equal(pred.model_version, (uint64_t)steps);
        r.value_len = 3;
        assert_int_equal(scadles_model_predict(m, &r, &pred, err, sizeof(err)), SCADLES_ERR_IO);
        assert_non_null(strstr(err, "wrong_length"));
        r.value_len = 4;
        pred.probabilities = probs;
        pred.n_probabilities = 1;
        assert_int_equal(scadles_model_predict(m, &r, &pred, err, sizeof(err)),
                         SCADLES_ERR_INVALID_ARG);
        assert_non_null(strstr(err, "2 classes"));
        assert_int_equal(scadles_model_predict(NULL, &r, &pred, err, sizeof(err)),
                         SCADLES_ERR_INVALID_ARG);
        scadles_model_close(m);
        scadles_model_close(NULL);

        /* A missing file, and a checkpoint of another model's shape. */
        assert_null(scadles_model_open(serving, "/nonexistent/model.ckpt", err, sizeof(err)));
        assert_non_null(strstr(err, "/nonexistent/model.ckpt"));
        assert_int_equal(scadles_conf_set(serving, "model.layers[1].units", "3", err, sizeof(err)),
                         SCADLES_OK);
        assert_null(scadles_model_open(serving, path, err, sizeof(err)));
        assert_true(err[0] != '\0');
        assert_null(scadles_model_open(NULL, path, err, sizeof(err)));
        scadles_conf_destroy(serving);
        unlink(path);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(version_and_errors),
            cmocka_unit_test(conf_misuse),
            cmocka_unit_test(worker_new_errors),
            cmocka_unit_test(null_handles),
            cmocka_unit_test(poll_mode_trains),
            cmocka_unit_test(background_thread_trains),
            cmocka_unit_test(full_queue_is_counted),
            cmocka_unit_test(loading_keeps_the_embedding_properties),
            cmocka_unit_test(out_of_order_offsets_are_counted),
            cmocka_unit_test(predict_uses_the_trained_model),
            cmocka_unit_test(predict_concurrent_with_training),
            cmocka_unit_test(records_and_predictions_as_structs),
            cmocka_unit_test(model_handle_serves_a_checkpoint),
            cmocka_unit_test(commits_follow_training_or_the_checkpoint),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
