/* scadles.c — the public worker (scadles_worker_t): a bounded, thread-safe
 * queue of copied records in front of the training runtime (sc_worker.h),
 * driven by scadles_poll() or by the library's own thread, with statistics
 * and log callbacks. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "api_impl.h"
#include "sc_clock.h"
#include "sc_batch.h"
#include "sc_worker.h"

#define SC_API_WAIT_MS 10      /* longest sleep of the training thread when idle */
#define SC_API_QUIET_S 3.0     /* flush: trained counter unchanged this long = done */
#define SC_API_FINISH_MS 10000 /* scadles_destroy's limit for an implicit finish */

/* One copied record; its bytes follow the struct. */
typedef struct sc_api_rec {
        struct sc_api_rec *next;
        char *topic;
        int32_t partition;
        int64_t offset, timestamp;
        void *key, *value;
        size_t key_len, value_len, n_headers;
        sc_worker_header_t *headers;
        size_t bytes;
} sc_api_rec_t;

typedef enum sc_api_state {
        SC_API_RUNNING,
        SC_API_DONE,     /* a stop condition of the run holds */
        SC_API_FAILED,   /* training stopped on an error */
        SC_API_FINISHED, /* scadles_finish() ran */
} sc_api_state_t;

struct scadles_worker_s {
        scadles_conf_t *conf; /* owned */
        sc_worker_t *sw;      /* the training runtime; calls under engine */
        pthread_mutex_t engine;
        sc_api_pred_t *pred; /* scadles_predict's model copy (publish under engine) */

        pthread_mutex_t lock; /* guards everything below */
        pthread_cond_t room;  /* the queue shrank, or the state changed */
        pthread_cond_t work;  /* a record arrived, or stop was asked */
        sc_api_rec_t *head, *tail;
        size_t q_len, q_bytes, q_peak;
        uint64_t pushed, handed, dropped, refused, blocked, rejected_order;
        sc_api_state_t state;
        const char *reason; /* why the run stopped (static) */
        int started, stop_req;
        pthread_t thread;

        /* training thread only */
        double t_stats, t_drop_log;
        uint64_t dropped_logged;
        uint64_t short_of_memory; /* records held for want of memory (training thread) */
        int wait_for_memory;      /* the last hand-over stopped at one: sleep before the next */
        int final_acc_valid;      /* under lock */
        double final_acc, final_loss;
};

static void sc_api_deadline(struct timespec *ts, int ms)
{
        clock_gettime(CLOCK_REALTIME, ts);
        ts->tv_sec += ms / 1000;
        ts->tv_nsec += (long)(ms % 1000) * 1000000L;
        if (ts->tv_nsec >= 1000000000L) {
                ts->tv_sec++;
                ts->tv_nsec -= 1000000000L;
        }
}

static void sc_api_logf(scadles_worker_t *w, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sc_api_logf(scadles_worker_t *w, int level, const char *fmt, ...)
{
        char line[1024];
        va_list ap;
        if (!w->conf->log_cb)
                return;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        w->conf->log_cb(w, level, line, w->conf->opaque);
}

/* The runtime's log lines go to the user's log callback. */
static void sc_api_engine_log(void *opaque, int level, const char *line)
{
        scadles_worker_t *w = opaque;
        if (w->conf->log_cb)
                w->conf->log_cb(w, level, line, w->conf->opaque);
}

/* A record's arguments are usable: a topic, data wherever a length is
 * non-zero, a name for every header. */
static int sc_api_rec_ok(const char *topic, const void *key, size_t key_len, const void *value,
                         size_t value_len, const scadles_header_t *headers, size_t header_cnt)
{
        if (!topic || !*topic || (key_len && !key) || (value_len && !value) ||
            (header_cnt && !headers))
                return 0;
        for (size_t i = 0; i < header_cnt; i++)
                if (!headers[i].name || (headers[i].size && !headers[i].value))
                        return 0;
        return 1;
}

static sc_api_rec_t *sc_api_rec_copy(const char *topic, int32_t partition, int64_t offset,
                                     const void *key, size_t key_len, const void *value,
                                     size_t value_len, const scadles_header_t *headers,
                                     size_t header_cnt, int64_t timestamp)
{
        size_t tlen = strlen(topic) + 1, n = sizeof(sc_api_rec_t) + tlen + key_len + value_len;
        n += header_cnt * sizeof(sc_worker_header_t);
        for (size_t i = 0; i < header_cnt; i++)
                n += strlen(headers[i].name) + 1 + headers[i].size;
        sc_api_rec_t *r = malloc(n);
        if (!r)
                return NULL;
        char *p = (char *)(r + 1);
        r->next = NULL;
        r->bytes = n;
        r->partition = partition;
        r->offset = offset;
        r->timestamp = timestamp;
        r->n_headers = header_cnt;
        r->headers = (sc_worker_header_t *)p;
        p += header_cnt * sizeof(sc_worker_header_t);
        r->topic = memcpy(p, topic, tlen);
        p += tlen;
        r->key = key_len ? memcpy(p, key, key_len) : NULL;
        r->key_len = key_len;
        p += key_len;
        r->value = value_len ? memcpy(p, value, value_len) : NULL;
        r->value_len = value_len;
        p += value_len;
        for (size_t i = 0; i < header_cnt; i++) {
                size_t l = strlen(headers[i].name) + 1;
                r->headers[i].name = memcpy(p, headers[i].name, l);
                p += l;
                r->headers[i].value =
                    headers[i].size ? memcpy(p, headers[i].value, headers[i].size) : NULL;
                r->headers[i].size = headers[i].size;
                p += headers[i].size;
        }
        return r;
}

SCADLES_EXPORT scadles_worker_t *scadles_worker_new(scadles_conf_t *conf, char *errstr,
                                                    size_t errstr_size)
{
        if (!conf) {
                sc_api_errf(SCADLES_ERR_INVALID_ARG, errstr, errstr_size,
                            "scadles_worker_new: NULL conf");
                return NULL;
        }
        if (conf->sc.model.n_layers == 0) {
                sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                        "%s$.model.layers: the configuration has no model (load a job file)",
                        conf->sc.origin[0] ? ": " : "");
                return NULL;
        }
        scadles_worker_t *w = calloc(1, sizeof(*w));
        if (!w) {
                sc_api_errf(SCADLES_ERR_NOMEM, errstr, errstr_size, "out of memory");
                return NULL;
        }
        w->conf = conf;
        pthread_mutex_init(&w->engine, NULL);
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->room, NULL);
        pthread_cond_init(&w->work, NULL);
        sc_worker_spec_t spec;
        sc_worker_spec_defaults(&spec);
        spec.conf = &conf->sc;
        spec.input = SC_WORKER_INPUT_PUSH;
        spec.distributed = conf->sc.embed.distributed;
        spec.worker_id = conf->sc.embed.worker_id;
        spec.eval = conf->sc.embed.eval;
        spec.log = sc_api_engine_log;
        spec.log_opaque = w;
        if (sc_worker_new(&w->sw, &spec, errstr, errstr_size) ||
            sc_api_pred_new(&w->pred, w->sw, spec.distributed, conf->sc.embed.publish_steps, errstr,
                            errstr_size)) {
                sc_worker_destroy(w->sw);
                pthread_cond_destroy(&w->work);
                pthread_cond_destroy(&w->room);
                pthread_mutex_destroy(&w->lock);
                pthread_mutex_destroy(&w->engine);
                free(w);
                return NULL; /* conf stays the caller's */
        }
        w->t_stats = w->t_drop_log = sc_clock_mono();
        return w;
}

SCADLES_EXPORT scadles_resp_err_t scadles_push(scadles_worker_t *w, const char *topic,
                                               int32_t partition, int64_t offset, const void *key,
                                               size_t key_len, const void *value, size_t value_len,
                                               const scadles_header_t *headers, size_t header_cnt,
                                               int64_t timestamp)
{
        if (!w || !sc_api_rec_ok(topic, key, key_len, value, value_len, headers, header_cnt))
                return SCADLES_ERR_INVALID_ARG;
        sc_api_rec_t *r = sc_api_rec_copy(topic, partition, offset, key, key_len, value, value_len,
                                          headers, header_cnt, timestamp);
        pthread_mutex_lock(&w->lock);
        w->pushed++;
        if (w->state != SC_API_RUNNING) {
                w->refused++;
                pthread_mutex_unlock(&w->lock);
                free(r);
                return SCADLES_ERR_STATE;
        }
        if (!r) {
                w->dropped++;
                pthread_mutex_unlock(&w->lock);
                return SCADLES_ERR_NOMEM;
        }
        if (w->q_len >= (size_t)w->conf->sc.embed.queue_max && !w->conf->sc.embed.queue_drop &&
            w->conf->sc.embed.block_ms != 0) {
                struct timespec until;
                sc_api_deadline(&until,
                                w->conf->sc.embed.block_ms > 0 ? w->conf->sc.embed.block_ms : 0);
                w->blocked++;
                while (w->q_len >= (size_t)w->conf->sc.embed.queue_max &&
                       w->state == SC_API_RUNNING) {
                        if (w->conf->sc.embed.block_ms < 0)
                                pthread_cond_wait(&w->room, &w->lock);
                        else if (pthread_cond_timedwait(&w->room, &w->lock, &until) == ETIMEDOUT)
                                break;
                }
        }
        scadles_resp_err_t err = SCADLES_OK;
        if (w->state != SC_API_RUNNING) {
                w->refused++;
                err = SCADLES_ERR_STATE;
        } else if (w->q_len >= (size_t)w->conf->sc.embed.queue_max) {
                w->dropped++;
                err = SCADLES_ERR_QUEUE_FULL;
        } else {
                if (w->tail)
                        w->tail->next = r;
                else
                        w->head = r;
                w->tail = r;
                w->q_len++;
                w->q_bytes += r->bytes;
                if (w->q_len > w->q_peak)
                        w->q_peak = w->q_len;
                r = NULL;
                pthread_cond_signal(&w->work);
        }
        pthread_mutex_unlock(&w->lock);
        free(r);
        return err;
}

/* Sets the state (first stop wins) and wakes everyone waiting. */
static void sc_api_set_state(scadles_worker_t *w, sc_api_state_t s, const char *reason)
{
        pthread_mutex_lock(&w->lock);
        if (w->state == SC_API_RUNNING || s == SC_API_FINISHED) {
                if (w->state == SC_API_RUNNING)
                        w->reason = reason;
                w->state = s;
        }
        pthread_cond_broadcast(&w->room);
        pthread_cond_broadcast(&w->work);
        pthread_mutex_unlock(&w->lock);
}

/* Statistics as a JSON text: the runtime's counters plus the queue's.
 * Caller frees; NULL on OOM. */
static char *sc_api_stats_text(scadles_worker_t *w, int final)
{
        pthread_mutex_lock(&w->engine);
        char *inner = sc_worker_stats_json(w->sw);
        pthread_mutex_unlock(&w->engine);
        json_t *j = inner ? json_loads(inner, 0, NULL) : NULL;
        free(inner);
        if (!j || !json_is_object(j)) {
                json_decref(j);
                j = json_object();
                if (!j)
                        return NULL;
        }
        pthread_mutex_lock(&w->lock);
        json_t *q = json_pack(
            "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "pushed", (json_int_t)w->pushed,
            "handed", (json_int_t)w->handed, "queued", (json_int_t)w->q_len, "queued_bytes",
            (json_int_t)w->q_bytes, "peak_queued", (json_int_t)w->q_peak, "capacity",
            (json_int_t)(size_t)w->conf->sc.embed.queue_max, "dropped", (json_int_t)w->dropped,
            "refused", (json_int_t)w->refused, "blocked", (json_int_t)w->blocked, "out_of_order",
            (json_int_t)w->rejected_order);
        const char *state = w->state == SC_API_RUNNING  ? "running"
                            : w->state == SC_API_DONE   ? "done"
                            : w->state == SC_API_FAILED ? "failed"
                                                        : "finished";
        const char *reason = w->reason;
        pthread_mutex_unlock(&w->lock);
        json_object_set_new(j, "queue", q);
        json_object_set_new(j, "state", json_string(state));
        if (reason)
                json_object_set_new(j, "stop_reason", json_string(reason));
        pthread_mutex_lock(&w->lock);
        int acc_valid = w->final_acc_valid;
        double acc = w->final_acc, loss = w->final_loss;
        pthread_mutex_unlock(&w->lock);
        if (acc_valid) {
                json_object_set_new(j, "test_accuracy", json_real(acc));
                json_object_set_new(j, "test_loss", json_real(loss));
        }
        json_object_set_new(j, "final", json_boolean(final));
        json_object_set_new(j, "version", json_string(SCADLES_VERSION_STR));
        char *text = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        return text;
}

static void sc_api_emit_stats(scadles_worker_t *w, int final)
{
        if (!w->conf->stats_cb)
                return;
        char *text = sc_api_stats_text(w, final);
        if (text)
                w->conf->stats_cb(w, text, w->conf->opaque);
        free(text);
}

/* Hands queued records to the runtime until it asks to wait; returns how
 * many it took. Training thread. */
static size_t sc_api_hand_over(scadles_worker_t *w)
{
        char err[512];
        size_t n = 0;
        double now = sc_clock_mono();
        for (;;) {
                pthread_mutex_lock(&w->lock);
                sc_api_rec_t *r = w->head;
                pthread_mutex_unlock(&w->lock);
                if (!r)
                        break;
                /* Only this thread removes records: r stays valid while unlocked. */
                pthread_mutex_lock(&w->engine);
                if (!n)
                        sc_worker_clock(w->sw, now); /* the records' arrival time */
                sc_err_t e = sc_worker_push(w->sw, r->topic, r->partition, r->offset, r->key,
                                            r->key_len, r->value, r->value_len, r->headers,
                                            r->n_headers, r->timestamp, err, sizeof(err));
                pthread_mutex_unlock(&w->engine);
                if (e == SC_ERR_NOMEM) {
                        /* No memory for its row: wait a little, push it again. */
                        if (!w->short_of_memory++)
                                sc_api_logf(w, 3, "record %s [%" PRId32 "] @%" PRId64 " held: %s",
                                            r->topic, r->partition, r->offset, err);
                        w->wait_for_memory = 1;
                        break;
                }
                if (e == SC_ERR_AGAIN)
                        break; /* stream full: train first, push it again */
                pthread_mutex_lock(&w->lock);
                w->head = r->next;
                if (!w->head)
                        w->tail = NULL;
                w->q_len--;
                w->q_bytes -= r->bytes;
                if (e == SC_OK)
                        w->handed++;
                else
                        w->rejected_order++;
                pthread_cond_signal(&w->room);
                pthread_mutex_unlock(&w->lock);
                if (e != SC_OK)
                        sc_api_logf(w, 4, "record %s [%" PRId32 "] @%" PRId64 " not taken: %s",
                                    r->topic, r->partition, r->offset, err);
                free(r);
                n++;
        }
        return n;
}

/* One round of training work (training thread): hand over, poll the
 * runtime, statistics. Returns 1 if anything was handed over. */
static int sc_api_step(scadles_worker_t *w)
{
        char err[512];
        const char *reason = NULL;
        size_t n = sc_api_hand_over(w);
        double now = sc_clock_mono();
        pthread_mutex_lock(&w->engine);
        sc_err_t e = sc_worker_poll(w->sw, now, 0, err, sizeof(err));
        int done = e == SC_OK && sc_worker_done(w->sw, &reason);
        sc_api_pred_publish(w->pred, w->sw, 0);
        pthread_mutex_unlock(&w->engine);
        if (e) {
                sc_api_logf(w, 3, "training stopped: %s", err);
                sc_api_set_state(w, SC_API_FAILED, "error");
        } else if (done) {
                sc_api_logf(w, 6, "run complete (%s): further records are refused", reason);
                sc_api_set_state(w, SC_API_DONE, reason);
        }
        pthread_mutex_lock(&w->lock);
        uint64_t dropped = w->dropped;
        pthread_mutex_unlock(&w->lock);
        if (dropped != w->dropped_logged && now - w->t_drop_log >= 1.0) {
                sc_api_logf(w, 4,
                            "push queue full (%zu records): %" PRIu64 " records dropped so far",
                            (size_t)w->conf->sc.embed.queue_max, dropped);
                w->dropped_logged = dropped;
                w->t_drop_log = now;
        }
        if (w->conf->sc.embed.stats_interval_ms > 0 &&
            now - w->t_stats >= w->conf->sc.embed.stats_interval_ms / 1000.0) {
                w->t_stats = now;
                sc_api_emit_stats(w, 0);
        }
        return n > 0;
}

/* Waits up to ms for a record or a stop request (training thread); the
 * whole ms, records queued or not, after one was held for want of memory. */
static void sc_api_wait(scadles_worker_t *w, int ms)
{
        struct timespec until;
        int memory = w->wait_for_memory;
        w->wait_for_memory = 0;
        sc_api_deadline(&until, ms);
        pthread_mutex_lock(&w->lock);
        if ((!w->head || memory) && !w->stop_req)
                pthread_cond_timedwait(&w->work, &w->lock, &until);
        pthread_mutex_unlock(&w->lock);
}

static int sc_api_failed(scadles_worker_t *w)
{
        pthread_mutex_lock(&w->lock);
        int failed = w->state == SC_API_FAILED;
        pthread_mutex_unlock(&w->lock);
        return failed;
}

static void *sc_api_thread(void *arg)
{
        scadles_worker_t *w = arg;
        for (;;) {
                pthread_mutex_lock(&w->lock);
                int stop = w->stop_req, running = w->state == SC_API_RUNNING;
                pthread_mutex_unlock(&w->lock);
                if (stop)
                        break;
                if (!running) {
                        sc_api_wait(w, 100);
                        continue;
                }
                if (!sc_api_step(w))
                        sc_api_wait(w, SC_API_WAIT_MS);
        }
        return NULL;
}

SCADLES_EXPORT scadles_resp_err_t scadles_poll(scadles_worker_t *w, int timeout_ms)
{
        if (!w)
                return SCADLES_ERR_INVALID_ARG;
        pthread_mutex_lock(&w->lock);
        sc_api_state_t s = w->state;
        int started = w->started;
        pthread_mutex_unlock(&w->lock);
        if (started || s == SC_API_FINISHED)
                return SCADLES_ERR_STATE;
        if (s == SC_API_FAILED)
                return SCADLES_ERR_RUNTIME;
        if (s == SC_API_DONE)
                return SCADLES_OK;
        double until = sc_clock_mono() + (timeout_ms > 0 ? timeout_ms / 1000.0 : 0);
        for (;;) {
                int moved = sc_api_step(w);
                if (sc_api_failed(w))
                        return SCADLES_ERR_RUNTIME;
                double left = until - sc_clock_mono();
                if (moved || left <= 0)
                        return SCADLES_OK;
                sc_api_wait(w, (int)fmin(SC_API_WAIT_MS, ceil(left * 1000)));
        }
}

SCADLES_EXPORT scadles_resp_err_t scadles_start(scadles_worker_t *w)
{
        if (!w)
                return SCADLES_ERR_INVALID_ARG;
        pthread_mutex_lock(&w->lock);
        if (w->started || w->state == SC_API_FINISHED) {
                pthread_mutex_unlock(&w->lock);
                return SCADLES_ERR_STATE;
        }
        w->stop_req = 0;
        int rc = pthread_create(&w->thread, NULL, sc_api_thread, w);
        w->started = rc == 0;
        pthread_mutex_unlock(&w->lock);
        return rc ? SCADLES_ERR_NOMEM : SCADLES_OK;
}

SCADLES_EXPORT scadles_resp_err_t scadles_stop(scadles_worker_t *w)
{
        if (!w)
                return SCADLES_ERR_INVALID_ARG;
        pthread_mutex_lock(&w->lock);
        int started = w->started;
        w->stop_req = 1;
        pthread_cond_broadcast(&w->work);
        pthread_mutex_unlock(&w->lock);
        if (started)
                pthread_join(w->thread, NULL);
        pthread_mutex_lock(&w->lock);
        w->started = 0;
        w->stop_req = 0;
        pthread_mutex_unlock(&w->lock);
        return SCADLES_OK;
}

/* Samples trained so far; *left = samples buffered in the runtime, or -1
 * if its statistics do not say. */
static uint64_t sc_api_trained(scadles_worker_t *w, long *left)
{
        sc_worker_counters_t c;
        pthread_mutex_lock(&w->engine);
        sc_worker_counters(w->sw, &c);
        char *text = sc_worker_stats_json(w->sw);
        pthread_mutex_unlock(&w->engine);
        json_t *j = text ? json_loads(text, 0, NULL) : NULL;
        json_t *b = json_object_get(j, "buffered"), *f = json_object_get(j, "inflight");
        *left = json_is_integer(b) && json_is_integer(f)
                    ? (long)(json_integer_value(b) + json_integer_value(f))
                    : -1;
        json_decref(j);
        free(text);
        return c.samples;
}

/* The smallest batch the runtime trains. */
static long sc_api_min_batch(const scadles_worker_t *w)
{
        const sc_conf_worker_t *wc = &w->conf->sc.worker;
        return wc->batch.mode == SC_BATCH_FIXED ? wc->batch.b : wc->batch.b_min;
}

typedef struct sc_api_commits {
        scadles_commit_cb_t *cb;
        void *opaque;
} sc_api_commits_t;

static void sc_api_commit_one(void *opaque, const char *topic, int32_t partition,
                              int64_t next_offset)
{
        sc_api_commits_t *c = opaque;
        c->cb(topic, partition, next_offset, c->opaque);
}

SCADLES_EXPORT scadles_resp_err_t scadles_commits(scadles_worker_t *w, scadles_commit_cb_t *cb,
                                                  void *opaque)
{
        if (!w || !cb)
                return SCADLES_ERR_INVALID_ARG;
        sc_api_commits_t c = {cb, opaque};
        pthread_mutex_lock(&w->engine);
        sc_worker_commits(w->sw, sc_api_commit_one, &c);
        pthread_mutex_unlock(&w->engine);
        return SCADLES_OK;
}

SCADLES_EXPORT scadles_resp_err_t scadles_flush(scadles_worker_t *w, int timeout_ms)
{
        if (!w)
                return SCADLES_ERR_INVALID_ARG;
        pthread_mutex_lock(&w->lock);
        int started = w->started;
        sc_api_state_t s = w->state;
        pthread_mutex_unlock(&w->lock);
        if (s == SC_API_FINISHED)
                return SCADLES_ERR_STATE;
        double t0 = sc_clock_mono(), t_change = t0;
        long left;
        uint64_t trained = sc_api_trained(w, &left);
        for (;;) {
                if (!started)
                        sc_api_step(w);
                else
                        sc_api_wait(w, SC_API_WAIT_MS);
                pthread_mutex_lock(&w->lock);
                size_t q = w->q_len;
                s = w->state;
                pthread_mutex_unlock(&w->lock);
                if (s == SC_API_FAILED)
                        return SCADLES_ERR_RUNTIME;
                double now = sc_clock_mono();
                uint64_t t = sc_api_trained(w, &left);
                if (t != trained || q) {
                        trained = t;
                        t_change = now;
                }
                /* Done: everything handed over and nothing trained for a while
                 * (the runtime drains its shuffle buffer once input is quiet). */
                if (q == 0 && (s == SC_API_DONE || (left >= 0 && left < sc_api_min_batch(w)) ||
                               now - t_change >= SC_API_QUIET_S)) {
                        pthread_mutex_lock(&w->engine);
                        sc_api_pred_publish(w->pred, w->sw, 1);
                        pthread_mutex_unlock(&w->engine);
                        return SCADLES_OK;
                }
                if (timeout_ms >= 0 && now - t0 >= timeout_ms / 1000.0)
                        return SCADLES_ERR_TIMED_OUT;
                if (!started)
                        sc_api_wait(w, SC_API_WAIT_MS);
        }
}

SCADLES_EXPORT scadles_resp_err_t scadles_finish(scadles_worker_t *w, int timeout_ms, char *errstr,
                                                 size_t errstr_size)
{
        char err[512] = "";
        if (!w)
                return sc_api_errf(SCADLES_ERR_INVALID_ARG, errstr, errstr_size,
                                   "scadles_finish: NULL worker");
        pthread_mutex_lock(&w->lock);
        int finished = w->state == SC_API_FINISHED;
        pthread_mutex_unlock(&w->lock);
        if (finished)
                return SCADLES_OK;
        scadles_stop(w);
        int failed = sc_api_failed(w);
        sc_api_set_state(w, SC_API_FINISHED, "finish");
        pthread_mutex_lock(&w->engine);
        sc_worker_stop(w->sw, "finish");
        sc_err_t e = sc_worker_finish(w->sw, timeout_ms < 0 ? 0 : timeout_ms, err, sizeof(err));
        double acc = 0, loss = 0;
        int evaluated = w->conf->sc.embed.eval && sc_worker_eval(w->sw, 0, &acc, &loss) == SC_OK;
        sc_api_pred_publish(w->pred, w->sw, 1);
        sc_worker_counters_t c;
        sc_worker_counters(w->sw, &c);
        pthread_mutex_unlock(&w->engine);
        if (c.preq_samples)
                sc_api_logf(w, 5,
                            "prequential accuracy: %.4f over %llu samples (last window %.4f, loss "
                            "%.4f)",
                            c.preq_acc, (unsigned long long)c.preq_samples, c.preq_window_acc,
                            c.preq_loss);
        if (evaluated) {
                pthread_mutex_lock(&w->lock);
                w->final_acc_valid = 1;
                w->final_acc = acc;
                w->final_loss = loss;
                pthread_mutex_unlock(&w->lock);
                sc_api_logf(w, 5, "test accuracy: %.4f (test loss %.4f)", acc, loss);
        }
        sc_api_emit_stats(w, 1);
        if (e) {
                sc_errf(SC_OK, errstr, errstr_size, "%s", err);
                return sc_api_err(e);
        }
        if (failed)
                return sc_api_errf(SCADLES_ERR_RUNTIME, errstr, errstr_size,
                                   "training had stopped on an error (see the log)");
        if (errstr && errstr_size)
                errstr[0] = '\0';
        return SCADLES_OK;
}

SCADLES_EXPORT char *scadles_stats(scadles_worker_t *w)
{
        if (!w)
                return NULL;
        pthread_mutex_lock(&w->lock);
        int finished = w->state == SC_API_FINISHED;
        pthread_mutex_unlock(&w->lock);
        return sc_api_stats_text(w, finished);
}

SCADLES_EXPORT scadles_resp_err_t
scadles_predict(scadles_worker_t *w, const char *topic, const void *key, size_t key_len,
                const void *value, size_t value_len, const scadles_header_t *headers,
                size_t header_cnt, float *probabilities, size_t n_probabilities, int32_t *label,
                uint64_t *model_version, char *errstr, size_t errstr_size)
{
        if (!w || !sc_api_rec_ok(topic, key, key_len, value, value_len, headers, header_cnt))
                return sc_api_errf(SCADLES_ERR_INVALID_ARG, errstr, errstr_size,
                                   "scadles_predict: NULL worker or topic, or NULL data or "
                                   "header name with a non-zero length");
        return sc_api_pred_run(w->pred, w->sw, topic, key, key_len, value, value_len, headers,
                               header_cnt, probabilities, n_probabilities, label, model_version,
                               errstr, errstr_size);
}

SCADLES_EXPORT void scadles_destroy(scadles_worker_t *w)
{
        if (!w)
                return;
        scadles_finish(w, SC_API_FINISH_MS, NULL, 0);
        for (sc_api_rec_t *r = w->head, *next; r; r = next) {
                next = r->next;
                free(r);
        }
        sc_api_pred_destroy(w->pred);
        sc_worker_destroy(w->sw);
        scadles_conf_destroy(w->conf);
        pthread_cond_destroy(&w->work);
        pthread_cond_destroy(&w->room);
        pthread_mutex_destroy(&w->lock);
        pthread_mutex_destroy(&w->engine);
        free(w);
}
