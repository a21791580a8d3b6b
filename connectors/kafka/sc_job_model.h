/* sc_job_model.h — a reader of a distributed job's global model on its
 * broadcast J.bcast: it follows every shard partition from the newest
 * keyframe on, applies each delta into one flat parameter buffer (the
 * aggregators' view, bit for bit) and keeps each shard's version and
 * applied-seq vector (docs/DISTRIBUTED.md, "Model broadcast"). Used by
 * workers and by evaluators that only watch the model. Single-threaded. */
#ifndef SC_JOB_MODEL_H
#define SC_JOB_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "sc_conf.h"
#include "sc_err.h"

typedef struct sc_job_model_s sc_job_model_t;

/* Reads conf->job's J.bcast (job.shards partitions) for a model of nparams
 * floats whose initial values are init (copied; the seeded initial model).
 * Each partition is read from its newest record at the time of the call
 * (sc_job_model_ready() tells when those arrived). conf is borrowed. */
sc_err_t sc_job_model_new(sc_job_model_t **jmp, const sc_conf_t *conf, const float *init,
                          size_t nparams, char *errstr, size_t errstr_size);
/* Accepts NULL. */
void sc_job_model_destroy(sc_job_model_t *jm);

/* A last check of a shard's new state before it is taken: params is the
 * whole model with shard s's new values in place. Nonzero refuses it: the
 * shard and its follower go back to their state before the record, which
 * is counted as `loss`. The worker's: the loss on its last batch is finite. */
typedef int (*sc_job_model_check_fn)(void *arg, const float *params, int s);
void sc_job_model_set_check(sc_job_model_t *jm, sc_job_model_check_fn fn, void *arg);

/* The reader's consumer (for sc_kafka_waker_watch). Borrowed. */
rd_kafka_t *sc_job_model_handle(sc_job_model_t *jm);

/* Serves the reader for up to timeout_ms (0 = do not wait) and installs
 * what arrived; *changed (may be NULL) gets the shards updated. Bad records
 * are counted, never an error; SC_ERR_IO for a fatal consumer error. */
sc_err_t sc_job_model_poll(sc_job_model_t *jm, int timeout_ms, int *changed, char *errstr,
                           size_t errstr_size);

/* 1 once every partition's newest record as of creation was read (or gave
 * up after a bad one). */
int sc_job_model_ready(const sc_job_model_t *jm);

/* The global parameters (nparams floats), borrowed. */
const float *sc_job_model_params(const sc_job_model_t *jm);
/* Shards, shard s's range [begin, end), version and a counter of installs. */
int sc_job_model_shards(const sc_job_model_t *jm);
void sc_job_model_range(const sc_job_model_t *jm, int s, size_t *begin, size_t *end);
uint64_t sc_job_model_version(const sc_job_model_t *jm, int s);
uint64_t sc_job_model_stamp(const sc_job_model_t *jm, int s);
/* Smallest version over the shards. */
uint64_t sc_job_model_min_version(const sc_job_model_t *jm);
/* Highest contiguous applied seq of worker in shard s (0 = none). */
uint64_t sc_job_model_applied(const sc_job_model_t *jm, int s, uint32_t worker);
/* Smallest applied seq over the workers 0..n_workers-1 and shards (ssp). */
uint64_t sc_job_model_min_clock(const sc_job_model_t *jm);

typedef struct sc_job_model_stats {
        uint64_t records;   /* J.bcast records read */
        uint64_t installed; /* keyframes and deltas applied */
        uint64_t keyframes; /* of them keyframes */
        uint64_t seeks;     /* jumps to a keyframe (start, catch-up) or back */
        uint64_t bad;       /* not a usable model record of their shard (skipped); of them: */
        uint64_t auth_bad;  /* authenticated job: unsigned or a tag that does not verify */
        uint64_t nonfinite; /* a parameter is NaN or infinite */
        uint64_t jump;      /* version job.limits.model_jump or more ahead of the held one */
        uint64_t magnitude; /* a parameter beyond job.limits.model_max_abs after it */
        uint64_t loss;      /* refused by the check (sc_job_model_set_check) */
        uint64_t rollback;  /* keyframes older than the view (a replay, a deposed owner's):
                               skipped, not counted in bad */
        uint64_t bytes;     /* bytes read */
} sc_job_model_stats_t;
const sc_job_model_stats_t *sc_job_model_stats(const sc_job_model_t *jm);
/* The rate sum (samples/s) the last record installed carried: the stream
 * rates the job's live workers announced, as its aggregator knew them; 0
 * when it carried none. */
double sc_job_model_rate_sum(const sc_job_model_t *jm);

#endif
