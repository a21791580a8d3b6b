/* job_model.c — follows a distributed job's model broadcast (J.bcast, one
 * partition per shard) and keeps the workers' view of the global model
 * (see sc_job_model.h; the rules are core/bcast.c's). */
#include "sc_job_model.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "sc_bcast.h"
#include "sc_job.h"
#include "sc_job_auth.h"
#include "sc_kafka_admin.h"
#include "sc_kafka_model.h"
#include "sc_kafka_util.h"
#include "sc_wire.h"

#define SC_JM_END_MS 30000 /* a shard's end offset: at most this long (a leader election) */

typedef struct sc_jm_shard {
        size_t begin, end;
        uint64_t version, stamp;
        int64_t need; /* offset of the newest record at start; -1 = none to wait for */
        sc_bcast_sub_t sub;
        uint64_t *applied; /* (n_workers) */
} sc_jm_shard_t;

struct sc_job_model_s {
        const sc_conf_t *conf;
        rd_kafka_t *rk;
        char topic[SC_KAFKA_ADMIN_NAME_MAX];
        float *params;
        size_t n;
        int shards, n_workers;
        sc_jm_shard_t *sh;
        float *tmp; /* (n) a shard as it was before a record, for a refused result */
        sc_auth_t auth;
        double rate_sum;             /* of the last record installed (0: none) */
        sc_job_model_check_fn check; /* NULL: none */
        void *check_arg;
        sc_job_model_stats_t stats;
};

/* 0 if a broadcast record may be taken for shard sh: a keyframe's
 * parameters are finite, and after the first install its version is less
 * than job.limits.model_jump ahead of the one held (a forged far-future
 * version would otherwise pin the shard). Counts the refusal. */
static int sc_jm_plausible(sc_job_model_t *jm, const sc_jm_shard_t *sh, const sc_wire_bcast_t *v)
{
        if (v->kind == SC_WIRE_BCAST_KEY &&
            !sc_wire_f32s_finite(v->payload + SC_CODEC_HDR_SIZE, v->count)) {
                jm->stats.nonfinite++;
                return -1;
        }
        if (sh->stamp > 0 && v->version > sh->version &&
            v->version - sh->version >= jm->conf->job.model_jump) {
                jm->stats.jump++;
                return -1;
        }
        return 0;
}

/* 0 if view (n floats) is finite and, with job.limits.model_max_abs set,
 * bounded by it; counts the refusal's reason. */
static int sc_jm_bounded(sc_job_model_t *jm, const float *view, size_t n)
{
        double lim = jm->conf->job.limits.max_abs;
        int finite = 1, within = 1;
        for (size_t i = 0; i < n; i++) {
                float a = fabsf(view[i]);
                finite &= a <= FLT_MAX; /* NaN compares false */
                within &= lim <= 0 || a <= lim;
        }
        if (!finite)
                jm->stats.nonfinite++;
        else if (!within)
                jm->stats.magnitude++;
        return finite && within ? 0 : -1;
}

static void sc_jm_seek(sc_job_model_t *jm, int s, int64_t offset)
{
        rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(tp, jm->topic, s)->offset = offset;
        rd_kafka_error_t *e = rd_kafka_seek_partitions(jm->rk, tp, 5000);
        if (e)
                rd_kafka_error_destroy(e);
        rd_kafka_topic_partition_list_destroy(tp);
        jm->stats.seeks++;
}

static void sc_jm_install(sc_job_model_t *jm, const rd_kafka_message_t *m, int *changed)
{
        char why[256];
        sc_wire_msg_t msg;
        sc_bcast_action_t act;
        int64_t lo = -1, hi = -1, seek = -1;
        int s = (int)m->partition;
        jm->stats.records++;
        jm->stats.bytes += m->len;
        if (s < 0 || s >= jm->shards)
                return;
        sc_jm_shard_t *sh = &jm->sh[s];
        sc_err_t err = sc_auth_decode(&jm->auth, m->payload, m->len, &msg, NULL, why, sizeof(why));
        if (err || msg.type != SC_WIRE_BCAST || msg.u.bcast.shard != (uint32_t)s ||
            msg.u.bcast.begin != sh->begin || msg.u.bcast.count != sh->end - sh->begin) {
                jm->stats.auth_bad += err == SC_ERR_AUTH;
                jm->stats.bad++;
                sh->sub.next = m->offset + 1;
                return;
        }
        const sc_wire_bcast_t *v = &msg.u.bcast;
        if (sc_jm_plausible(jm, sh, v)) {
                jm->stats.bad++;
                sh->sub.next = m->offset + 1;
                return;
        }
        /* the end offset the last fetch reported (no request) */
        if (rd_kafka_get_watermark_offsets(jm->rk, jm->topic, s, &lo, &hi))
                hi = -1;
        /* the shard and its follower as they were, for a result refused */
        float *view = jm->params + sh->begin;
        size_t n = sh->end - sh->begin;
        sc_bcast_sub_t before = sh->sub;
        uint64_t rollbacks = sh->sub.rollbacks;
        memcpy(jm->tmp, view, n * sizeof(float));
        if (sc_bcast_sub_take(&sh->sub, view, n, v, m->offset, hi, &act, &seek, why, sizeof(why))) {
                memcpy(view, jm->tmp, n * sizeof(float));
                jm->stats.bad++;
                sh->sub.next = m->offset + 1;
                return;
        }
        jm->stats.rollback += sh->sub.rollbacks - rollbacks;
        if (act == SC_BCAST_SEEK) {
                sc_jm_seek(jm, s, seek);
                return;
        }
        if (act != SC_BCAST_APPLIED)
                return;
        if (sc_jm_bounded(jm, view, n) ||
            (jm->check && jm->check(jm->check_arg, jm->params, s) && ++jm->stats.loss)) {
                memcpy(view, jm->tmp, n * sizeof(float));
                sh->sub = before;
                sh->sub.next = m->offset + 1;
                jm->stats.bad++;
                return;
        }
        sh->version = v->version;
        sh->stamp++;
        jm->rate_sum = v->rate_sum;
        memset(sh->applied, 0, (size_t)jm->n_workers * sizeof(uint64_t));
        for (uint32_t i = 0; i < v->napplied; i++) {
                sc_wire_applied_t a;
                sc_wire_get_applied_raw(v->applied_raw, i, &a);
                if (a.worker < (uint32_t)jm->n_workers)
                        sh->applied[a.worker] = a.seq;
        }
        jm->stats.installed++;
        jm->stats.keyframes += v->kind == SC_WIRE_BCAST_KEY;
        if (changed)
                (*changed)++;
}

void sc_job_model_set_check(sc_job_model_t *jm, sc_job_model_check_fn fn, void *arg)
{
        jm->check = fn;
        jm->check_arg = arg;
}

sc_err_t sc_job_model_new(sc_job_model_t **jmp, const sc_conf_t *conf, const float *init,
                          size_t nparams, char *errstr, size_t errstr_size)
{
        sc_kafka_topic_spec_t topics[SC_JOB__NTOPICS];
        char why[512];
        sc_err_t err;

        *jmp = NULL;
        sc_job_model_t *jm = calloc(1, sizeof(*jm));
        if (!jm)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        jm->conf = conf;
        jm->n = nparams;
        jm->shards = conf->job.shards;
        jm->n_workers = conf->job.sync.n_workers;
        if (!(jm->params = malloc(nparams * sizeof(float))) ||
            !(jm->tmp = malloc(nparams * sizeof(float))) ||
            !(jm->sh = calloc((size_t)jm->shards, sizeof(*jm->sh)))) {
                err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
                goto fail;
        }
        memcpy(jm->params, init, nparams * sizeof(float));
        if ((err = sc_job_auth_load(&jm->auth, conf, errstr, errstr_size)))
                goto fail;
        for (int s = 0; s < jm->shards; s++) {
                sc_job_shard_range(nparams, jm->shards, s, &jm->sh[s].begin, &jm->sh[s].end);
                jm->sh[s].need = -1;
                sc_bcast_sub_init(&jm->sh[s].sub, (uint32_t)conf->job.keyframe_interval);
                if (!(jm->sh[s].applied = calloc((size_t)jm->n_workers, sizeof(uint64_t)))) {
                        err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
                        goto fail;
                }
        }
        if ((err = sc_kafka_admin_job_topics(conf->job.name, conf->job.shards,
                                             conf->job.replication, topics, errstr, errstr_size)))
                goto fail;
        snprintf(jm->topic, sizeof(jm->topic), "%s", topics[SC_JOB_BCAST].name);
        if ((err = sc_kafka_reader_new(&jm->rk, conf, "scadles-model-reader", why, sizeof(why)))) {
                err = sc_errf(err, errstr, errstr_size, "%s reader: %s", jm->topic, why);
                goto fail;
        }
        rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(jm->shards);
        for (int s = 0; s < jm->shards; s++) {
                int64_t lo = 0, hi = 0;
                /* A topic just created may have no leader for a moment, a
                 * leader that died is replaced: the fetch waits for both. */
                if ((err = sc_kafka_end_offsets(jm->rk, jm->topic, s, SC_JM_END_MS, &lo, &hi,
                                                errstr, errstr_size))) {
                        rd_kafka_topic_partition_list_destroy(tp);
                        goto fail;
                }
                /* From the newest record: it leads to its keyframe. */
                jm->sh[s].need = hi > lo ? hi - 1 : -1;
                jm->sh[s].sub.next = hi > lo ? hi - 1 : lo;
                rd_kafka_topic_partition_list_add(tp, jm->topic, s)->offset = jm->sh[s].sub.next;
        }
        rd_kafka_resp_err_t rerr = rd_kafka_assign(jm->rk, tp);
        rd_kafka_topic_partition_list_destroy(tp);
        if (rerr) {
                err = sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: assign: %s", jm->topic,
                              rd_kafka_err2str(rerr));
                goto fail;
        }
        *jmp = jm;
        return SC_OK;
fail:
        sc_job_model_destroy(jm);
        return err;
}

void sc_job_model_destroy(sc_job_model_t *jm)
{
        if (!jm)
                return;
        if (jm->rk) {
                rd_kafka_assign(jm->rk, NULL);
                rd_kafka_consumer_close(jm->rk);
                rd_kafka_destroy(jm->rk);
        }
        for (int s = 0; jm->sh && s < jm->shards; s++)
                free(jm->sh[s].applied);
        free(jm->sh);
        free(jm->params);
        free(jm->tmp);
        sc_auth_free(&jm->auth);
        free(jm);
}

rd_kafka_t *sc_job_model_handle(sc_job_model_t *jm)
{
        return jm->rk;
}

sc_err_t sc_job_model_poll(sc_job_model_t *jm, int timeout_ms, int *changed, char *errstr,
                           size_t errstr_size)
{
        int n = 0;
        if (changed)
                *changed = 0;
        for (int i = 0; i < 256; i++) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(jm->rk, n ? 0 : timeout_ms);
                if (!m)
                        break;
                n++;
                if (m->err) {
                        rd_kafka_resp_err_t e = m->err;
                        rd_kafka_message_destroy(m);
                        if (e == RD_KAFKA_RESP_ERR__PARTITION_EOF ||
                            !rd_kafka_fatal_error(jm->rk, NULL, 0))
                                continue;
                        return sc_errf(SC_ERR_IO, errstr, errstr_size, "%s reader: %s", jm->topic,
                                       rd_kafka_err2str(e));
                }
                sc_jm_install(jm, m, changed);
                rd_kafka_message_destroy(m);
        }
        return SC_OK;
}

int sc_job_model_ready(const sc_job_model_t *jm)
{
        for (int s = 0; s < jm->shards; s++)
                if (jm->sh[s].need >= 0 &&
                    (!jm->sh[s].sub.has || jm->sh[s].sub.next <= jm->sh[s].need))
                        return 0;
        return 1;
}

const float *sc_job_model_params(const sc_job_model_t *jm)
{
        return jm->params;
}

int sc_job_model_shards(const sc_job_model_t *jm)
{
        return jm->shards;
}

void sc_job_model_range(const sc_job_model_t *jm, int s, size_t *begin, size_t *end)
{
        *begin = jm->sh[s].begin;
        *end = jm->sh[s].end;
}

uint64_t sc_job_model_version(const sc_job_model_t *jm, int s)
{
        return jm->sh[s].version;
}

uint64_t sc_job_model_stamp(const sc_job_model_t *jm, int s)
{
        return jm->sh[s].stamp;
}

uint64_t sc_job_model_min_version(const sc_job_model_t *jm)
{
        uint64_t v = UINT64_MAX;
        for (int s = 0; s < jm->shards; s++)
                if (jm->sh[s].version < v)
                        v = jm->sh[s].version;
        return v;
}

uint64_t sc_job_model_applied(const sc_job_model_t *jm, int s, uint32_t worker)
{
        return worker < (uint32_t)jm->n_workers ? jm->sh[s].applied[worker] : 0;
}

uint64_t sc_job_model_min_clock(const sc_job_model_t *jm)
{
        uint64_t m = UINT64_MAX;
        for (int s = 0; s < jm->shards; s++)
                for (int w = 0; w < jm->n_workers; w++)
                        if (jm->sh[s].applied[w] < m)
                                m = jm->sh[s].applied[w];
        return m == UINT64_MAX ? 0 : m;
}

double sc_job_model_rate_sum(const sc_job_model_t *jm)
{
        return jm->rate_sum;
}

const sc_job_model_stats_t *sc_job_model_stats(const sc_job_model_t *jm)
{
        return &jm->stats;
}
