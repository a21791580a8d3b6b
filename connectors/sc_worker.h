/* sc_worker.h — the training runtime of one worker: streams -> batches ->
 * training, standalone (the update is applied locally) or as a member of a
 * distributed job (config section job.*: updates to J.grad, the global model
 * from J.model, membership on J.ctl, samples injected over J.inject;
 * docs/DISTRIBUTED.md). Records come from the Kafka source
 * (sc_kafka_source.h) or are pushed in by a host (sc_worker_push).
 *
 * Single-threaded: every call on one thread; the library never prints or
 * exits: human lines go to the log callback. Times `now` are seconds on the
 * caller's monotonic clock.
 *
 * Driver loop:
 *
 *   sc_worker_new(&w, &spec, ...);
 *   while (!sc_worker_done(w, &reason))
 *           sc_worker_poll(w, now(), 10, ...);     (push mode: push records first)
 *   sc_worker_finish(w, ...);                         (drain, commit, leave)
 *   char *j = sc_worker_stats_json(w); ...; free(j);
 *   sc_worker_destroy(w);
 *
 * Offsets: a data record's offset becomes committable only after the update
 * that used it was acknowledged (standalone: at once; distributed: by the
 * broker's delivery report of every shard's update). With the Kafka source
 * the worker commits itself; in push mode the host asks sc_worker_commits(). */
#ifndef SC_WORKER_H
#define SC_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "sc_conf.h"
#include "sc_decode.h"
#include "sc_err.h"
#include "sc_nn.h"

typedef struct sc_worker_s sc_worker_t;

#include "sc_log.h"

typedef enum sc_worker_input {
        SC_WORKER_INPUT_KAFKA, /* the worker's own consumer (source.* section) */
        SC_WORKER_INPUT_PUSH,  /* records pushed with sc_worker_push() */
} sc_worker_input_t;

typedef struct sc_worker_spec {
        const sc_conf_t *conf; /* borrowed; must outlive the worker */
        sc_worker_input_t input;
        int distributed;     /* 1 = member of the job conf->job (worker_id below) */
        int worker_id;       /* distributed: 0 .. job.workers-1 */
        double throttle;     /* samples/s the trainer is limited to (a slower device); 0 = none */
        double inject_alpha; /* distributed: probability a batch shares part of itself (0 = off) */
        double inject_beta;  /* distributed: fraction of such a batch shared, (0, 1] */
        int eval;            /* 1 = load the test set (conf->worker.eval also needed) */
        sc_log_fn log;       /* may be NULL */
        void *log_opaque;
} sc_worker_spec_t;

/* Fills the defaults: Kafka input, standalone, eval on, nothing else. */
void sc_worker_spec_defaults(sc_worker_spec_t *spec);

/* Builds model, optimizer, test set and (Kafka input) the source; in
 * distributed mode also the job's producer, model reader and control
 * clients, sends `join` and starts from the current global model.
 * SC_ERR_CONFIG for configuration errors (errstr names the JSON path),
 * SC_ERR_IO for broker or data trouble. On success *wp is the caller's. */
sc_err_t sc_worker_new(sc_worker_t **wp, const sc_worker_spec_t *spec, char *errstr,
                       size_t errstr_size);

/* Sends `leave` (distributed) and frees everything. Accepts NULL. Call
 * sc_worker_finish() first to commit. */
void sc_worker_destroy(sc_worker_t *w);

/* One header of a pushed record (borrowed for the call). */
typedef struct sc_worker_header {
        const char *name;
        const void *value;
        size_t size;
} sc_worker_header_t;

/* Push mode: hands one record to the stream of topic (created on first
 * use, up to 64 topics). Offsets of a partition must increase. Returns
 * SC_OK (buffered or counted as rejected: malformed records are never an
 * error), SC_ERR_AGAIN when the stream is full (persist policy: keep the
 * record, pause the partition, push it again after a poll), SC_ERR_NOMEM
 * when no memory could be had for its row (not taken either: keep it and
 * push it again a little later), SC_ERR_STATE for an offset not after the
 * partition's last one, SC_ERR_INVAL in Kafka mode. timestamp_ms is the
 * record's timestamp (informational). */
sc_err_t sc_worker_push(sc_worker_t *w, const char *topic, int32_t partition, int64_t offset,
                        const void *key, size_t key_len, const void *value, size_t value_len,
                        const sc_worker_header_t *headers, size_t n_headers, int64_t timestamp_ms,
                        char *errstr, size_t errstr_size);

/* The time now (the clock sc_worker_poll is given): the arrival time of
 * the records pushed next, and the run's start the first time. A host that
 * pushes before its first poll calls it first. */
void sc_worker_clock(sc_worker_t *w, double now);

/* Push mode: whether the host should pause (1) or may resume (0) the
 * partitions of topic (persist backpressure); -1 for an unknown topic. */
int sc_worker_paused(const sc_worker_t *w, const char *topic);

/* Push mode: calls fn for every (topic, partition) whose committable
 * position (next offset to read) advanced since the last call. With
 * train.checkpoint (and train.resume) the position is the last durable
 * checkpoint's: a host that commits it and is killed re-delivers every
 * record the resumed model lacks. */
typedef void (*sc_worker_commit_fn)(void *opaque, const char *topic, int32_t partition,
                                    int64_t next_offset);
void sc_worker_commits(sc_worker_t *w, sc_worker_commit_fn fn, void *opaque);

/* Does the work due at time now: serves Kafka (waiting up to timeout_ms
 * when idle; push mode never waits), trains a ready batch, sends and
 * acknowledges updates, installs new models, heartbeats, commits,
 * evaluates, logs progress. SC_ERR_IO on a fatal error (divergence, a
 * consumer or producer failure): stop the run. */
sc_err_t sc_worker_poll(sc_worker_t *w, double now, int timeout_ms, char *errstr,
                        size_t errstr_size);

/* 1 once a stop condition holds (worker.duration, worker.max_samples,
 * worker.idle_exit, or sc_worker_stop()); *reason (may be NULL) names it. */
int sc_worker_done(const sc_worker_t *w, const char **reason);
/* Asks the worker to stop (e.g. on a signal); reason is a static string. */
void sc_worker_stop(sc_worker_t *w, const char *reason);

/* End of a run: reads nothing more; unless stopped for an "error", trains
 * what the shuffle pool holds (the last batch partial; a distributed worker
 * under its policy) for up to timeout_ms; waits (up to timeout_ms) for
 * updates in flight, commits what was acknowledged, sends `leave`, evaluates on the
 * whole test set. SC_ERR_IO if a commit or delivery failed. */
sc_err_t sc_worker_finish(sc_worker_t *w, int timeout_ms, char *errstr, size_t errstr_size);

/* Test accuracy and mean loss of the current model on the first n test
 * samples (0 = all). SC_ERR_STATE without a test set. */
sc_err_t sc_worker_eval(sc_worker_t *w, size_t n, double *acc, double *loss);

/* Counters as one JSON object (the summary documented in docs/STREAMS.md
 * and docs/DISTRIBUTED.md: records, accounting identity, batches, updates
 * sent / acknowledged, bytes up and down, test accuracy...). Caller frees;
 * NULL if out of memory. */
char *sc_worker_stats_json(sc_worker_t *w);

/* A few read-outs for progress displays. */
typedef struct sc_worker_counters {
        uint64_t steps, samples;            /* batches trained, samples in them */
        uint64_t updates_sent;              /* distributed: update messages produced */
        uint64_t updates_acked;             /* ... acknowledged by the broker */
        uint64_t bytes_up, bytes_down;      /* distributed: update bytes out, model bytes in */
        uint64_t dense_bytes;               /* what the updates would weigh uncompressed */
        uint64_t model_version;             /* smallest shard version held */
        uint64_t injected_out, injected_in; /* samples shared / foreign samples mixed in */
        double last_acc;                    /* last periodic test accuracy, -1 before */
        double loss;                        /* mean training loss of the last batch */
        uint64_t preq_samples;              /* prequential: samples scored before training */
        double preq_acc, preq_loss;         /* ... their accuracy and mean loss since start */
        double preq_window_acc;             /* ... accuracy over the last eval.window samples */
        uint64_t drift_events;              /* rises of the prequential error (drift.*) */
        uint64_t drift_last;                /* prequential sample of the last one (0: none) */
} sc_worker_counters_t;
void sc_worker_counters(const sc_worker_t *w, sc_worker_counters_t *c);

/* The live model: every step and every J.model install changes its
 * parameters, so read it only where no other call on w can run. */
sc_model_t *sc_worker_model(sc_worker_t *w);

/* The decoder of topic's records (its source.topics element, else
 * streams.*). Reads only what sc_worker_new() set: any thread may call it
 * while another drives the worker. */
void sc_worker_decode_spec(const sc_worker_t *w, const char *topic, sc_decode_spec_t *ds);

#endif
