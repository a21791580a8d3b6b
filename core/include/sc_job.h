/* sc_job.h — the job engine: what every party of a training job must agree
 * on, built once from the configuration and driven both by the Kafka runtime
 * (workers, aggregators) and by the simulator (devices, servers): the shard
 * layout, the seeded initial model, each shard's server spec, the per-shard
 * update codecs (one set of options), update encode (worker side), decode
 * and apply (server side), and the model broadcast's publishers.
 * Sans-I/O: bytes in and out of buffers. */
#ifndef SC_JOB_H
#define SC_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "sc_bcast.h"
#include "sc_buf.h"
#include "sc_codec.h"
#include "sc_conf.h"
#include "sc_err.h"
#include "sc_nn.h"
#include "sc_rng.h"
#include "sc_server.h"
#include "sc_sync.h"
#include "sc_wire.h"

/* Shard s of S over n parameters is the contiguous range
 * [floor(s * n / S), floor((s + 1) * n / S)) of the flat parameter buffer. */
void sc_job_shard_range(size_t n, int shards, int shard, size_t *beginp, size_t *endp);

/* The job's initial model: sc_model_new(conf->model) initialized with
 * sc_model_init() from stream 0 of sc_rng_seed(seed). Every party of a job
 * derives the same parameters from the same seed. rngp (may be NULL) gets
 * that stream as the initialization left it. *modelp is the caller's. */
sc_err_t sc_job_initial_seeded(const sc_conf_t *conf, uint64_t seed, sc_model_t **modelp,
                               sc_rng_t *rngp, char *errstr, size_t errstr_size);
/* The same with the job's seed, train.seed. */
sc_err_t sc_job_initial(const sc_conf_t *conf, sc_model_t **modelp, char *errstr,
                        size_t errstr_size);

/* The update codec's options: one set for every party. */
typedef struct sc_job_codec {
        sc_codec_id_t id;
        double ratio;       /* 0 = the codec's default */
        int error_feedback; /* -1 = the codec's default, else 0 / 1 */
        double delta;       /* adaptive: 0 = the default (0.3) */
        int vote;           /* adaptive: follow the devices' majority vote (the driver
                               collects the votes: only the simulator does) */
        int half, log8;     /* sparse values as IEEE half / 8-bit log codes */
        int rice;           /* sparse codecs: Rice-coded index gaps when smallest */
} sc_job_codec_t;

/* The codec parameters of c: the codec's defaults with c's options. */
void sc_job_codec_params(const sc_job_codec_t *c, sc_codec_params_t *params);

typedef struct sc_job_spec {
        int shards;
        const char *shards_key; /* names the shard count in errors ("$.job.shards") */
        uint64_t seed;          /* of the initial model */
        sc_sync_spec_t sync;    /* policy; n_workers = the job's workers */
        sc_job_codec_t codec;   /* worker updates */
        sc_server_limits_t limits;
        long total_steps;       /* > 0: the schedule's total_steps when the optim section
                                   gives none (the simulator's max_steps) */
        sc_bcast_spec_t bcast;  /* the model broadcast */
        double session_timeout; /* s of silence after which a worker is not live */
} sc_job_spec_t;

/* The Kafka job's spec: job.shards, train.seed, job.sync, job.codec.*,
 * job.limits, job.downlink, job.keyframe_interval, job.session_timeout. */
void sc_job_spec_conf(sc_job_spec_t *spec, const sc_conf_t *conf);

typedef struct sc_job_s sc_job_t;

/* Builds the job: the initial model (conf->model, spec->seed) and the shard
 * layout, checked (no shard may be empty). conf (model, optim) is borrowed
 * and must outlive the job; spec is copied. */
sc_err_t sc_job_new(sc_job_t **jobp, const sc_job_spec_t *spec, const sc_conf_t *conf, char *errstr,
                    size_t errstr_size);
/* Accepts NULL. */
void sc_job_destroy(sc_job_t *job);

const sc_job_spec_t *sc_job_spec(const sc_job_t *job);
/* The job's model: the initial parameters, and the tensor layout codecs and
 * broadcasts cut to shards. Owned by the job; a driver may compute on it
 * (sc_job_server_new then still starts from the initial parameters). */
sc_model_t *sc_job_model(const sc_job_t *job);
size_t sc_job_nparams(const sc_job_t *job);
int sc_job_shards(const sc_job_t *job);
/* Shard s's range [*beginp, *endp) of the flat parameter buffer. */
void sc_job_range(const sc_job_t *job, int shard, size_t *beginp, size_t *endp);
/* The layout as one array (shards + 1): shard s is [begin[s], begin[s + 1]).
 * Owned by the job. */
const size_t *sc_job_begins(const sc_job_t *job);
/* Stream 0 of the seed as the initial model's draw left it (the simulator
 * draws its stream rates on from there). */
void sc_job_rng(const sc_job_t *job, sc_rng_t *rng);

/* Shard s's server spec: spec->sync and limits, the optim section's
 * optimizer and schedule (stepped per shard version), the range. */
sc_err_t sc_job_server_spec(const sc_job_t *job, int shard, sc_server_spec_t *spec, char *errstr,
                            size_t errstr_size);
/* A server of shard s at the initial parameters. *srvp is the caller's. */
sc_err_t sc_job_server_new(const sc_job_t *job, int shard, sc_server_t **srvp, char *errstr,
                           size_t errstr_size);
/* One worker's encoder for shard s: the job's codec and options over the
 * model's tensors cut to the shard. *codecp is the caller's. */
sc_err_t sc_job_codec_new(const sc_job_t *job, int shard, sc_codec_t **codecp, char *errstr,
                          size_t errstr_size);
/* The broadcast publisher of shard s (spec->bcast over the shard's
 * tensors). *pubp is the caller's. */
sc_err_t sc_job_bcast_new(const sc_job_t *job, int shard, sc_bcast_pub_t **pubp, char *errstr,
                          size_t errstr_size);

/* Appends to buf one model message for srv (J.model, the failover
 * snapshot): the applied-seq vector (workers with at least one applied seq),
 * grad_offset (the J.grad offset of the first update it does not include)
 * and, as the opaque state, the whole sc_server_snapshot(), which holds the
 * parameters (SC_WIRE_MODEL_PARAMS_IN_STATE: they are not sent twice). */
sc_err_t sc_job_record_encode(sc_buf_t *buf, const sc_server_t *srv, int64_t grad_offset,
                              char *errstr, size_t errstr_size);
/* Restores srv (a server of this job) from a shard record of J.model (as
 * sc_job_record_encode() makes them): the
 * record's range must be the server's and its grad_offset >= -1 (-1: none);
 * then sc_server_restore() of its state. Returns 0, or non-zero with why
 * filled (srv may then be partly restored: make a new one). */
int sc_job_server_restore(const sc_job_t *job, sc_server_t *srv, const sc_wire_model_view_t *m,
                          char *why, size_t why_size);
/* Appends to out the broadcast of srv's current version through pub (a
 * keyframe or a delta, *kindp says which), with the shard's applied-seq
 * vector. */
sc_err_t sc_job_bcast_encode(sc_job_t *job, sc_bcast_pub_t *pub, const sc_server_t *srv,
                             sc_buf_t *out, sc_wire_bcast_kind_t *kindp, char *errstr,
                             size_t errstr_size);

/* Worker side: encodes vec (the shard's floats) with codec into payload
 * (cleared first) and appends to out one update message with hdr's fields
 * (its codec, payload and payload_len are set here). */
sc_err_t sc_job_update_encode(const sc_job_t *job, sc_codec_t *codec, const sc_wire_update_t *hdr,
                              const float *vec, sc_rng_t *rng, sc_buf_t *payload, sc_buf_t *out,
                              char *errstr, size_t errstr_size);
/* Server side: decodes a decoded update message's payload for srv's shard
 * (into the job's scratch buffers: one call at a time per job) and applies
 * it. SC_ERR_INVAL for a payload that does not decode or does not fit the
 * shard (srv unchanged); otherwise sc_server_apply's result. */
sc_err_t sc_job_apply(sc_job_t *job, sc_server_t *srv, const sc_wire_update_t *wu,
                      sc_apply_result_t *res, char *errstr, size_t errstr_size);
/* Its first half: the update in *u (pointing into the job's scratch), for a
 * driver that tells a bad payload from a refused update. */
sc_err_t sc_job_update_decode(sc_job_t *job, const sc_server_t *srv, const sc_wire_update_t *wu,
                              sc_update_t *u, char *errstr, size_t errstr_size);

/* ---- membership: which workers the shards' rounds wait for ---- */

/* Every worker is live from now on for one session timeout (a grace
 * period for those not heard yet). */
void sc_job_members_start(sc_job_t *job, double now);
/* A control message of its worker, sent at `sent` (the driver's clock less
 * the record's age): join and heartbeat mark the worker heard, leave marks
 * it left. With is_signed (an authenticated job) a message counts only when
 * its signed timestamp is newer than the worker's last: the tag binds a
 * record to its signer, not to a time, so a replayed heartbeat or join keeps
 * nobody live. Returns 0, or 1 with why filled when it is refused (a worker
 * id outside the job, a replay). */
int sc_job_members_control(sc_job_t *job, const sc_wire_control_t *c, int is_signed, double sent,
                           char *why, size_t why_size);
/* An update of worker w (a valid id) with seq was applied at now: heard,
 * and back unless it is one the worker sent before its leave. */
void sc_job_members_heard(sc_job_t *job, int w, uint64_t seq, double now);
/* 1 if worker w is live at now: it has not left and was heard within the
 * session timeout. */
int sc_job_members_live(const sc_job_t *job, int w, double now);
/* The sum of the stream rates (samples/s) the live workers announced in
 * their last join or heartbeat (field SC_WIRE_F_RATE; each in (0,
 * SC_JOB_RATE_MAX], else none): the auto batch window's denominator,
 * carried by the broadcasts. 0 when none announced one. */
#define SC_JOB_RATE_MAX 1e7
double sc_job_members_rate_sum(const sc_job_t *job, double now);
/* 1 if the rounds of a shard that has seen worker w's seqs up to `seen`
 * (sc_server_applied_seq) still wait for it at now: it was heard within
 * the session timeout and has not left, or left after a seq this shard has
 * not seen yet (its update and its leave travel on different topics; the
 * leave takes effect on each shard once the update is in). */
int sc_job_members_live_on(const sc_job_t *job, int w, uint64_t seen, double now);

#endif
