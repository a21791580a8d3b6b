/* sc_sync.h — synchronization policies (bsp, scadles, asp, ssp, adacomp, adsp,
 * local-sgd): the worker half as a clock-free state machine that hands back
 * actions, the server half's per-policy aggregation state, and the ADSP
 * commit-rate tuner. Everything works on flat float buffers; no I/O, no clock
 * reads: time (seconds, any origin) is always an argument.
 *
 * Conventions shared with sc_server.h:
 * - A shard is a contiguous range [begin, end) of the flat parameter buffer;
 *   an update targets exactly one shard and its coordinates are relative to
 *   the shard's begin.
 * - An update is dense (values has n floats, indices NULL) or sparse (count
 *   uint32 indices, each < n, with count values).
 * - Per worker, updates carry a sequence number starting at 1 and increasing
 *   by 1 per update sent to that shard; the server applies each (worker, seq)
 *   exactly once. */
#ifndef SC_SYNC_H
#define SC_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "sc_err.h"

typedef enum sc_sync_kind {
        SC_SYNC_BSP,      /* fixed batch, equal weights, one update per live worker per round */
        SC_SYNC_SCADLES,  /* rate-proportional batches, sample-weighted, linear LR scaling */
        SC_SYNC_ASP,      /* apply every update on arrival */
        SC_SYNC_SSP,      /* asynchronous with bounded staleness s (worker clocks) */
        SC_SYNC_ADACOMP,  /* asynchronous, per-coordinate staleness-scaled steps */
        SC_SYNC_ADSP,     /* workers commit accumulated local updates at a tuned rate */
        SC_SYNC_LOCALSGD, /* tau local steps, then the server averages deltas / models */
        SC_SYNC__END
} sc_sync_kind_t;

/* Name <-> kind ("bsp", "scadles", "asp", "ssp", "adacomp", "adsp", "localsgd"). */
const char *sc_sync_kind_name(sc_sync_kind_t kind);
/* Returns SC_ERR_CONFIG (naming the valid names) for an unknown name. */
sc_err_t sc_sync_kind_parse(const char *name, sc_sync_kind_t *kind, char *errstr,
                            size_t errstr_size);

/* Policy parameters. Zero fields take the defaults of sc_sync_spec_defaults(). */
typedef struct sc_sync_spec {
        sc_sync_kind_t kind;
        int n_workers;       /* worker ids are 0 .. n_workers-1 */
        int batch;           /* bsp / asp / ssp / adacomp / local steps: samples per step */
        int b_min, b_max;    /* scadles: batch clamp [8, 1024] */
        double window;       /* scadles: batch window in seconds (b_i = S_i * window), 1 */
        int window_auto;     /* scadles: 1 = window base_batch / sum_j S_j (the global batch is
                                base_batch); window is the fallback until a sum is known */
        double base_batch;   /* scadles: B of the LR scaling; 0 = 64 * n_workers */
        double lr_scale_max; /* scadles: the linear scale sum_b / B at most this (0 = no cap) */
        int staleness;       /* ssp: s, 40 */
        int max_inflight;    /* asp / ssp / adacomp: a worker computes only on a model that
                                holds all but at most this many of its own updates sent (its
                                gradients are then at most this many of its own steps stale);
                                0 = no bound (not defaulted: the simulator's 0 stays); 4 */
        int late_rounds;     /* round policies: a rejoiner's update this many versions behind
                                at most joins the current round (0 = none; default 2) */
        int local_steps;     /* localsgd: tau, 40 */
        int send_models;     /* localsgd: 1 = workers send models, 0 = deltas */
        uint32_t ada_window; /* adacomp: W updates of exact staleness history, 1024 */
        double gamma;        /* adsp: check period Gamma seconds, 60 */
        double commit_min;   /* adsp: B_min seconds, 10 */
        double commit_rate;  /* adsp: initial DeltaC (commits per Gamma), 1 */
        double adsp_mu;      /* adsp: server momentum mu (0 = none) */
        double adsp_eta;     /* adsp: server momentum eta; 0 = 1 / n_workers */
} sc_sync_spec_t;

/* The defaults' one home: sc_sync_spec_defaults and the configuration's
 * job.sync.* rows (core/conf_table.c) both take them from here. */
#define SC_SYNC_DEF_BATCH 64
#define SC_SYNC_DEF_B_MIN 8
#define SC_SYNC_DEF_B_MAX 1024
#define SC_SYNC_DEF_WINDOW 1
#define SC_SYNC_DEF_STALENESS 40
#define SC_SYNC_DEF_MAX_INFLIGHT 4
#define SC_SYNC_DEF_LATE_ROUNDS 2
#define SC_SYNC_DEF_LOCAL_STEPS 40
#define SC_SYNC_DEF_ADA_WINDOW 1024
#define SC_SYNC_DEF_GAMMA 60
#define SC_SYNC_DEF_COMMIT_MIN 10
#define SC_SYNC_DEF_COMMIT_RATE 1
void sc_sync_spec_defaults(sc_sync_spec_t *spec, sc_sync_kind_t kind, int n_workers);
/* Fills zero fields with defaults and checks ranges; errors name the field
 * ("sync.staleness: must be >= 0"). */
sc_err_t sc_sync_spec_check(sc_sync_spec_t *spec, char *errstr, size_t errstr_size);

/* 1 if the policy's updates are gradients the server steps with its
 * optimizer (bsp, scadles, asp, ssp, adacomp); 0 if they are model deltas or
 * models (adsp, localsgd), whose local steps the worker takes itself. */
int sc_sync_sends_gradients(sc_sync_kind_t kind);
/* 1 if the server aggregates in rounds (bsp, scadles, localsgd). */
int sc_sync_is_round_based(sc_sync_kind_t kind);

/* ScaDLES rate-proportional batch: clamp(round(rate * window), b_min, b_max). */
int sc_sync_scadles_batch(double rate, double window, int b_min, int b_max);
/* ScaDLES auto window: base_batch / sum_rate seconds, the window at which
 * the global batch sum_j S_j * window is base_batch (before the clamp of each
 * b_i), capped at 1e6 s; 0 when there is no rate sum (sum_rate not > 0). */
double sc_sync_scadles_window(double base_batch, double sum_rate);
/* ScaDLES aggregation weight r_i = b_i / sum_j b_j. */
double sc_sync_scadles_weight(double b_i, double sum_b);
/* ScaDLES effective LR: lr * sum_b / base_batch (lr is the scheduled, unscaled LR),
 * the scale sum_b / base_batch at most scale_max when scale_max > 0. */
double sc_sync_scadles_lr(double lr, double sum_b, double base_batch, double scale_max);
/* ADACOMM (local SGD with adaptive communication): the local steps of an
 * interval whose start has training loss f, ceil(sqrt(f / f0) * tau0), f0 the
 * initial loss; at least 1, tau0 when f or f0 is not a positive number. */
int sc_sync_adacomm_tau(int tau0, double f, double f0);
/* ADSP commit interval B_i = max(B_min, Gamma / DeltaC - O_i), seconds. */
double sc_sync_adsp_interval(double gamma, double commit_rate, double overhead, double commit_min);

/* ---- update as the server receives it ---------------------------------- */

typedef enum sc_update_kind {
        SC_UPDATE_GRAD,  /* mean gradient: the server steps params -= lr * f(g) */
        SC_UPDATE_DELTA, /* model delta w_local - w_at_sync: the server adds it (scaled) */
        SC_UPDATE_MODEL, /* full local model (localsgd with send_models) */
} sc_update_kind_t;

typedef struct sc_update {
        uint32_t worker;  /* < n_workers */
        uint64_t seq;     /* >= 1, per worker and shard */
        uint64_t t_read;  /* server version the worker's model had */
        uint32_t samples; /* samples behind the update (scadles weight), >= 1 */
        sc_update_kind_t kind;
        size_t n;                /* shard length the sender assumed (checked) */
        const float *values;     /* dense: (n); sparse: (count) */
        const uint32_t *indices; /* NULL = dense; else (count), each < n */
        size_t count;            /* sparse entries */
} sc_update_t;

/* ---- worker half -------------------------------------------------------- */

typedef enum sc_sync_act_kind {
        SC_ACT_COMPUTE, /* run one step on `batch` samples (see local_step) */
        SC_ACT_SEND,    /* send an update of `update_kind` (grads, or delta/model) */
        SC_ACT_WAIT,    /* wait for the condition in `wait` (a model / clocks) */
} sc_sync_act_kind_t;

typedef enum sc_sync_wait_kind {
        SC_WAIT_NONE,
        SC_WAIT_VERSION, /* a model whose version >= act.version */
        SC_WAIT_CLOCK,   /* min live worker clock >= act.clock (ssp) */
        SC_WAIT_APPLIED, /* a model that includes this worker's update act.seq (adsp) */
} sc_sync_wait_kind_t;

typedef struct sc_sync_act {
        sc_sync_act_kind_t kind;
        int batch;                    /* COMPUTE: samples wanted */
        int local_step;               /* COMPUTE: 1 = apply the gradient to the local model
                                         (adsp, localsgd); 0 = keep it to send */
        sc_update_kind_t update_kind; /* SEND */
        uint64_t seq;    /* SEND: the update's sequence number; WAIT_APPLIED: the seq */
        uint64_t t_read; /* SEND: version held when its COMPUTE was handed out */
        sc_sync_wait_kind_t wait;
        uint64_t version; /* WAIT_VERSION */
        uint64_t clock;   /* WAIT_CLOCK */
        double commit_at; /* adsp COMPUTE: the time of the next commit (seconds) */
} sc_sync_act_t;

/* What a worker learns with a model (or a control message). With several
 * shards, pass the minimum of each field over the shards' latest infos. */
typedef struct sc_sync_model_info {
        uint64_t version;     /* server version of the model */
        uint64_t applied_seq; /* highest contiguous seq of this worker the model includes */
        uint64_t min_clock;   /* slowest live worker's clock (ssp) */
} sc_sync_model_info_t;

typedef struct sc_sync_worker_s sc_sync_worker_t;

/* A worker's policy state machine. spec is copied (after sc_sync_spec_check).
 * The worker starts holding model version 0 with clock 0. */
sc_err_t sc_sync_worker_new(sc_sync_worker_t **workerp, const sc_sync_spec_t *spec,
                            uint32_t worker_id, char *errstr, size_t errstr_size);
void sc_sync_worker_destroy(sc_sync_worker_t *worker);

/* The next action at time now. Calling it again without reporting progress
 * returns the same action (a WAIT stays a WAIT until its condition holds). */
void sc_sync_worker_next(sc_sync_worker_t *worker, double now, sc_sync_act_t *act);
/* A COMPUTE finished on `samples` samples. */
void sc_sync_worker_computed(sc_sync_worker_t *worker, double now, int samples);
/* A SEND was handed to the transport at time now. */
void sc_sync_worker_sent(sc_sync_worker_t *worker, double now);
/* A graceful stop: a worker of a policy that accumulates local steps
 * (adsp, localsgd) and holds some commits them now, fewer than its commit
 * interval or tau: the next sc_sync_worker_next is the SEND. Returns 1 if
 * so, 0 when there is nothing to commit, the worker waits for a model, or
 * the policy sends every step. */
int sc_sync_worker_commit_now(sc_sync_worker_t *worker);
/* A model (or clock broadcast) arrived; the caller installs the parameters. */
void sc_sync_worker_model(sc_sync_worker_t *worker, double now, const sc_sync_model_info_t *info);
/* scadles: the measured stream rate (samples/s) that sizes the next batch. */
void sc_sync_worker_set_rate(sc_sync_worker_t *worker, double rate);
/* scadles with window_auto: the sum of the stream rates of the workers in
 * the rounds (samples/s), which sets the window. */
void sc_sync_worker_set_rate_sum(sc_sync_worker_t *worker, double sum);
/* scadles: the stream rate and the window the next batch is sized with
 * (the auto window once a rate sum is known, else spec.window). */
double sc_sync_worker_rate(const sc_sync_worker_t *worker);
double sc_sync_worker_window(const sc_sync_worker_t *worker);
/* adsp: the commit rate DeltaC broadcast by the tuner. */
void sc_sync_worker_set_commit_rate(sc_sync_worker_t *worker, double commit_rate);
/* localsgd: the local steps tau of the next rounds (>= 1; others are ignored),
 * e.g. from sc_sync_adacomm_tau. */
void sc_sync_worker_set_local_steps(sc_sync_worker_t *worker, int tau);

/* Read-outs: local clock (updates sent), model version held, local steps since
 * the last sync, seconds spent in WAIT so far, last measured commit overhead. */
uint64_t sc_sync_worker_clock(const sc_sync_worker_t *worker);
uint64_t sc_sync_worker_version(const sc_sync_worker_t *worker);
int sc_sync_worker_local_steps(const sc_sync_worker_t *worker);
double sc_sync_worker_wait_seconds(const sc_sync_worker_t *worker);
double sc_sync_worker_overhead(const sc_sync_worker_t *worker);

/* ---- server half: AdaComp staleness in bounded memory ------------------- */

/* Per-coordinate staleness sigma_i = how many of the d = t - t_read updates
 * applied since t_read touched coordinate i. Memory: a ring of the last W
 * updates' index lists plus a per-coordinate count over the ring. Exact for
 * d <= W; for d > W only the last W updates are seen (sigma_i <= W), a lower
 * bound of the true staleness. d = 0 gives sigma = 0 (a full step). */
typedef struct sc_adacomp_s sc_adacomp_t;

sc_err_t sc_adacomp_new(sc_adacomp_t **adap, size_t n, uint32_t window);
void sc_adacomp_destroy(sc_adacomp_t *ada);
/* Updates applied so far (t). */
uint64_t sc_adacomp_count(const sc_adacomp_t *ada);
/* Writes sigma for each entry of the update (indices NULL = dense: all n
 * coordinates, sigma has n entries). t_read > t is SC_ERR_INVAL; duplicate or
 * out-of-range indices are SC_ERR_INVAL (nothing changes). */
sc_err_t sc_adacomp_staleness(sc_adacomp_t *ada, uint64_t t_read, const uint32_t *indices,
                              size_t count, uint32_t *sigma);
/* Records an applied update's coordinates (t advances by 1). */
sc_err_t sc_adacomp_record(sc_adacomp_t *ada, const uint32_t *indices, size_t count);
/* params[i] -= lr * g_i / max(1, sigma_i) for one update, then records it. */
sc_err_t sc_adacomp_apply(sc_adacomp_t *ada, float *params, float lr, uint64_t t_read,
                          const uint32_t *indices, const float *values, size_t count);
/* Serialized ring (for server snapshots): size, write, read back. */
size_t sc_adacomp_save_size(const sc_adacomp_t *ada);
void sc_adacomp_save(const sc_adacomp_t *ada, uint8_t *out);
sc_err_t sc_adacomp_load(sc_adacomp_t *ada, const uint8_t *in, size_t len);

/* ---- ADSP commit-rate tuner -------------------------------------------- */

/* Least-squares fit of l(t) = 1/(a2 * t + b) + c0 (a2 = a^2 >= 0): for each c0
 * on a grid below min(loss), 1/(l - c0) is linear in t; the c0 with the least
 * squared error in loss space wins. Needs n >= 3 points. */
typedef struct sc_lossfit {
        double a2, b, c0;
        double sse; /* sum of squared residuals in loss space */
} sc_lossfit_t;

sc_err_t sc_lossfit_fit(const double *t, const double *loss, size_t n, sc_lossfit_t *fit);
double sc_lossfit_eval(const sc_lossfit_t *fit, double t);
/* Time at which the fitted curve reaches target (INFINITY if never). */
double sc_lossfit_time_to(const sc_lossfit_t *fit, double target);

typedef struct sc_adsp_tuner_spec {
        double gamma;          /* seconds per candidate / check period */
        double c_init;         /* first candidate DeltaC */
        double c_step;         /* candidate increment */
        double c_max;          /* largest candidate */
        double target_loss;    /* last_reward = 1 / predicted seconds to reach it (informational:
                                  the search ranks candidates by speed, not by it) */
        double rise;           /* re-search when the period's mean loss rises by >= rise (0.3) */
        double research_every; /* seconds from the end of a search to the next; 0 = never */
        double warmup;         /* seconds at c_init before the first candidate; 0 = none */
} sc_adsp_tuner_spec_t;

typedef struct sc_adsp_tuner_s sc_adsp_tuner_t;

sc_err_t sc_adsp_tuner_new(sc_adsp_tuner_t **tunerp, const sc_adsp_tuner_spec_t *spec, double now,
                           char *errstr, size_t errstr_size);
void sc_adsp_tuner_destroy(sc_adsp_tuner_t *tuner);
/* A (time, training loss) observation, e.g. from worker reports. */
void sc_adsp_tuner_observe(sc_adsp_tuner_t *tuner, double t, double loss);
/* Call at any time; once per Gamma it evaluates the current candidate: with
 * one asymptote c0 fitted to all binned losses of the search, each candidate's
 * speed a2 (the slope of 1/(l - c0) over its period) is compared with the best
 * so far; one slower by more than one standard error of the difference
 * settles on the best, any other moves on to c + c_step (up to c_max, at most
 * 64 periods a search). A re-search starts one step below the rate in use
 * (not below c_init).
 * Returns the commit rate to use (broadcast it when it changes). */
double sc_adsp_tuner_tick(sc_adsp_tuner_t *tuner, double now);
int sc_adsp_tuner_searching(const sc_adsp_tuner_t *tuner);
/* Reward of the last evaluated candidate: 1 / its predicted seconds from the
 * period's last loss to target_loss (0 if none, or the target lies below c0). */
double sc_adsp_tuner_last_reward(const sc_adsp_tuner_t *tuner);

#endif
