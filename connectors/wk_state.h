/* wk_state.h — the worker runtime's state, shared by its files, each
 * calling only those below it: the loop (worker.c: start, poll, stop,
 * checkpoint and resume, push mode) over its Prometheus families
 * (worker_metrics.c), its summary (worker_stats.c), its distributed half
 * (worker_job.c), and its own step (worker_step.c: the ingest path it owns,
 * one training step, the drift detector). Internal to connectors/. */
#ifndef SC_WK_STATE_H
#define SC_WK_STATE_H

#include <stdint.h>

#include <jansson.h>

#include <librdkafka/rdkafka.h>

#include "sc_batch.h"
#include "sc_buf.h"
#include "sc_codec.h"
#include "sc_data.h"
#include "sc_decode.h"
#include "sc_drift.h"
#include "sc_ingest.h"
#include "sc_job.h"
#include "sc_job_auth.h"
#include "sc_job_model.h"
#include "sc_kafka_admin.h"
#include "sc_kafka_source.h"
#include "sc_kafka_util.h"
#include "sc_mem.h"
#include "sc_metrics.h"
#include "sc_mix.h"
#include "sc_monitor.h"
#include "sc_nn.h"
#include "sc_optim.h"
#include "sc_rng.h"
#include "sc_sync.h"
#include "sc_worker.h"

typedef struct sc_wk_job sc_wk_job_t;

/* The distributed half's state (worker_job.c; counters read by
 * worker_stats.c). */
#define SC_WJ_MAX_UNSENT 4096
/* Seconds of waiting for a model before the worker says so (and between). */
#define SC_WJ_WAIT_SAY 15.0
/* Update latency: send times of the last steps (a ring) and the first
 * latency samples kept for the summary's percentiles (ms). */
#define SC_WJ_LAT_RING 1024
#define SC_WJ_LAT_MAX 8192

/* One step's updates awaiting their delivery reports. */
typedef struct sc_wj_pend {
        sc_worker_t *w;
        int remaining, failed;
        double t_send; /* monotonic seconds at produce */
        size_t n_ids, cap_ids;
        uint64_t *ids; /* batches behind the update */
        struct sc_wj_pend *next;
} sc_wj_pend_t;

struct sc_wk_job {
        sc_kafka_topic_spec_t topics[SC_JOB__NTOPICS];
        rd_kafka_t *prod;
        rd_kafka_t *inj; /* J.inject reader, NULL without injection */
        sc_job_model_t *jm;
        sc_auth_t auth; /* authenticated job: this worker signs with its key */
        sc_sync_worker_t *sync;
        sc_job_t *job;       /* the engine: layout, initial model, codecs, update encode */
        sc_codec_t **codecs; /* per shard */
        uint64_t *stamps;    /* per shard: the install counter of the model held */
        uint64_t *held_v;    /* per shard: version of the model held */
        float *sync_params;  /* delta policies: the global model at the last sync */
        float *scratch;      /* delta / model payload input */
        sc_buf_t payload, msg;
        int shards;
        size_t n;
        uint64_t seq_base;
        int sends_grads, round_based, ready;
        uint64_t unsent[SC_WJ_MAX_UNSENT];
        size_t n_unsent;
        sc_wj_pend_t *pend_head, *pend_tail;
        sc_wj_pend_t *pend_free; /* delivered steps' records, reused by the next sends */
        double t_hb;
        int away;        /* left the barriers: no data to train (sc_wj_barrier) */
        int waiting;     /* the policy waits (for a model): a ready batch is no reason to spin */
        double t_cannot; /* since when no batch can form (-1: one can) */
        uint64_t aways;  /* times it left */
        /* injection pool: foreign samples, one ring per sending worker */
        sc_mix_shared_t *pool;
        int *draw_src;      /* (tcap) scratch: the source of each sample drawn */
        uint64_t *inj_from; /* per worker id: its samples mixed into this worker's batches */
        uint64_t inj_seq;   /* last J.inject seq sent: wall-clock microseconds, rising */
        uint64_t *inj_last; /* per worker id: the newest J.inject seq taken from it */
        /* counters */
        uint64_t sent, acked, failed, bytes_up, dense_bytes, msgs_out;
        uint64_t injected_out, injected_in, foreign_recv, own_skipped, inj_bad;
        uint64_t ctl_sent, waits, inj_auth, inj_replayed;
        uint64_t drift_sent;        /* drift events reported on J.ctl */
        double base_batch;          /* job.sync.base_batch, its default filled in */
        double auto_sum, auto_said; /* worker.window "auto": the rate sum used; window last said */
        int auto_heard;             /* a broadcast has carried the job's rate sum */
        double t_wait, t_wait_said; /* since when the policy waits for a model; last said */
        char first_err[256];
        /* latency: produce -> acknowledged, produce -> visible in J.model */
        uint64_t ring_seq[SC_WJ_LAT_RING];
        double ring_t[SC_WJ_LAT_RING];
        uint64_t ring_n;    /* steps pushed */
        uint64_t *vis_next; /* per shard: the next ring step not yet visible */
        float lat_ack[SC_WJ_LAT_MAX], lat_vis[SC_WJ_LAT_MAX];
        size_t n_ack, n_vis;
};

/* A partition's commit position as of the last durable checkpoint. */
typedef struct sc_wk_durable {
        char *topic;
        int32_t partition;
        int64_t next;
        int reported; /* given to the host by sc_worker_commits */
} sc_wk_durable_t;

struct sc_worker_s {
        sc_worker_spec_t spec;
        const sc_conf_t *conf;
        size_t numel;
        int n_classes;
        sc_model_t *model;
        sc_sgd_t sgd;
        int have_sgd;
        sc_sched_spec_t sched;
        sc_rng_t rng; /* dropout, injection draws */
        sc_dataset_t test;
        sc_batch_t *batch; /* over the first rows of tx, ty (sc_batch_wrap) */
        float *tx;         /* training rows: the batch plus foreign samples, (tcap, numel) */
        int32_t *ty;
        int tcap;
        /* input */
        sc_kafka_source_t *src;
        sc_ingest_t *ingest; /* push mode: the pushed topics' streams and batcher */
        sc_batch_spec_t bspec;
        sc_stream_spec_t sspec;
        uint64_t push_rejected_logged;
        /* run state */
        int started, draining, stopped, finished;
        const char *reason;
        double t0, t_now, t_rx, t_prog, t_eval, t_commit, t_next;
        sc_mem_trim_t trim;      /* handing freed memory back (sc_mem.h) */
        double t_unreach;        /* last time no broker was reachable (idle time pauses) */
        double t_step0, t_step1; /* this run's first and last training step; -1 before */
        double t_caught;         /* last sc_wk_caught_up answer (asked once a second at most) */
        int caught;
        uint64_t rebalances;
        size_t in_since;
        /* counters */
        uint64_t steps, samples, batches;
        uint64_t steps0; /* steps a resumed checkpoint had taken (the schedule's) */
        double loss_sum, hits, last_loss;
        uint64_t seen;
        double last_acc, last_test_loss, t_last_acc;
        double final_acc, final_loss, elapsed;
        int evaluated;
        double lr;
        sc_metrics_t *preq;         /* prequential: batches scored before they train */
        sc_metrics_t *test_metrics; /* the last held-out evaluation */
        float *plogits;             /* (tcap, n_classes) */
        double t_ckpt;              /* last checkpoint written (train.checkpoint_interval) */
        uint64_t checkpoints;       /* written */
        int resumed;                /* started from train.checkpoint */
        int durable_commits;        /* commits no further than the last checkpoint */
        sc_wk_durable_t *durable;   /* push mode: what the last checkpoint covers */
        size_t n_durable;
        uint64_t resumed_samples; /* samples trained before the resume */
        sc_wk_job_t *job;         /* NULL = standalone */
        sc_monitor_t *mon;        /* the Prometheus endpoint; NULL without metrics.listen */
        sc_drift_t drift;         /* on the prequential error (drift.*) */
        uint64_t drift_events;
        uint64_t drift_last;     /* prequential sample of the last drift event */
        uint64_t boost_left;     /* drift.action boost: samples still trained at the raised rate */
        sc_kafka_waker_t *waker; /* distributed with a source: wakes on any client */
};

/* worker_step.c: the worker's own step (calls nothing above it). */
/* Drift events logged one by one; later ones every 100th. */
#define SC_WK_DRIFT_LOGGED 20
#define sc_wk_logf(w, level, ...) sc_logf((w)->spec.log, (w)->spec.log_opaque, level, __VA_ARGS__)
/* The batcher of the worker's ingest path. */
sc_batcher_t *sc_wk_batcher(sc_worker_t *w);
/* worker.window "auto" applies: rate batches (a fixed batch has no window). */
static inline int sc_wk_auto_window(const sc_conf_t *conf)
{
        return conf->worker.batch.window_auto && conf->worker.batch.mode == SC_BATCH_RATE;
}
/* 1 while what is buffered (and pooled foreign samples) makes a batch. */
int sc_wk_holds_batch(sc_worker_t *w);
sc_err_t sc_wk_ack(sc_worker_t *w, uint64_t id, char *errstr, size_t errstr_size);
/* Foreign samples to mix into a batch: copies up to max rows into x/y;
 * returns how many. */
typedef int (*sc_wk_mix_fn)(sc_worker_t *w, const sc_batch_t *batch, float *x, int32_t *y, int max);
/* Takes the ready batch, mixes in what mix (if not NULL) gives, computes the
 * gradient (and, local_step, applies it with the local optimizer). *idp =
 * the batch, *np = its own samples. SC_ERR_AGAIN if no batch is ready. */
sc_err_t sc_wk_train(sc_worker_t *w, double now, int local_step, sc_wk_mix_fn mix, uint64_t *idp,
                     int *np, char *errstr, size_t errstr_size);

/* worker_job.c: the distributed half. */
int sc_wk_job_waiting(const sc_worker_t *w);
/* Seconds the job's policy has been waiting for a model (0: not waiting,
 * or not a job worker). */
double sc_wk_job_waited(const sc_worker_t *w, double now);
sc_err_t sc_wk_job_new(sc_worker_t *w, char *errstr, size_t errstr_size);
void sc_wk_job_destroy(sc_worker_t *w);
/* Serves the job's clients, installs models, heartbeats, then runs the
 * policy's actions while batches are ready. */
sc_err_t sc_wk_job_poll(sc_worker_t *w, double now, char *errstr, size_t errstr_size);
/* Watches the job's clients (producer, J.model and J.inject readers). */
sc_err_t sc_wk_job_watch(sc_worker_t *w, sc_kafka_waker_t *wk, char *errstr, size_t errstr_size);
sc_err_t sc_wk_job_finish(sc_worker_t *w, int timeout_ms, char *errstr, size_t errstr_size);

/* worker_metrics.c: a snapshot of the Prometheus families when one is due. */
void sc_wk_metrics(sc_worker_t *w, double now);

/* worker_stats.c (sc_worker_counters and sc_worker_stats_json too) */
void sc_wk_progress(sc_worker_t *w, double now);
/* The distributed half's counters, and its "job" object of the summary. */
void sc_wk_job_counters(const sc_worker_t *w, sc_worker_counters_t *c);
void sc_wk_job_json(const sc_worker_t *w, json_t *j);

#endif
