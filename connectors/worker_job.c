/* worker_job.c — the distributed half of a worker: updates to J.grad
 * (idempotent producer, key = partition = shard) under the job's policy and
 * codec, the global model from J.model, membership on J.ctl and sample
 * injection over J.inject (docs/DISTRIBUTED.md). A batch is acknowledged
 * (its offsets become committable) only once every shard's update that used
 * it was acknowledged by the broker. */
#include "wk_state.h"
#include "sc_clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "sc_buf.h"
#include "sc_codec.h"
#include "sc_job_auth.h"
#include "sc_job_model.h"
#include "sc_kafka_admin.h"
#include "sc_kafka_util.h"
#include "sc_mix.h"
#include "sc_sync.h"
#include "sc_wire.h"

/* Records read back from the end of each J.grad partition at start to find
 * this worker's highest seq (restart). */
#define SC_WJ_SCAN_BACK 512
#define SC_WJ_SCAN_MS 5000 /* per J.grad partition, to learn its end and read its tail */

/* ---- delivery ---- */

static void sc_wj_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
        sc_wj_pend_t *p = m->_private;
        (void)rk;
        (void)opaque;
        if (!p)
                return;
        sc_wk_job_t *j = p->w->job;
        if (m->err) {
                p->failed = 1;
                j->failed++;
                if (!j->first_err[0])
                        snprintf(j->first_err, sizeof(j->first_err), "%s [%d]: %s",
                                 rd_kafka_topic_name(m->rkt), (int)m->partition,
                                 rd_kafka_err2str(m->err));
        } else {
                j->acked++;
                if (j->n_ack < SC_WJ_LAT_MAX)
                        j->lat_ack[j->n_ack++] = (float)((sc_clock_mono() - p->t_send) * 1e3);
        }
        p->remaining--;
}

/* Acknowledges the batches of fully delivered steps, oldest first. */
static sc_err_t sc_wj_reap(sc_worker_t *w, char *errstr, size_t errstr_size)
{
        sc_wk_job_t *j = w->job;
        while (j->pend_head && j->pend_head->remaining == 0) {
                sc_wj_pend_t *p = j->pend_head;
                if (p->failed)
                        return sc_errf(SC_ERR_IO, errstr, errstr_size,
                                       "an update was not delivered: %s", j->first_err);
                for (size_t i = 0; i < p->n_ids; i++) {
                        sc_err_t err = sc_wk_ack(w, p->ids[i], errstr, errstr_size);
                        if (err)
                                return err;
                }
                j->pend_head = p->next;
                if (!j->pend_head)
                        j->pend_tail = NULL;
                p->next = j->pend_free; /* reused by a next send */
                j->pend_free = p;
        }
        return SC_OK;
}

/* Frees a list of step records. */
static void sc_wj_pend_free(sc_wj_pend_t *p)
{
        while (p) {
                sc_wj_pend_t *next = p->next;
                free(p->ids);
                free(p);
                p = next;
        }
}

/* One message of the job's (copied), reported to sc_wj_dr with opaque;
 * while the producer's queue is full it serves reports for up to 30 s. */
static sc_err_t sc_wj_produce(sc_worker_t *w, const char *topic, int32_t partition, const char *key,
                              const void *data, size_t len, void *opaque, char *errstr,
                              size_t errstr_size)
{
        sc_wk_job_t *j = w->job;
        rd_kafka_vu_t vu[6] = {
            {.vtype = RD_KAFKA_VTYPE_TOPIC, .u.cstr = topic},
            {.vtype = RD_KAFKA_VTYPE_PARTITION, .u.i32 = partition},
            {.vtype = RD_KAFKA_VTYPE_VALUE, .u.mem = {(void *)data, len}},
            {.vtype = RD_KAFKA_VTYPE_MSGFLAGS, .u.i = RD_KAFKA_MSG_F_COPY},
            {.vtype = RD_KAFKA_VTYPE_OPAQUE, .u.ptr = opaque},
            {.vtype = RD_KAFKA_VTYPE_KEY, .u.mem = {(void *)key, key ? strlen(key) : 0}},
        };
        sc_err_t err = sc_kafka_produceva_retry(j->prod, vu, key ? 6 : 5, topic, partition, 30000,
                                                errstr, errstr_size);
        if (!err)
                j->msgs_out++;
        return err ? SC_ERR_IO : SC_OK;
}

static double sc_wj_wall(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Signs the message in j->msg as this worker (authenticated jobs). */
static sc_err_t sc_wj_sign(sc_worker_t *w, char *errstr, size_t errstr_size)
{
        return sc_auth_sign(&w->job->auth, &w->job->msg, 0, (uint32_t)w->spec.worker_id, errstr,
                            errstr_size);
}

static sc_err_t sc_wj_ctl(sc_worker_t *w, sc_wire_ctl_kind_t kind, char *errstr, size_t errstr_size)
{
        sc_wk_job_t *j = w->job;
        sc_wire_control_t c;
        memset(&c, 0, sizeof(c));
        c.kind = kind;
        c.worker = (uint32_t)w->spec.worker_id;
        c.timestamp = (int64_t)(sc_wj_wall() * 1e6);
        sc_wire_field_t f[] = {
            {SC_WIRE_F_CLOCK, (double)(j->seq_base + sc_sync_worker_clock(j->sync))},
            {SC_WIRE_F_VERSION, (double)sc_sync_worker_version(j->sync)},
            {SC_WIRE_F_LOSS, w->last_loss},
            {SC_WIRE_F_BATCH, w->batches ? (double)w->samples / (double)w->batches : 0.0},
        };
        c.nfields = sizeof(f) / sizeof(f[0]);
        memcpy(c.fields, f, sizeof(f));
        /* the stream rate it measures, for the job's auto window (only
         * then: the aggregators' broadcasts carry a sum only when announced) */
        sc_batcher_t *bt = w->ingest && sc_wk_auto_window(w->conf) ? sc_wk_batcher(w)
                                                                   : NULL; /* none at the join */
        double rate = bt ? sc_batcher_rate(bt, w->t_now) : 0.0;
        if (rate > 0 && rate <= SC_JOB_RATE_MAX)
                c.fields[c.nfields++] = (sc_wire_field_t){SC_WIRE_F_RATE, rate};
        if (kind == SC_WIRE_CTL_DRIFT) {
                sc_metrics_summary_t ps;
                sc_metrics_summary(w->preq, &ps);
                c.fields[c.nfields++] =
                    (sc_wire_field_t){SC_WIRE_F_PREQ_SAMPLE, (double)w->drift_last};
                c.fields[c.nfields++] = (sc_wire_field_t){SC_WIRE_F_ACCURACY, ps.window_accuracy};
        }
        j->msg.len = 0;
        sc_err_t err = sc_wire_encode_control(&j->msg, &c, errstr, errstr_size);
        if (!err)
                err = sc_wj_sign(w, errstr, errstr_size);
        if (!err)
                err = sc_wj_produce(w, j->topics[SC_JOB_CTL].name, RD_KAFKA_PARTITION_UA, NULL,
                                    j->msg.data, j->msg.len, NULL, errstr, errstr_size);
        if (!err)
                j->ctl_sent++;
        return err;
}

/* ---- start ---- */

/* The tail scan's state: this worker's id and the highest seq seen. */
typedef struct sc_wj_scan {
        const sc_auth_t *auth;
        uint32_t worker;
        uint64_t best;
} sc_wj_scan_t;

static int sc_wj_scan_one(void *opaque, const rd_kafka_message_t *m)
{
        sc_wj_scan_t *sc = opaque;
        char why[256];
        sc_wire_msg_t msg;
        if (sc_auth_decode(sc->auth, m->payload, m->len, &msg, NULL, why, sizeof(why)) == SC_OK &&
            msg.type == SC_WIRE_UPDATE && msg.u.update.worker == sc->worker &&
            msg.u.update.seq > sc->best)
                sc->best = msg.u.update.seq;
        return 0;
}

/* The highest seq this worker sent, from the tail of every J.grad partition
 * (0 for none). A tail that cannot be read is an error: seqs restarted too
 * low would have this worker's new updates dropped as duplicates. */
static sc_err_t sc_wj_scan_seq(sc_worker_t *w, uint64_t *bestp, char *errstr, size_t errstr_size)
{
        sc_wk_job_t *j = w->job;
        const char *topic = j->topics[SC_JOB_GRAD].name;
        char why[512];
        sc_wj_scan_t sc = {.auth = &j->auth, .worker = (uint32_t)w->spec.worker_id};
        rd_kafka_t *rk = NULL;
        sc_err_t err = sc_kafka_reader_new(&rk, w->conf, "scadles-seq-scan", why, sizeof(why));
        if (err)
                return sc_errf(err, errstr, errstr_size, "%s seq scan: %s", topic, why);
        for (int s = 0; !err && s < j->shards; s++) {
                int64_t lo = 0, hi = 0;
                if ((err = sc_kafka_end_offsets(rk, topic, s, SC_WJ_SCAN_MS, &lo, &hi, errstr,
                                                errstr_size)))
                        break;
                int64_t from = hi - SC_WJ_SCAN_BACK > lo ? hi - SC_WJ_SCAN_BACK : lo;
                if ((err = sc_kafka_read_range(rk, topic, s, from, hi, SC_WJ_SCAN_MS,
                                               sc_wj_scan_one, &sc, why, sizeof(why))))
                        err = sc_errf(err, errstr, errstr_size,
                                      "%s: cannot tell where this worker's update seqs continue",
                                      why);
        }
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
        *bestp = sc.best;
        return err;
}

static sc_err_t sc_wj_codecs(sc_worker_t *w, char *errstr, size_t errstr_size)
{
        sc_wk_job_t *j = w->job;
        sc_err_t err = SC_OK;
        if (!(j->codecs = calloc((size_t)j->shards, sizeof(*j->codecs))))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        for (int s = 0; s < j->shards && !err; s++)
                err = sc_job_codec_new(j->job, s, &j->codecs[s], errstr, errstr_size);
        return err;
}

/* The job's state: topics, the policy's worker half, the engine (layout,
 * initial model), the codecs and the signing key. */
static sc_err_t sc_wj_state(sc_worker_t *w, char *errstr, size_t errstr_size)
{
        const sc_conf_t *conf = w->conf;
        sc_wk_job_t *j = w->job;
        sc_err_t err;
        j->shards = conf->job.shards;
        j->n = sc_model_nparams(w->model);
        j->sends_grads = sc_sync_sends_gradients(conf->job.sync.kind);
        j->round_based = sc_sync_is_round_based(conf->job.sync.kind);
        if ((err =
                 sc_kafka_admin_job_topics(conf->job.name, conf->job.shards, conf->job.replication,
                                           j->topics, errstr, errstr_size)))
                return err;
        sc_sync_spec_t ss = conf->job.sync;
        if ((err = sc_sync_spec_check(&ss, errstr, errstr_size)) ||
            (err = sc_sync_worker_new(&j->sync, &ss, (uint32_t)w->spec.worker_id, errstr,
                                      errstr_size)))
                return err;
        j->base_batch = ss.base_batch; /* its default (64 x workers) filled in */
        if (!(j->stamps = calloc((size_t)j->shards, sizeof(uint64_t))) ||
            !(j->vis_next = calloc((size_t)j->shards, sizeof(uint64_t))) ||
            !(j->held_v = calloc((size_t)j->shards, sizeof(uint64_t))) ||
            !(j->sync_params = malloc(j->n * sizeof(float))) ||
            !(j->scratch = malloc(j->n * sizeof(float))))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        sc_job_spec_t jspec;
        sc_job_spec_conf(&jspec, conf);
        if ((err = sc_job_new(&j->job, &jspec, conf, errstr, errstr_size)))
                return err;
        if (sc_job_nparams(j->job) == j->n)
                memcpy(sc_model_params(w->model), sc_model_params(sc_job_model(j->job)),
                       j->n * sizeof(float));
        memcpy(j->sync_params, sc_model_params(w->model), j->n * sizeof(float));
        if ((err = sc_wj_codecs(w, errstr, errstr_size)) ||
            (err = sc_job_auth_load(&j->auth, conf, errstr, errstr_size)))
                return err;
        if (!j->auth.on)
                sc_wk_logf(w, 4, "job %s: %s", conf->job.name, SC_JOB_AUTH_OFF);
        return SC_OK;
}

/* The idempotent J.grad producer; the job's topics are made if J.grad has
 * no partition yet (the embedded broker auto-creates topics on a metadata
 * request). */
static sc_err_t sc_wj_producer(sc_worker_t *w, char *errstr, size_t errstr_size)
{
        sc_wk_job_t *j = w->job;
        char why[512], cid[64];
        rd_kafka_conf_t *pc;
        sc_err_t err;
        snprintf(cid, sizeof(cid), "scadles-worker-%d", w->spec.worker_id);
        const char *const pdef[] = {"client.id", cid, NULL};
        if ((err =
                 sc_kafka_client_conf(&pc, w->conf, RD_KAFKA_PRODUCER, pdef, errstr, errstr_size)))
                return err;
        sc_kafka_conf_set(pc, "enable.idempotence", "true", "worker producer", why, sizeof(why));
        rd_kafka_conf_set_dr_msg_cb(pc, sc_wj_dr);
        if (!(j->prod = rd_kafka_new(RD_KAFKA_PRODUCER, pc, why, sizeof(why)))) {
                rd_kafka_conf_destroy(pc);
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "J.grad producer: %s", why);
        }
        int np = 0;
        sc_kafka_admin_partitions(j->prod, j->topics[SC_JOB_GRAD].name, 5000, &np, why,
                                  sizeof(why));
        if (np == 0)
                return sc_kafka_admin_ensure(j->prod, j->topics, SC_JOB__NTOPICS, 10000, NULL,
                                             errstr, errstr_size);
        return SC_OK;
}

/* Injection: the J.inject reader (from its end) and the pool of foreign
 * samples it fills. */
static sc_err_t sc_wj_inject_reader(sc_worker_t *w, char *errstr, size_t errstr_size)
{
        const sc_conf_t *conf = w->conf;
        sc_wk_job_t *j = w->job;
        const char *const idef[] = {"group.id", "scadles-inject-reader", "enable.auto.commit",
                                    "false", NULL};
        char why[512];
        rd_kafka_conf_t *ic;
        sc_err_t err;
        if ((err = sc_kafka_client_conf(&ic, conf, RD_KAFKA_CONSUMER, NULL, errstr, errstr_size)))
                return err;
        for (int k = 0; idef[k]; k += 2)
                sc_kafka_conf_set(ic, idef[k], idef[k + 1], "inject", why, sizeof(why));
        if (!(j->inj = rd_kafka_new(RD_KAFKA_CONSUMER, ic, why, sizeof(why)))) {
                rd_kafka_conf_destroy(ic);
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "J.inject reader: %s", why);
        }
        rd_kafka_poll_set_consumer(j->inj);
        int ip = 0;
        sc_kafka_admin_partitions(j->inj, j->topics[SC_JOB_INJECT].name, 5000, &ip, why,
                                  sizeof(why));
        rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(ip > 0 ? ip : 1);
        for (int p = 0; p < (ip > 0 ? ip : 1); p++)
                rd_kafka_topic_partition_list_add(tp, j->topics[SC_JOB_INJECT].name, p)->offset =
                    RD_KAFKA_OFFSET_END;
        rd_kafka_assign(j->inj, tp);
        rd_kafka_topic_partition_list_destroy(tp);
        /* 4 batches from one other worker, at least 1 from each */
        int others = conf->job.sync.n_workers > 1 ? conf->job.sync.n_workers - 1 : 1;
        size_t per = ((size_t)4 * (size_t)w->tcap + (size_t)others - 1) / (size_t)others;
        if (per < (size_t)w->tcap)
                per = (size_t)w->tcap;
        if ((err = sc_mix_shared_new(&j->pool, conf->job.sync.n_workers, per, w->numel,
                                     (size_t)w->tcap)))
                return sc_errf(err, errstr, errstr_size, "J.inject pool of %d x %zu samples: %s",
                               conf->job.sync.n_workers, per, sc_err2str(err));
        if (!(j->draw_src = calloc((size_t)w->tcap, sizeof(int))) ||
            !(j->inj_from = calloc((size_t)conf->job.sync.n_workers, sizeof(uint64_t))) ||
            !(j->inj_last = calloc((size_t)conf->job.sync.n_workers, sizeof(uint64_t))))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        return SC_OK;
}

/* The job model's last check of a shard's new state (sc_job_model_set_check):
 * the worker's loss on the first rows of its last batch, with that shard
 * in place, is finite. Parameters bounded by job.limits.model_max_abs can
 * still overflow a model's activations, and then on any row; a model that
 * would make this worker's loss diverge is refused, and the worker keeps
 * training on the one it holds. Nothing to try it on before the first
 * batch: taken. */
#define SC_WJ_LOSS_ROWS 4
static int sc_wj_model_check(void *arg, const float *g, int s)
{
        sc_worker_t *w = arg;
        sc_wk_job_t *j = w->job;
        int n = w->batch->n < SC_WJ_LOSS_ROWS ? w->batch->n : SC_WJ_LOSS_ROWS;
        if (n <= 0)
                return 0;
        float *params = sc_model_params(w->model);
        size_t b, e;
        sc_job_model_range(j->jm, s, &b, &e);
        memcpy(j->scratch + b, params + b, (e - b) * sizeof(float));
        memcpy(params + b, g + b, (e - b) * sizeof(float));
        float loss = sc_model_eval_batch(w->model, w->tx, w->ty, NULL, n, NULL, NULL);
        memcpy(params + b, j->scratch + b, (e - b) * sizeof(float));
        if (isfinite(loss))
                return 0;
        uint64_t refused = sc_job_model_stats(j->jm)->loss + 1;
        if (refused % 100 == 1) /* the first, then one in 100 */
                sc_wk_logf(w, 4,
                           "shard %d: broadcast model refused: the loss on this worker's last "
                           "batch would be %s; the worker keeps its model (%llu refused, "
                           "model_loss)",
                           s, isnan(loss) ? "NaN" : "infinite", (unsigned long long)refused);
        return -1;
}

sc_err_t sc_wk_job_new(sc_worker_t *w, char *errstr, size_t errstr_size)
{
        const sc_conf_t *conf = w->conf;
        sc_err_t err;
        sc_wk_job_t *j = calloc(1, sizeof(*j));
        if (!j)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        w->job = j;
        if ((err = sc_wj_state(w, errstr, errstr_size)) ||
            (err = sc_wj_producer(w, errstr, errstr_size)))
                return err;
        if ((w->spec.inject_alpha > 0 || w->spec.inject_beta > 0) &&
            (err = sc_wj_inject_reader(w, errstr, errstr_size)))
                return err;
        uint64_t scanned = 0;
        if ((err = sc_wj_scan_seq(w, &scanned, errstr, errstr_size)) ||
            (err = sc_job_model_new(&j->jm, conf, sc_model_params(w->model), j->n, errstr,
                                    errstr_size)))
                return err;
        sc_job_model_set_check(j->jm, sc_wj_model_check, w);
        j->seq_base = scanned;
        j->t_cannot = -1;
        if ((err = sc_wj_ctl(w, SC_WIRE_CTL_JOIN, errstr, errstr_size)))
                return err;
        sc_wk_logf(w, 6, "worker %d of job %s: %d shards, policy %s, codec %s%s", w->spec.worker_id,
                   conf->job.name, j->shards, sc_sync_kind_name(conf->job.sync.kind),
                   sc_codec_name(conf->job.codec), scanned ? " (restart: seqs continue)" : "");
        return SC_OK;
}

void sc_wk_job_destroy(sc_worker_t *w)
{
        sc_wk_job_t *j = w->job;
        if (!j)
                return;
        if (j->prod) {
                rd_kafka_flush(j->prod, 2000);
                rd_kafka_destroy(j->prod);
        }
        if (j->inj) {
                rd_kafka_assign(j->inj, NULL);
                rd_kafka_consumer_close(j->inj);
                rd_kafka_destroy(j->inj);
        }
        sc_wj_pend_free(j->pend_head);
        sc_wj_pend_free(j->pend_free);
        sc_job_model_destroy(j->jm);
        sc_auth_free(&j->auth);
        sc_sync_worker_destroy(j->sync);
        for (int s = 0; j->codecs && s < j->shards; s++)
                sc_codec_destroy(j->codecs[s]);
        free(j->codecs);
        sc_job_destroy(j->job);
        free(j->stamps);
        free(j->vis_next);
        free(j->held_v);
        free(j->sync_params);
        free(j->scratch);
        sc_mix_shared_destroy(j->pool);
        free(j->draw_src);
        free(j->inj_from);
        free(j->inj_last);
        sc_buf_free(&j->payload);
        sc_buf_free(&j->msg);
        free(j);
        w->job = NULL;
}

/* ---- models ---- */

/* Copies the shards that changed since held into the local model; delta
 * policies only between syncs (no local progress would be overwritten). */
static void sc_wj_install(sc_worker_t *w, double now)
{
        sc_wk_job_t *j = w->job;
        int changed = 0;
        /* Local steps under way (localsgd, adsp): the local model is not
         * overwritten; once the policy waits for the next version it is. */
        if (!j->sends_grads && sc_sync_worker_local_steps(j->sync) > 0 && !j->waiting)
                return;
        float *params = sc_model_params(w->model);
        const float *g = sc_job_model_params(j->jm);
        for (int s = 0; s < j->shards; s++) {
                uint64_t st = sc_job_model_stamp(j->jm, s);
                if (st == j->stamps[s])
                        continue;
                size_t b, e;
                sc_job_model_range(j->jm, s, &b, &e);
                memcpy(params + b, g + b, (e - b) * sizeof(float));
                memcpy(j->sync_params + b, g + b, (e - b) * sizeof(float));
                j->stamps[s] = st;
                j->held_v[s] = sc_job_model_version(j->jm, s);
                changed = 1;
        }
        if (!changed)
                return;
        sc_sync_model_info_t info = {.version = sc_job_model_min_version(j->jm)};
        /* This worker's updates the model holds on every shard. A shard still
         * below the seq this run started after is left out: its missing seq
         * may have died with the previous process (produced to some shards,
         * not to this one), and the shard's applied seq then stays below it
         * until the server gives it up, 64 seqs later, whatever this run
         * sends; the other shards show this run's updates meanwhile (one at
         * least holds the highest seq sent). A shard that was only behind
         * joins the minimum again once it caught up. */
        uint64_t ap = UINT64_MAX;
        for (int s = 0; s < j->shards; s++) {
                uint64_t a = sc_job_model_applied(j->jm, s, (uint32_t)w->spec.worker_id);
                if (a >= j->seq_base && a < ap)
                        ap = a;
        }
        if (ap == UINT64_MAX)
                ap = 0;
        info.applied_seq = ap > j->seq_base ? ap - j->seq_base : 0;
        uint64_t mc = sc_job_model_min_clock(j->jm);
        info.min_clock = mc > j->seq_base ? mc - j->seq_base : 0;
        sc_sync_worker_model(j->sync, now, &info);
}

/* ---- injection ---- */

/* A J.inject record's seq is its sender's wall clock in microseconds (one
 * more than the last when the clock did not move), so seqs rise across the
 * sender's restarts. */
static uint64_t sc_wj_inject_seq(sc_wk_job_t *j)
{
        uint64_t now = (uint64_t)(sc_wj_wall() * 1e6);
        j->inj_seq = now > j->inj_seq ? now : j->inj_seq + 1;
        return j->inj_seq;
}

/* 1 if a record of worker `from` with seq is a replay: not newer than the
 * last taken from it, or older than job.inject_max_age; else takes it. */
static int sc_wj_inject_replayed(sc_wk_job_t *j, const sc_conf_t *conf, uint32_t from, uint64_t seq)
{
        double age = sc_wj_wall() - (double)seq / 1e6;
        if (seq <= j->inj_last[from] ||
            (conf->job.inject_max_age > 0 && age > conf->job.inject_max_age))
                return 1;
        j->inj_last[from] = seq;
        return 0;
}

static void sc_wj_inject_recv(sc_worker_t *w)
{
        sc_wk_job_t *j = w->job;
        char why[256];
        for (int i = 0; j->inj && i < 64; i++) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(j->inj, 0);
                if (!m)
                        break;
                sc_wire_msg_t msg;
                if (m->err) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                sc_err_t derr =
                    sc_auth_decode(&j->auth, m->payload, m->len, &msg, NULL, why, sizeof(why));
                if (derr == SC_ERR_AUTH)
                        j->inj_auth++;
                if (derr || msg.type != SC_WIRE_SAMPLES || !msg.u.samples.labels ||
                    (size_t)msg.u.samples.c * msg.u.samples.h * msg.u.samples.w != w->numel ||
                    !sc_wire_f32s_finite(msg.u.samples.data,
                                         (size_t)msg.u.samples.count * w->numel)) {
                        j->inj_bad++;
                } else if (msg.u.samples.worker == (uint32_t)w->spec.worker_id) {
                        j->own_skipped += msg.u.samples.count;
                } else if (msg.u.samples.worker >= (uint32_t)w->conf->job.sync.n_workers) {
                        j->inj_bad++; /* not a worker id of the job */
                } else if (sc_wj_inject_replayed(j, w->conf, msg.u.samples.worker,
                                                 msg.u.samples.seq)) {
                        j->inj_replayed++;
                } else {
                        const sc_wire_samples_view_t *v = &msg.u.samples;
                        for (uint32_t k = 0; k < v->count; k++) {
                                int32_t y;
                                sc_wire_get_i32s(&y, v->labels + 4 * k, 1);
                                if (y < 0 || y >= w->n_classes) {
                                        j->inj_bad++;
                                        continue;
                                }
                                float *x = sc_mix_shared_put(j->pool, (int)v->worker, y);
                                sc_wire_get_f32s(x, v->data + (size_t)k * w->numel * 4, w->numel);
                                j->foreign_recv++;
                        }
                }
                rd_kafka_message_destroy(m);
        }
}

static int sc_wk_job_mix(sc_worker_t *w, const sc_batch_t *batch, float *x, int32_t *y, int max)
{
        sc_wk_job_t *j = w->job;
        char why[256];
        if (!j->inj)
                return 0;
        int n = batch->n;
        int k = (int)ceil(w->spec.inject_beta * n);
        if (k > n)
                k = n;
        /* Share k of the batch's own samples with probability alpha. */
        if (k > 0 && w->spec.inject_alpha > 0 &&
            sc_rng_uniform(&w->rng) < (float)w->spec.inject_alpha) {
                sc_shape_t sh = w->conf->model.input;
                sc_wire_samples_t s = {.worker = (uint32_t)w->spec.worker_id,
                                       .seq = sc_wj_inject_seq(j),
                                       .count = (uint32_t)k,
                                       .c = (uint32_t)sh.c,
                                       .h = (uint32_t)sh.h,
                                       .w = (uint32_t)sh.w,
                                       .labels = batch->labels,
                                       .data = batch->x};
                j->msg.len = 0;
                if (sc_wire_encode_samples(&j->msg, &s, why, sizeof(why)) == SC_OK &&
                    sc_wj_sign(w, why, sizeof(why)) == SC_OK &&
                    sc_wj_produce(w, j->topics[SC_JOB_INJECT].name, RD_KAFKA_PARTITION_UA, NULL,
                                  j->msg.data, j->msg.len, NULL, why, sizeof(why)) == SC_OK)
                        j->injected_out += (uint64_t)k;
        }
        /* Mix in k foreign samples, balanced across the other workers that
         * shared (as the simulator's default inject_draw): per-worker quotas,
         * uniform within each worker's ring, with replacement. */
        int want = k < max ? k : max;
        int m = want > 0
                    ? (int)sc_mix_shared_draw(j->pool, &w->rng, SC_MIX_DRAW_BALANCED,
                                              w->spec.worker_id, (size_t)want, x, y, j->draw_src)
                    : 0;
        for (int i = 0; i < m; i++)
                j->inj_from[j->draw_src[i]]++;
        j->injected_in += (uint64_t)m;
        return m;
}

/* ---- latency ---- */

/* Records produce -> visible for the sent steps J.model now shows applied
 * (the shard's applied seq for this worker reached the step's seq). */
static void sc_wj_visible(sc_worker_t *w)
{
        sc_wk_job_t *j = w->job;
        double now = sc_clock_mono();
        for (int s = 0; s < j->shards; s++) {
                uint64_t a = sc_job_model_applied(j->jm, s, (uint32_t)w->spec.worker_id);
                if (j->ring_n - j->vis_next[s] > SC_WJ_LAT_RING) /* overwritten: skipped */
                        j->vis_next[s] = j->ring_n - SC_WJ_LAT_RING;
                while (j->vis_next[s] < j->ring_n &&
                       j->ring_seq[j->vis_next[s] % SC_WJ_LAT_RING] <= a) {
                        if (j->n_vis < SC_WJ_LAT_MAX)
                                j->lat_vis[j->n_vis++] =
                                    (float)((now - j->ring_t[j->vis_next[s] % SC_WJ_LAT_RING]) *
                                            1e3);
                        j->vis_next[s]++;
                }
        }
}

/* ---- updates ---- */

/* A record for one step's updates, with room for the unsent batches' ids: a
 * delivered step's reused (no allocation in the steady state), else a new
 * one. NULL when out of memory. */
static sc_wj_pend_t *sc_wj_pend_get(sc_wk_job_t *j)
{
        sc_wj_pend_t *p = j->pend_free;
        if (p)
                j->pend_free = p->next;
        else if (!(p = calloc(1, sizeof(*p))))
                return NULL;
        if (p->cap_ids < j->n_unsent) {
                uint64_t *ids = realloc(p->ids, j->n_unsent * sizeof(*ids));
                if (!ids) {
                        p->next = j->pend_free;
                        j->pend_free = p;
                        return NULL;
                }
                p->ids = ids;
                p->cap_ids = j->n_unsent;
        }
        uint64_t *ids = p->ids;
        size_t cap = p->cap_ids;
        memset(p, 0, sizeof(*p));
        p->ids = ids;
        p->cap_ids = cap;
        return p;
}

static sc_err_t sc_wj_send(sc_worker_t *w, const sc_sync_act_t *act, char *errstr,
                           size_t errstr_size)
{
        sc_wk_job_t *j = w->job;
        sc_err_t err;
        char key[16];
        sc_wj_pend_t *p = sc_wj_pend_get(j);
        if (!p)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        p->w = w;
        p->t_send = sc_clock_mono();
        p->n_ids = j->n_unsent;
        if (j->n_unsent)
                memcpy(p->ids, j->unsent, j->n_unsent * sizeof(uint64_t));
        j->n_unsent = 0;
        const float *src = sc_model_grads(w->model);
        if (act->update_kind == SC_UPDATE_DELTA) {
                const float *pr = sc_model_params(w->model);
                for (size_t i = 0; i < j->n; i++)
                        j->scratch[i] = pr[i] - j->sync_params[i];
                src = j->scratch;
        } else if (act->update_kind == SC_UPDATE_MODEL) {
                src = sc_model_params(w->model);
        }
        uint32_t samples = (uint32_t)(w->batch->n > 0 ? w->batch->n : 1);
        p->remaining = j->shards;
        if (j->pend_tail)
                j->pend_tail->next = p;
        else
                j->pend_head = p;
        j->pend_tail = p;
        for (int s = 0; s < j->shards; s++) {
                size_t b, e;
                sc_job_range(j->job, s, &b, &e);
                sc_wire_update_t u = {.worker = (uint32_t)w->spec.worker_id,
                                      .shard = (uint32_t)s,
                                      .seq = j->seq_base + act->seq,
                                      .t_read = j->round_based ? act->t_read : j->held_v[s],
                                      .samples = samples,
                                      .kind = (sc_wire_update_kind_t)act->update_kind};
                j->msg.len = 0;
                if ((err = sc_job_update_encode(j->job, j->codecs[s], &u, src + b, &w->rng,
                                                &j->payload, &j->msg, errstr, errstr_size)) ||
                    (err = sc_wj_sign(w, errstr, errstr_size)))
                        goto fail;
                snprintf(key, sizeof(key), "%d", s);
                if ((err = sc_wj_produce(w, j->topics[SC_JOB_GRAD].name, s, key, j->msg.data,
                                         j->msg.len, p, errstr, errstr_size)))
                        goto fail;
                j->sent++;
                j->bytes_up += j->msg.len;
                j->dense_bytes += SC_WIRE_UPDATE_OVERHEAD + SC_CODEC_HDR_SIZE + 4 * (e - b);
        }
        j->ring_seq[j->ring_n % SC_WJ_LAT_RING] = j->seq_base + act->seq;
        j->ring_t[j->ring_n % SC_WJ_LAT_RING] = p->t_send;
        j->ring_n++;
        return SC_OK;
fail:
        /* Messages already produced still report; the rest never will. */
        p->remaining -= j->shards;
        p->failed = 1;
        return err;
}

/* Membership follows the data: a worker that cannot form a batch (no input
 * partition, or its input went quiet and it buffers less than a batch) for
 * job.leave_grace seconds sends leave, so no round waits for it, and join
 * once a batch can form again (rounds wait for it from the next one). It
 * never leaves while it holds a batch's worth of samples: input paused by
 * backpressure, or a rate window not yet over, is not "no data". The leave
 * names the last seq sent, so each shard applies that update before the
 * leave takes effect there. While away it sends no heartbeat. */
static sc_err_t sc_wj_barrier(sc_worker_t *w, double now, char *errstr, size_t errstr_size)
{
        sc_wk_job_t *j = w->job;
        int unassigned = w->src && sc_kafka_source_stats(w->src)->ks_partitions == 0;
        int cannot = !sc_wk_holds_batch(w) && (unassigned || w->draining);
        if (!cannot)
                j->t_cannot = -1;
        else if (j->t_cannot < 0)
                j->t_cannot = now;
        int nodata = cannot && now - j->t_cannot >= w->conf->job.leave_grace;
        if (nodata == j->away || w->stopped)
                return SC_OK;
        sc_err_t err =
            sc_wj_ctl(w, nodata ? SC_WIRE_CTL_LEAVE : SC_WIRE_CTL_JOIN, errstr, errstr_size);
        if (err)
                return err;
        j->away = nodata;
        j->t_hb = now;
        if (nodata)
                j->aways++;
        sc_wk_logf(w, 7, "%s the barriers: %s", nodata ? "left" : "back in",
                   nodata ? (unassigned ? "no input partitions" : "no data") : "a batch can form");
        return SC_OK;
}

int sc_wk_job_waiting(const sc_worker_t *w)
{
        return w->job && w->job->waiting;
}

double sc_wk_job_waited(const sc_worker_t *w, double now)
{
        const sc_wk_job_t *j = w->job;
        return j && j->waiting && j->t_wait > 0 ? now - j->t_wait : 0.0;
}

sc_err_t sc_wk_job_watch(sc_worker_t *w, sc_kafka_waker_t *wk, char *errstr, size_t errstr_size)
{
        sc_wk_job_t *j = w->job;
        sc_err_t err;
        if ((err = sc_kafka_waker_watch(wk, j->prod, errstr, errstr_size)) ||
            (err = sc_kafka_waker_watch(wk, j->inj, errstr, errstr_size)))
                return err;
        return sc_kafka_waker_watch(wk, sc_job_model_handle(j->jm), errstr, errstr_size);
}

/* The policy waits for a model: says so once it lasted SC_WJ_WAIT_SAY s
 * (and every SC_WJ_WAIT_SAY s after), naming the version awaited, so that a
 * job whose aggregators are not running does not stall in silence. */
static void sc_wj_waited(sc_worker_t *w, double now)
{
        sc_wk_job_t *j = w->job;
        if (j->t_wait <= 0) {
                j->t_wait = j->t_wait_said = now;
                return;
        }
        if (now - j->t_wait_said < SC_WJ_WAIT_SAY)
                return;
        j->t_wait_said = now;
        sc_wk_logf(w, 5,
                   "waiting %.0f s for the job's model after version %llu (held: %llu): no "
                   "aggregator has published the next one; are aggregators of job %s running?",
                   now - j->t_wait, (unsigned long long)sc_sync_worker_version(j->sync),
                   (unsigned long long)sc_job_model_min_version(j->jm), w->conf->job.name);
}

/* The auto window's ceiling, s: streams that dry up (their rates decay
 * towards 0) must not leave a worker with buffered samples waiting for
 * hours. */
#define SC_WJ_AUTO_WINDOW_MAX 10.0

/* worker.window "auto": base_batch over the rate sum the broadcast carries
 * (the live workers' announced rates), so the job's batches add up to
 * base_batch. Until a broadcast carries one, the sum is estimated as this
 * worker's measured rate times job.workers, so that a batch of what arrived
 * in one window is about base_batch / job.workers. (A batch holds what is
 * buffered, up to b_max, once the window has passed: a backlog is still
 * taken b_max at a time.) */
static void sc_wj_auto_window(sc_worker_t *w, sc_batcher_t *bt, double now)
{
        sc_wk_job_t *j = w->job;
        double sum = sc_job_model_rate_sum(j->jm);
        int est = 0;
        if (sum > 0)
                j->auto_heard = 1;
        else if (!j->auto_heard) {
                sum = sc_batcher_rate(bt, now) * w->conf->job.sync.n_workers;
                est = 1;
        }
        double win = sc_sync_scadles_window(j->base_batch, sum);
        if (win > SC_WJ_AUTO_WINDOW_MAX)
                win = SC_WJ_AUTO_WINDOW_MAX;
        if (!(win > 0) || win == sc_batcher_window(bt))
                return;
        sc_batcher_set_window(bt, win);
        j->auto_sum = sum;
        /* said the first time, then when it moved by a quarter or more */
        if (!(j->auto_said > 0) || fabs(win - j->auto_said) >= 0.25 * j->auto_said) {
                sc_wk_logf(w, 6,
                           "auto window %.3f s: base_batch %g over the job's rate sum %.1f "
                           "samples/s%s",
                           win, j->base_batch, sum,
                           est ? " (estimated: this worker's rate times job.workers, until a "
                                 "broadcast carries the sum)"
                               : "");
                j->auto_said = win;
        }
}

sc_err_t sc_wk_job_poll(sc_worker_t *w, double now, char *errstr, size_t errstr_size)
{
        sc_wk_job_t *j = w->job;
        sc_err_t err;
        int changed = 0;
        char why[512];
        rd_kafka_poll(j->prod, 0);
        if ((err = sc_wj_reap(w, errstr, errstr_size)))
                return err;
        if ((err = sc_job_model_poll(j->jm, 0, &changed, errstr, errstr_size)))
                return err;
        if (changed)
                sc_wj_visible(w);
        if (!j->ready && sc_job_model_ready(j->jm)) {
                j->ready = 1;
                /* Restart: seqs continue after what the model says was applied too. */
                for (int s = 0; s < j->shards; s++) {
                        uint64_t a = sc_job_model_applied(j->jm, s, (uint32_t)w->spec.worker_id);
                        if (a > j->seq_base)
                                j->seq_base = a;
                }
                if (sc_job_model_min_version(j->jm) > 0)
                        sc_wk_logf(w, 6, "starting from the job's model at version %llu",
                                   (unsigned long long)sc_job_model_min_version(j->jm));
        }
        sc_wj_inject_recv(w);
        if ((err = sc_wj_barrier(w, now, errstr, errstr_size)))
                return err;
        if (!j->away && now - j->t_hb >= w->conf->job.heartbeat_interval) {
                if ((err = sc_wj_ctl(w, SC_WIRE_CTL_HEARTBEAT, errstr, errstr_size)))
                        return err;
                j->t_hb = now;
        }
        if (j->drift_sent != w->drift_events) { /* a report, not a sign of life */
                j->drift_sent = w->drift_events;
                if (sc_wj_ctl(w, SC_WIRE_CTL_DRIFT, why, sizeof(why)))
                        sc_wk_logf(w, 4, "drift report on %s: %s", j->topics[SC_JOB_CTL].name, why);
        }
        if (!j->ready)
                return SC_OK;
        sc_wj_install(w, now);
        sc_batcher_t *bt = sc_wk_batcher(w);
        if (bt && sc_wk_auto_window(w->conf))
                sc_wj_auto_window(w, bt, now);
        if (bt)
                sc_sync_worker_set_rate(j->sync, sc_batcher_target(bt, now) /
                                                     fmax(1e-3, sc_batcher_window(bt)));
        for (int guard = 0; guard < 4; guard++) {
                sc_sync_act_t act;
                sc_sync_worker_next(j->sync, now, &act);
                j->waiting = act.kind == SC_ACT_WAIT;
                if (act.kind == SC_ACT_WAIT) {
                        j->waits++;
                        sc_wj_waited(w, now);
                        break;
                }
                j->t_wait = 0;
                if (act.kind == SC_ACT_COMPUTE) {
                        uint64_t id;
                        int n;
                        if (now < w->t_next || j->n_unsent == SC_WJ_MAX_UNSENT)
                                break;
                        if (j->sends_grads)
                                sc_wj_install(w, now);
                        err = sc_wk_train(w, now, act.local_step, sc_wk_job_mix, &id, &n, errstr,
                                          errstr_size);
                        if (err == SC_ERR_AGAIN)
                                break;
                        if (err)
                                return err;
                        j->unsent[j->n_unsent++] = id;
                        sc_sync_worker_computed(j->sync, now, n);
                        continue;
                }
                if ((err = sc_wj_send(w, &act, errstr, errstr_size)))
                        return err;
                sc_sync_worker_sent(j->sync, now);
                rd_kafka_poll(j->prod, 0);
        }
        return sc_wj_reap(w, errstr, errstr_size);
}

sc_err_t sc_wk_job_finish(sc_worker_t *w, int timeout_ms, char *errstr, size_t errstr_size)
{
        sc_wk_job_t *j = w->job;
        sc_err_t err = SC_OK;
        char why[512];
        /* adsp and localsgd commit what they accumulated since their last
         * commit (not after an error): its batches are then acknowledged with
         * the update's delivery (trained), not returned to be read again. */
        int steps = sc_sync_worker_local_steps(j->sync);
        if (j->ready && !(w->reason && !strcmp(w->reason, "error")) &&
            sc_sync_worker_commit_now(j->sync)) {
                sc_sync_act_t act;
                double now = sc_clock_mono();
                sc_sync_worker_next(j->sync, now, &act);
                if (act.kind == SC_ACT_SEND && sc_wj_send(w, &act, why, sizeof(why)))
                        sc_wk_logf(w, 3, "stop: the last %d local step(s) not committed: %s", steps,
                                   why);
                else if (act.kind == SC_ACT_SEND) {
                        sc_sync_worker_sent(j->sync, now);
                        sc_wk_logf(w, 6, "stop: committed the last %d local step(s)", steps);
                }
        }
        /* Updates in flight: wait for their reports, acknowledge their batches. */
        for (int waited = 0; j->pend_head && waited < timeout_ms; waited += 10) {
                rd_kafka_poll(j->prod, 10);
                if ((err = sc_wj_reap(w, errstr, errstr_size)))
                        break;
        }
        if (!err && j->pend_head)
                err = sc_errf(SC_ERR_IO, errstr, errstr_size,
                              "updates still undelivered after %d ms", timeout_ms);
        if (sc_wj_ctl(w, SC_WIRE_CTL_LEAVE, why, sizeof(why)))
                sc_wk_logf(w, 4, "leave: %s", why);
        rd_kafka_flush(j->prod, timeout_ms);
        /* The installed global model is what the job holds. */
        sc_job_model_poll(j->jm, 0, NULL, why, sizeof(why));
        sc_wj_visible(w);
        return err;
}
