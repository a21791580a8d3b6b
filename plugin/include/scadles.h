/* scadles.h — the public C API of libscadles: embed an online trainer in any
 * program that sees Kafka-style records (topic, partition, offset, key,
 * value, headers, timestamp), and the librdkafka interceptor plugin built on
 * it (docs/PLUGIN.md). This is the only installed header.
 *
 * Life cycle:
 *
 *   scadles_conf_t *conf = scadles_conf_new();
 *   scadles_conf_load(conf, "job.json", errstr, sizeof(errstr));
 *   scadles_conf_set(conf, "optim.lr", "0.05", errstr, sizeof(errstr));
 *   scadles_conf_set_log_cb(conf, my_log);          (optional)
 *   scadles_conf_set_stats_cb(conf, my_stats);      (optional; "statistics.interval.ms")
 *   scadles_worker_t *w = scadles_worker_new(conf, errstr, sizeof(errstr));
 *   scadles_start(w);                               (or call scadles_poll() yourself)
 *   for each record: scadles_push(w, topic, partition, offset, key, ..., value, ...);
 *   scadles_flush(w, 60000);                        (train what was pushed)
 *   scadles_finish(w, 10000, errstr, sizeof(errstr));   (evaluate, final statistics)
 *   scadles_destroy(w);
 *
 * Threading: scadles_push() and scadles_stats() may be called from any
 * thread at any time between scadles_worker_new() and scadles_destroy().
 * Every other call on a worker comes from one thread at a time (the
 * "owner"). Training runs either on the owner's thread inside
 * scadles_poll(), or on the library's own thread between scadles_start()
 * and scadles_stop(). Callbacks run on the training thread (and on the
 * owner's thread inside scadles_worker_new() and scadles_finish()).
 *
 * The library never prints and never exits: messages go to the log
 * callback; failures are returned as scadles_resp_err_t with a readable
 * message in errstr (a buffer of errstr_size bytes, always NUL-terminated)
 * where the call takes one. Passing NULL where a handle is expected returns
 * SCADLES_ERR_INVALID_ARG (or NULL / nothing for calls without an error
 * return). Using a handle after it was destroyed is undefined behaviour. */
#ifndef SCADLES_H
#define SCADLES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define SCADLES_EXPORT __attribute__((visibility("default")))
#else
#define SCADLES_EXPORT
#endif

/* The version: its one source (the Makefile reads these three lines for
 * the library's file name and soname). As 0xMMmmrr00 (major, minor,
 * revision), and as text. */
#define SCADLES_VERSION_MAJOR 0
#define SCADLES_VERSION_MINOR 1
#define SCADLES_VERSION_PATCH 0
#define SCADLES_VERSION                                                                            \
        ((SCADLES_VERSION_MAJOR << 24) | (SCADLES_VERSION_MINOR << 16) |                           \
         (SCADLES_VERSION_PATCH << 8))
#define SCADLES__STR(x) #x
#define SCADLES__XSTR(x) SCADLES__STR(x)
#define SCADLES_VERSION_STR                                                                        \
        SCADLES__XSTR(SCADLES_VERSION_MAJOR)                                                       \
        "." SCADLES__XSTR(SCADLES_VERSION_MINOR) "." SCADLES__XSTR(SCADLES_VERSION_PATCH)

/* The library's version (compare with SCADLES_VERSION for the headers). */
SCADLES_EXPORT int scadles_version(void);
SCADLES_EXPORT const char *scadles_version_str(void);

/* Error codes. */
typedef enum scadles_resp_err_t {
        SCADLES_OK = 0,
        SCADLES_ERR_INVALID_ARG, /* NULL handle or argument out of range */
        SCADLES_ERR_CONFIG,      /* invalid configuration (errstr names the property) */
        SCADLES_ERR_NOMEM,       /* out of memory */
        SCADLES_ERR_STATE,       /* not valid now (e.g. push after finish, poll while started) */
        SCADLES_ERR_QUEUE_FULL,  /* push: queue full, record counted as dropped */
        SCADLES_ERR_TIMED_OUT,   /* flush or finish did not complete in time */
        SCADLES_ERR_IO,          /* data, file or broker trouble (errstr says which) */
        SCADLES_ERR_RUNTIME,     /* training stopped on an error (divergence, Kafka) */
        SCADLES_ERR_UNSUPPORTED, /* valid request this build cannot serve */
        SCADLES_ERR__END
} scadles_resp_err_t;

/* A static one-line description of err (never NULL, also for unknown codes). */
SCADLES_EXPORT const char *scadles_err2str(scadles_resp_err_t err);

/* ---- configuration ---------------------------------------------------- */

typedef struct scadles_conf_s scadles_conf_t;
typedef struct scadles_worker_s scadles_worker_t;

/* Log callback: level is syslog's (3 error, 4 warning, 6 info, 7 debug),
 * line has no newline and is valid during the call only. */
typedef void(scadles_log_cb_t)(const scadles_worker_t *w, int level, const char *line,
                               void *opaque);

/* Statistics callback: json is one JSON object (the worker's counters, the
 * embedding queue's counters, and "test_accuracy" once evaluated; "final":
 * true in the last one, from scadles_finish()). Valid during the call only. */
typedef void(scadles_stats_cb_t)(scadles_worker_t *w, const char *json, void *opaque);

/* A new configuration with every default (docs/CONFIG.md). Caller owns it:
 * scadles_conf_destroy(), or scadles_worker_new() takes it. NULL on OOM. */
SCADLES_EXPORT scadles_conf_t *scadles_conf_new(void);

/* Frees conf. Accepts NULL. Never call it on a conf a worker took. */
SCADLES_EXPORT void scadles_conf_destroy(scadles_conf_t *conf);

/* A deep copy of conf (callbacks and opaque included); NULL on OOM or NULL conf. */
SCADLES_EXPORT scadles_conf_t *scadles_conf_dup(const scadles_conf_t *conf);

/* Replaces the training configuration with the JSON text (a job file's
 * contents); origin names it in messages (NULL: "<json>"). Properties set
 * with scadles_conf_set() before are lost; embedding properties and
 * callbacks are kept. Atomic: on error conf is unchanged and errstr names
 * the JSON path ("$.optim.lr: ..."). */
SCADLES_EXPORT scadles_resp_err_t scadles_conf_set_json(scadles_conf_t *conf, const char *json,
                                                        const char *origin, char *errstr,
                                                        size_t errstr_size);

/* The same with the contents of the file at path. */
SCADLES_EXPORT scadles_resp_err_t scadles_conf_load(scadles_conf_t *conf, const char *path,
                                                    char *errstr, size_t errstr_size);

/* Sets one property. name is a training property ("optim.lr",
 * "model.layers[1].units", "kafka.bootstrap.servers", ...: docs/CONFIG.md;
 * value parsed as JSON, else taken as a string) or an embedding property
 * (docs/CONFIG.md, section embedding):
 *
 *   statistics.interval.ms   stats callback period, 0 = never (default 0)
 *   queue.buffering.max.records  records the push queue holds (default 10000)
 *   queue.full.policy        block | drop: when the queue is full, push
 *                            blocks up to queue.block.ms then drops, or
 *                            drops at once; drops are counted (default block)
 *   queue.block.ms           how long push may block, -1 = until there is
 *                            room (back-pressure) (default 1000)
 *   predict.publish.steps    scadles_predict: the training thread also publishes
 *                            its model every this many steps, 0 = only when a
 *                            caller asked, at flush and at finish (default 0)
 *   distributed              true: a member of the job in job.* (updates to
 *                            J.grad through the worker's own producer)
 *   worker.id                distributed: this worker's id, 0..job.workers-1
 *   eval                     false: no held-out evaluation (default true)
 *
 * SCADLES_ERR_CONFIG with errstr naming the property if the name is unknown
 * or the value invalid; conf is then unchanged. */
SCADLES_EXPORT scadles_resp_err_t scadles_conf_set(scadles_conf_t *conf, const char *name,
                                                   const char *value, char *errstr,
                                                   size_t errstr_size);

/* Callbacks (NULL removes one) and the opaque pointer they receive. */
SCADLES_EXPORT void scadles_conf_set_log_cb(scadles_conf_t *conf, scadles_log_cb_t *log_cb);
SCADLES_EXPORT void scadles_conf_set_stats_cb(scadles_conf_t *conf, scadles_stats_cb_t *stats_cb);
SCADLES_EXPORT void scadles_conf_set_opaque(scadles_conf_t *conf, void *opaque);

/* The resolved training configuration as JSON, secret kafka values
 * (passwords, keys) shown as "(redacted)". Caller frees with
 * scadles_mem_free(); NULL on OOM or NULL conf. */
SCADLES_EXPORT char *scadles_conf_dump(const scadles_conf_t *conf);

/* ---- the worker --------------------------------------------------------- */

/* Builds the trainer (model, optimizer, held-out set; in distributed mode
 * the job's producer and model reader). Takes ownership of conf on
 * success (the caller must not use or destroy it afterwards); on failure
 * returns NULL with errstr set and conf stays the caller's. Not started:
 * call scadles_start() or scadles_poll(). */
SCADLES_EXPORT scadles_worker_t *scadles_worker_new(scadles_conf_t *conf, char *errstr,
                                                    size_t errstr_size);

/* One record header, borrowed for the duration of scadles_push(). */
typedef struct scadles_header_s {
        const char *name;  /* NUL-terminated */
        const void *value; /* may be NULL */
        size_t size;
} scadles_header_t;

/* Hands one record to the worker: copies everything (nothing is borrowed
 * after the call) into a bounded queue and returns; training happens on
 * the training thread. Any thread. Offsets of a partition must increase.
 * timestamp is in ms since the epoch (informational, -1 if unknown).
 * Returns SCADLES_OK (queued: malformed records are counted as rejected by
 * the trainer, never an error), SCADLES_ERR_QUEUE_FULL (dropped and
 * counted, after blocking per queue.full.policy), SCADLES_ERR_STATE after
 * scadles_finish() or once the worker stopped on an error or a stop
 * condition (record counted as refused), SCADLES_ERR_INVALID_ARG for NULL
 * w / topic, or NULL data with a non-zero length. Calling it after
 * scadles_destroy() is undefined behaviour. */
SCADLES_EXPORT scadles_resp_err_t scadles_push(scadles_worker_t *w, const char *topic,
                                               int32_t partition, int64_t offset, const void *key,
                                               size_t key_len, const void *value, size_t value_len,
                                               const scadles_header_t *headers, size_t header_cnt,
                                               int64_t timestamp);

/* Owner thread, when not started: hands queued records to the trainer and
 * does the training work that is due, waiting up to timeout_ms for records
 * when idle. Calls the stats callback when its interval elapsed.
 * SCADLES_ERR_STATE while started or after finish, SCADLES_ERR_RUNTIME if
 * training stopped on an error (the log callback said why). */
SCADLES_EXPORT scadles_resp_err_t scadles_poll(scadles_worker_t *w, int timeout_ms);

/* Starts the library's training thread (owner thread). SCADLES_ERR_STATE
 * if already started or finished. */
SCADLES_EXPORT scadles_resp_err_t scadles_start(scadles_worker_t *w);

/* Stops and joins the training thread (records already queued stay queued;
 * scadles_poll() may be used again). SCADLES_OK also when not started. */
SCADLES_EXPORT scadles_resp_err_t scadles_stop(scadles_worker_t *w);

/* Owner thread: waits up to timeout_ms (-1 = no limit) until every record
 * pushed so far was handed to the trainer and trained (what is left in its
 * buffers is less than one batch). Drives the training itself when not
 * started. SCADLES_ERR_TIMED_OUT if time ran out, SCADLES_ERR_RUNTIME if
 * training stopped on an error. */
SCADLES_EXPORT scadles_resp_err_t scadles_flush(scadles_worker_t *w, int timeout_ms);

/* Owner thread: the end of the run. Stops the training thread and takes
 * no more records; trains what the trainer still holds (its shuffle pool
 * and a last partial batch: their records' offsets could not be committed
 * otherwise; scadles_flush leaves less than one batch there), within
 * timeout_ms, then waits for updates in flight (distributed), writes the
 * checkpoint (train.checkpoint), commits, evaluates on the whole held-out set, logs
 * "test accuracy: A (test loss L)" (level 5) and calls the stats callback a last time
 * with "final": true. Later pushes return SCADLES_ERR_STATE. Idempotent
 * (SCADLES_OK again). scadles_destroy() calls it if it was not called. */
SCADLES_EXPORT scadles_resp_err_t scadles_finish(scadles_worker_t *w, int timeout_ms, char *errstr,
                                                 size_t errstr_size);

/* Commit callback: the host may commit next_offset for topic [partition]
 * (valid during the call only). */
typedef void(scadles_commit_cb_t)(const char *topic, int32_t partition, int64_t next_offset,
                                  void *opaque);

/* The offsets the host may commit on its own consumer: calls cb for every
 * (topic, partition) whose committable position (the next offset to read)
 * advanced since the last call. Every record below the position was
 * trained, dropped or rejected (and counted). With train.checkpoint (and
 * train.resume, the default) the position is the last checkpoint's
 * instead: a host that commits it and is killed re-delivers every record
 * the resumed model lacks and none it holds (docs/PLUGIN.md, Restarts).
 * Records still in the push queue are not covered. Any thread; waits for
 * the training step in progress. SCADLES_ERR_INVALID_ARG for a NULL w or
 * cb. */
SCADLES_EXPORT scadles_resp_err_t scadles_commits(scadles_worker_t *w, scadles_commit_cb_t *cb,
                                                  void *opaque);

/* The current statistics as one JSON object (as given to the stats
 * callback). Any thread. Caller frees with scadles_mem_free(); NULL on OOM
 * or NULL w. */
SCADLES_EXPORT char *scadles_stats(scadles_worker_t *w);

/* Finishes (if needed, with a 10 s limit), frees the worker and its
 * configuration. Owner thread; no scadles_push() may be running or follow.
 * Accepts NULL. */
SCADLES_EXPORT void scadles_destroy(scadles_worker_t *w);

/* ---- inline scoring with the live model ------------------------------------ */

/* Scores one record (decoded like a pushed record of topic: the topic's
 * source.topics element, else streams.*) with a copy of the worker's model
 * and returns the class probabilities (softmax of the output), the most
 * probable class and the model's version (standalone: training steps so
 * far; distributed: the smallest shard version of the J.model held, 0
 * before the first).
 * Nothing is trained or counted; the record is not pushed.
 *
 * Any thread, any number of threads, at any time between
 * scadles_worker_new() and scadles_destroy(), concurrently with training
 * (started or polled) and with each other (calls are serialized among
 * themselves, never blocking the training thread for longer than one copy
 * of the parameters). The copy is the model as the training thread last
 * published it: it publishes one after a training round in which a caller
 * found its copy older than the live model (so a caller sees the new model
 * one round later), every predict.publish.steps steps when that is set,
 * and at the end of scadles_flush() and scadles_finish() (so a prediction
 * after a flush uses the model that trained on everything flushed).
 *
 * probabilities: room for n_probabilities floats, at least the model's
 * output count (classes), or NULL (then n_probabilities is ignored);
 * label and model_version may be NULL. Returns SCADLES_OK,
 * SCADLES_ERR_INVALID_ARG (NULL w / topic, NULL data with a non-zero
 * length, n_probabilities below the classes: errstr says how many),
 * SCADLES_ERR_IO (a malformed record: errstr names the fault kind, as the
 * dead-letter topic does, and why), SCADLES_ERR_NOMEM. */
/* (kept on the SCADLES_EXPORT line: tests/integration/exports.sh reads it) */
/* clang-format off */
SCADLES_EXPORT scadles_resp_err_t scadles_predict(scadles_worker_t *w, const char *topic,
                                                  const void *key, size_t key_len,
                                                  const void *value, size_t value_len,
                                                  const scadles_header_t *headers,
                                                  size_t header_cnt, float *probabilities,
                                                  size_t n_probabilities, int32_t *label,
                                                  uint64_t *model_version, char *errstr,
                                                  size_t errstr_size);
/* clang-format on */

/* ---- records and predictions as structs (calls that can grow) ------------- */

/* One record, borrowed for the duration of a call. size is the struct's
 * size as the caller was compiled (SCADLES_RECORD_INIT sets it, and every
 * other field's default): fields added by later versions go at the end,
 * and the library reads only the first size bytes, so a caller built
 * against an older scadles.h keeps working. */
typedef struct scadles_record_s {
        size_t size;
        const char *topic; /* required */
        int32_t partition; /* push: required (>= 0) */
        int64_t offset;    /* push: required (>= 0), increasing per partition */
        const void *key;   /* may be NULL (key_len 0) */
        size_t key_len;
        const void *value; /* may be NULL (value_len 0) */
        size_t value_len;
        const scadles_header_t *headers; /* header_cnt of them, or NULL */
        size_t header_cnt;
        int64_t timestamp; /* ms since the epoch, -1 if unknown */
} scadles_record_t;
#define SCADLES_RECORD_INIT                                                                        \
        {                                                                                          \
                sizeof(scadles_record_t), NULL, -1, -1, NULL, 0, NULL, 0, NULL, 0, -1              \
        }

/* One prediction: probabilities (room for n_probabilities floats, at least
 * the model's classes, or NULL) is the caller's input; label and
 * model_version are set by the call. size as in scadles_record_t
 * (SCADLES_PREDICTION_INIT). */
typedef struct scadles_prediction_s {
        size_t size;
        float *probabilities;
        size_t n_probabilities;
        int32_t label;          /* the most probable class */
        uint64_t model_version; /* as scadles_predict's; the checkpoint's step for a model handle */
} scadles_prediction_t;
#define SCADLES_PREDICTION_INIT                                                                    \
        {                                                                                          \
                sizeof(scadles_prediction_t), NULL, 0, -1, 0                                       \
        }

/* scadles_push() with the record as a struct. SCADLES_ERR_INVALID_ARG also
 * for a NULL rec or a size below that of version 0.1's struct. */
SCADLES_EXPORT scadles_resp_err_t scadles_push_record(scadles_worker_t *w,
                                                      const scadles_record_t *rec);

/* scadles_predict() with the record and the prediction as structs (the
 * record's partition, offset and timestamp are not used). */
SCADLES_EXPORT scadles_resp_err_t scadles_predict_record(scadles_worker_t *w,
                                                         const scadles_record_t *rec,
                                                         scadles_prediction_t *pred, char *errstr,
                                                         size_t errstr_size);

/* ---- serving a trained model ----------------------------------------------- */

typedef struct scadles_model_s scadles_model_t;

/* Opens the checkpoint at path (a worker's train.checkpoint, or the model
 * `scadles model pull` writes) for scoring, without training: no worker,
 * no thread, no Kafka client. conf gives the model's layout (model.*) and
 * how records are decoded (source.topics[] of a record's topic, else
 * streams.*; with source.unlabelled true, records carry no label, as for
 * scadles predict); it is copied, the caller keeps it. NULL with errstr
 * set if the configuration has no valid model, or the file is missing,
 * corrupt or of another model's shape. */
SCADLES_EXPORT scadles_model_t *scadles_model_open(const scadles_conf_t *conf, const char *path,
                                                   char *errstr, size_t errstr_size);

/* Scores one record with the opened model: pred as in scadles_predict_record
 * (model_version is the checkpoint's step). Any thread, any number of
 * threads (calls on one handle are serialized: one forward pass at a
 * time; open one handle per thread to score in parallel). Errors as
 * scadles_predict's. */
SCADLES_EXPORT scadles_resp_err_t scadles_model_predict(scadles_model_t *m,
                                                        const scadles_record_t *rec,
                                                        scadles_prediction_t *pred, char *errstr,
                                                        size_t errstr_size);

/* Frees m. Accepts NULL. No scadles_model_predict may be running. */
SCADLES_EXPORT void scadles_model_close(scadles_model_t *m);

/* Frees memory the library returned (scadles_stats, scadles_conf_dump). */
SCADLES_EXPORT void scadles_mem_free(void *ptr);

#ifdef __cplusplus
}
#endif

#endif
