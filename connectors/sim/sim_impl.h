/* sim_impl.h — the simulator's parts: the virtual-clock event queue, the
 * in-memory bus links, and the device model (stream arrivals, buffer policy,
 * data partition, data injection). Internal to connectors/sim_*.c. */
#ifndef SC_SIM_IMPL_H
#define SC_SIM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#include "sc_buf.h"
#include "sc_job.h"
#include "sc_mix.h"
#include "sc_nn.h"
#include "sc_optim.h"
#include "sc_rng.h"
#include "sc_server.h"
#include "sc_bcast.h"
#include "sc_sim.h"

/* ---- event queue: a binary heap ordered by (time, insertion number) ---- */

typedef struct sc_sim_event {
        double t;
        uint64_t seq; /* ties at equal t run in insertion order: deterministic */
        int type;
        int dev;
        void *ptr; /* owned by the event until it is popped */
} sc_sim_event_t;

typedef struct sc_sim_queue {
        sc_sim_event_t *ev;
        size_t n, cap;
        uint64_t next_seq;
} sc_sim_queue_t;

sc_err_t sc_sim_queue_push(sc_sim_queue_t *q, double t, int type, int dev, void *ptr);
/* Pops the earliest event into *ev; returns 0 when empty. */
int sc_sim_queue_pop(sc_sim_queue_t *q, sc_sim_event_t *ev);
/* Frees the heap; ptrs still queued are released with free_ptr (may be NULL). */
void sc_sim_queue_free(sc_sim_queue_t *q, void (*free_ptr)(int type, void *ptr));

/* ---- a one-way link: FIFO transmission at bps, then latency ---- */

typedef struct sc_sim_link {
        double bps;
        double latency;
        double free_at; /* the link is busy transmitting until then */
        uint64_t bytes;
} sc_sim_link_t;

/* Sends bytes at time now; returns the arrival time at the other end. */
double sc_sim_link_send(sc_sim_link_t *link, double now, size_t bytes);
/* Device links drawn per sim.up_bps_max / down_bps_max / latency_max (log-
 * uniform bandwidth, uniform latency; the fixed values when the maxima are
 * 0) from rng. */
void sc_sim_links_draw(const sc_sim_spec_t *spec, sc_rng_t *rng, sc_sim_link_t *up,
                       sc_sim_link_t *down);

/* ---- device stream and buffer ---- */

typedef struct sc_sim_stream {
        double rate;       /* samples/s, constant */
        double last_t;     /* arrivals are counted up to here */
        uint64_t buffered; /* samples waiting to be trained on */
        uint64_t arrived;  /* all arrivals */
        uint64_t dropped;  /* truncation drops */
        uint64_t peak;     /* largest buffered */
        int truncation;
        double window;        /* truncation keeps ceil(rate * window) */
        uint64_t min_keep;    /* ... but never fewer than the batch being waited for */
        const uint32_t *pool; /* dataset indices this device's stream draws from */
        size_t pool_n;
} sc_sim_stream_t;

/* Counts the arrivals up to t and applies the buffer policy. */
void sc_sim_stream_advance(sc_sim_stream_t *s, double t);
/* Earliest time >= now at which `want` samples are buffered (now if already). */
double sc_sim_stream_ready_at(const sc_sim_stream_t *s, double now, uint64_t want);
/* Takes n buffered samples (n <= buffered), drawing their dataset indices. */
void sc_sim_stream_take(sc_sim_stream_t *s, sc_rng_t *rng, size_t n, uint32_t *idx);

/* Device i's stream rate under spec (draws from rng for the S sets). */
double sc_sim_draw_rate(const sc_sim_spec_t *spec, int i, sc_rng_t *rng);

/* ---- the simulation (sim.c runs it, sim_metrics.c reports it) ---- */

enum { SC_EV_READY, SC_EV_COMPUTED, SC_EV_RECV, SC_EV_MODEL, SC_EV_EVAL, SC_EV_LEAVE, SC_EV_JOIN };

#define SC_SIM_MSG_HDR 32 /* bytes of framing counted per whole-shard model message */

/* An update in flight: the wire message a worker produces to J.grad. */
typedef struct sc_sim_msg {
        uint32_t worker;
        int shard;
        size_t len;
        uint8_t bytes[];
} sc_sim_msg_t;

typedef struct sc_sim_snap {
        int refs;
        int shard;
        float params[]; /* the shard's range */
} sc_sim_snap_t;

typedef struct sc_sim_delivery {
        sc_sim_snap_t *snap;
        sc_sync_model_info_t info;
} sc_sim_delivery_t;

/* The model broadcast of one shard (sim.downlink_bcast): the publisher and
 * its records since the newest keyframe, record k at offset first + k. */
typedef struct sc_sim_bshard {
        sc_bcast_pub_t *pub;
        sc_buf_t *log;
        int nlog, cap;
        int64_t first;
} sc_sim_bshard_t;

typedef struct sc_sim_dev {
        sc_sync_worker_t *w;
        sc_codec_t **codec;         /* (shards) */
        sc_sync_model_info_t *info; /* (shards) latest model info per shard */
        uint64_t *read_ver;         /* (shards) shard versions the last compute started from */
        sc_rng_t rng;
        sc_sim_stream_t stream;
        uint32_t *pool;                     /* owned dataset indices of this device's labels */
        float *params, *sync_params, *grad; /* (n) each */
        float *bn_state;                    /* (nstate) own batchnorm statistics, or NULL */
        sc_sgd_t local;                     /* local-step optimizer (local_momentum > 0) */
        double spc;                         /* compute seconds per sample */
        sc_sim_link_t up, down;
        int busy;         /* an EV_READY or EV_COMPUTED is pending */
        int offline;      /* left (churn): its events and messages are dropped */
        double last_take; /* time of the last batch taken (scadles_drain windows) */
        int last_batch;
        double data_wait;       /* seconds spent waiting for samples, closed waits */
        double data_wait_since; /* start of the open wait; < 0 = none */
        double send_wait;       /* seconds blocked on the uplink */
        int pulls;              /* async_pull: model replies still to come */
        sc_bcast_sub_t *bsub;   /* (shards) downlink_bcast: the device's reader */
        float *bview;           /* (n) downlink_bcast: its copy of the view */
} sc_sim_dev_t;

struct sc_sim_s {
        sc_sim_spec_t spec;
        const sc_conf_t *conf;
        const sc_dataset_t *train, *test;
        sc_job_t *job;         /* the engine: layout, initial model, codecs, servers */
        sc_model_t *model;     /* the job's, computed on by every device in turn */
        sc_server_t **servers; /* (shards) */
        sc_sim_bshard_t *bsh;  /* (shards) downlink_bcast, else NULL */
        const size_t *begin;   /* (shards + 1) shard s is [begin[s], begin[s + 1]): the job's */
        int ns;
        size_t n;
        int nd;
        sc_sim_dev_t *devs;
        sc_sim_queue_t q;
        sc_mix_inject_t *inject; /* data injection: dataset indices by sharing device */
        sc_rng_t inj_rng;
        float *x, *tmp;
        int32_t *y;
        int *votes; /* (nd) adaptive codec votes */
        uint32_t *bidx;
        int max_batch;
        sc_buf_t buf, payload; /* an update message, its codec payload */
        sc_adsp_tuner_t *tuner;
        double commit_rate, local_lr;
        /* ADACOMM (adacomm_interval > 0): tau in use, the start of the
         * interval, loss sums of the devices' first steps (F0) and of the
         * interval's last quarter (F) */
        int tau;
        double ada_start, ada_f0_sum, ada_sum;
        uint64_t ada_f0_n, ada_n;
        sc_sim_link_t ingress; /* the server's ingress link (server_ingress_bps) */
        double apply_free_at;  /* the server is busy applying until then (apply_rate) */
        double server_wait;    /* seconds updates spent queued for ingress and apply */
        /* metrics */
        double now, loss_sum, stale_sum;
        uint64_t loss_n, stale_n, samples, inject_bytes;
        int done, stalled;
        uint64_t lost_msgs; /* updates dropped because their sender went offline */
        double reached_t;   /* first time test accuracy >= target_acc; < 0 = not yet */
        double last_acc, last_test_loss;
        double last_loss, last_stale; /* of the last metric window (NAN / 0 before any) */
};

/* sim_bcast.c (downlink_bcast): set up and free the broadcast; send brings
 * shard sh's broadcast up to the server's version and device i's copy up to
 * it, as a Kafka reader would (from its position, or the newest keyframe),
 * adding the bytes of the records read to *bytesp; *viewp gets the view. */
sc_err_t sc_sim_bcast_init(sc_sim_t *sim, char *errstr, size_t errstr_size);
void sc_sim_bcast_free(sc_sim_t *sim);
sc_err_t sc_sim_bcast_start(sc_sim_t *sim);
sc_err_t sc_sim_bcast_send(sc_sim_t *sim, int sh, int i, size_t *bytesp, const float **viewp);

/* The model version: the least over the shards. */
uint64_t sc_sim_version(const sc_sim_t *sim);
/* Evaluates the servers' model and writes one metrics line (final: the end
 * summary). Resets the per-window sums. */
void sc_sim_line(sc_sim_t *sim, FILE *out, int final);

#endif
