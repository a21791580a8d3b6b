/* agg_state.h — internals of the aggregator runtime shared by its files:
 * the driver (aggregator.c) over its checkpoints (aggregator_ckpt.c), its
 * Prometheus families (aggregator_metrics.c) and its reporting
 * (aggregator_report.c), which call nothing of the driver: the per-shard
 * state, the aggregator struct and the rejection kinds. */
#ifndef SC_AGG_STATE_H
#define SC_AGG_STATE_H

#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include "sc_aggregator.h"
#include "sc_auth.h"
#include "sc_bcast.h"
#include "sc_buf.h"
#include "sc_job.h"
#include "sc_kafka_admin.h"
#include "sc_kafka_util.h"
#include "sc_mem.h"
#include "sc_monitor.h"
#include "sc_nn.h"
#include "sc_server.h"

/* Stale updates (and workers' drift reports) logged one by one; further
 * ones are only counted. */
#define SC_AGG_STALE_LOGGED 20

/* Why a record was not applied. */
typedef enum sc_agg_rej {
        SC_REJ_CORRUPT, /* framing, CRC, sizes */
        SC_REJ_VERSION, /* unknown wire version or flags */
        SC_REJ_DECODE,  /* a field out of range */
        SC_REJ_FOREIGN, /* a message of another type on J.grad */
        SC_REJ_SHARD,   /* shard field differs from the partition */
        SC_REJ_PAYLOAD, /* codec payload invalid or of the wrong length */
        SC_REJ_UPDATE,  /* refused by the shard server (worker id, kind, seq 0) */
        SC_REJ_FUTURE,  /* a round update computed against a version not reached */
        SC_REJ_MODEL,   /* unusable J.model record */
        SC_REJ_CTL,     /* unusable J.ctl record */
        SC_REJ_AUTH,    /* authenticated job: unsigned, unknown signer or a tag that fails */
        SC_REJ_LIMIT,   /* refused by the job's limits (norm, samples, non-finite step) */
        SC_REJ_AHEAD,   /* seq more than job.limits.seq_window ahead */
        SC_REJ__END
} sc_agg_rej_t;

extern const char *const sc_agg_rej_names[SC_REJ__END];

/* Delivery reports of one holding of a shard: its broadcasts or its
 * snapshots. A new holding gets new ones; a released holding's go to the
 * aggregator's retired list while reports are still due (they point here). */
typedef struct sc_agg_dv {
        sc_kafka_delivery_t dv;
        int snapshots; /* 1: J.model snapshots; 0: J.bcast broadcasts */
        int shard;
        struct sc_agg_dv *next; /* in the retired list */
} sc_agg_dv_t;

typedef struct sc_agg_shard {
        int held;
        sc_server_t *srv;
        int64_t next;     /* J.grad offset of the next record (all before it are included) */
        int64_t pub_next; /* `next` at the last publication */
        uint64_t pub_version;
        double pub_time;
        sc_kafka_gap_t gap;
        /* the model broadcast (J.bcast): the workers' view, its deliveries */
        sc_bcast_pub_t *bpub;
        sc_agg_dv_t *bdv;
        /* the shard's J.model snapshots in flight: this holding's own, so
         * that a release waits for none of another shard's, nor of an
         * earlier holding of this one */
        sc_agg_dv_t *sdv;
        int key_pending; /* a keyframe awaits its delivery report (its offset) */
        double bcast_time;
        double t_step;  /* monotonic time of the last version advance (or the assignment) */
        double t_round; /* when the open round's first turn came (0: none yet) */
        /* A round update ahead of the shard's version waits (partition
         * paused, re-read from its offset) until the version moves. */
        int parked;
        uint64_t parked_version;
        double parked_since;
        /* kept after release, for the summary */
        int seen;
        uint64_t version;
        int64_t offset;
} sc_agg_shard_t;

struct sc_aggregator {
        sc_aggregator_spec_t spec;
        const sc_conf_t *conf;
        sc_kafka_topic_spec_t topics[SC_JOB__NTOPICS];
        char group[SC_KAFKA_ADMIN_NAME_MAX], reader_group[SC_KAFKA_ADMIN_NAME_MAX + 8];
        rd_kafka_t *consumer, *reader, *ctl, *producer;
        sc_job_t *job; /* the engine: layout, initial model, servers, decode, membership */
        size_t n;
        int nshards, nworkers;
        sc_agg_shard_t *shards;
        sc_agg_dv_t *retired; /* released holdings' trackers with reports still due */
        sc_buf_t buf;
        uint8_t *live; /* (workers) as the held shards' servers have it */
        int round_based, publish_every;
        uint64_t rej[SC_REJ__END];
        uint64_t records, bytes_in, bytes_out, publishes, publish_failed, applied, duplicates,
            stale, late, lost, ctl_records, restored, initialized, assigned, revoked,
            lost_assignments, parks, steps, bcasts, bcast_keys, bcast_bytes, bcast_failed;
        double t0, last_record, last_progress, first_assign;
        sc_mem_trim_t trim;               /* handing freed memory back (sc_mem.h) */
        double t_unreach;                 /* last time no broker was reachable (idle time pauses) */
        sc_kafka_reach_t reach;           /* the group consumer's broker reachability */
        double first_update, last_update; /* monotonic times of the first / last applied update */
        uint64_t progress_applied;
        sc_auth_t auth;
        uint8_t *ahead_logged; /* (nworkers) a refused seq jump of the worker was logged */
        uint64_t clipped, rolled_back;
        uint64_t rounds_timed_out; /* rounds closed by job.sync.round_timeout */
        uint64_t drift_reports;    /* workers' drift events read on J.ctl */
        sc_err_t fatal;
        char fatal_str[1024];
        struct sc_agg_ckpt *ckpt; /* train.checkpoint state (aggregator_ckpt.c); NULL before */
        sc_monitor_t *mon;        /* the Prometheus endpoint; NULL without metrics.listen */
        sc_prom_hist_t h_stale;   /* versions between an applied update's read and the shard's */
        sc_prom_hist_t h_round;   /* seconds between a shard's version advances */
        sc_prom_hist_t h_apply;   /* seconds one update's apply took */
};

#define sc_agg_log(agg, level, ...) sc_logf((agg)->spec.log, (agg)->spec.opaque, level, __VA_ARGS__)
/* Counts a rejected record; logs the first of each kind with its place. */
void sc_agg_reject(sc_aggregator_t *agg, sc_agg_rej_t kind, const char *topic, int32_t partition,
                   int64_t offset, const char *why);
/* The kind of reject a record's decode error is. */
sc_agg_rej_t sc_agg_rej_of(sc_err_t err);
void sc_agg_progress(sc_aggregator_t *agg, double now);
/* Counts and logs what the shard server refused or undid (limits). */
void sc_agg_limits(sc_aggregator_t *agg, int p, int64_t offset, uint32_t worker,
                   const sc_apply_result_t *res, const char *why);

/* aggregator_metrics.c: the histograms' bounds, and a snapshot of the
 * Prometheus families when one is due. */
void sc_agg_metrics_init(sc_aggregator_t *agg);
void sc_agg_metrics(sc_aggregator_t *agg, double now);
/* Counts and logs a worker's drift report (J.ctl). */
void sc_agg_drift(sc_aggregator_t *agg, const sc_wire_control_t *c);

/* aggregator_ckpt.c: train.checkpoint, the job's model assembled from
 * J.model and the shards held here. tick writes it every
 * train.checkpoint_interval s; final after the last publications. */
void sc_agg_ckpt_tick(sc_aggregator_t *agg, double now);
void sc_agg_ckpt_final(sc_aggregator_t *agg);
void sc_agg_ckpt_free(sc_aggregator_t *agg);

#endif
