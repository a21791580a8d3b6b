/* agg_selftest.c — a test tool for tests/integration/aggregator_*.sh and the
 * distributed tests (built as build/tools/agg_selftest, not installed): fake
 * workers that send a distributed job's updates, the exact shards an
 * aggregator must publish for them, bad records, and control messages.
 *
 *   agg_selftest produce -c CONFIG (-b ADDR | -B FILE) [--seq-from A]
 *       [--seq-to B] [--rate R] [--dup-every N] [--corrupt-every N]
 *       [--skip-worker W] [--no-create]
 *     fake workers 0 .. job.workers-1 send, for each seq, worker and shard,
 *     a deterministic pseudo-random gradient (or delta / model, as the
 *     policy takes) encoded with job.codec; seqs before A only advance the
 *     codec state; optional duplicates and six kinds of bad record;
 *   agg_selftest check -c CONFIG (-b ADDR | -B FILE) --seq-to B
 *     replays those updates through core/server per shard and compares the
 *     newest J.model record of each shard with it ("check: {...}" per shard,
 *     exit 1 on any difference);
 *   agg_selftest bad-model -c CONFIG (-b ADDR | -B FILE)
 *     garbage and another shard's record on every J.model partition;
 *   agg_selftest ctl join|heartbeat|leave --worker W -c CONFIG (-b ADDR | -B FILE)
 *     one control message on J.ctl;
 *   agg_selftest ledger -c CONFIG (-b ADDR | -B FILE)
 *     an audit of a job that ran (bench/soak.sh): reads each J.grad
 *     partition from its start to its end and each shard's newest J.model
 *     record, and prints per shard "ledger: {...}" with the updates on
 *     J.grad (distinct (worker, seq) and repeated ones), the samples behind
 *     the distinct ones, seqs missing below a worker's highest, updates
 *     above the seq the shard's model says it applied (unapplied), and
 *     records that do not decode or name a worker or seq out of range
 *     (bad).
 * produce, bad-model and ctl create the job's topics unless --no-create;
 * --set KEY=VALUE overrides the configuration as for the commands. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "cli/cmd.h"
#include "sc_clock.h"
#include "sc_codec.h"
#include "sc_conf.h"
#include "sc_job.h"
#include "sc_job_auth.h"
#include "sc_kafka_admin.h"
#include "sc_kafka_model.h"
#include "sc_kafka_util.h"
#include "sc_rng.h"
#include "sc_server.h"
#include "sc_wire.h"

typedef struct sc_st_opts {
        sc_cli_conf_opts_t co;
        const char *mode;     /* produce, check, bad-model or ctl */
        const char *ctl_kind; /* ctl: join, heartbeat or leave */
        int bad_model, no_create, ctl_worker, skip_worker;
        double rate;
        long seq_from, seq_to, corrupt_every, dup_every;
} sc_st_opts_t;

static void sc_st_usage(FILE *out)
{
        fprintf(out, "usage: agg_selftest produce|check|bad-model|ledger|ctl KIND -c CONFIG\n"
                     "                    (-b ADDR | -B FILE) [--set KEY=VALUE ...] [options]\n"
                     "(tests/tools/agg_selftest.c describes the modes and their options)\n");
}

typedef struct sc_fake {
        const sc_conf_t *conf;
        sc_job_t *job; /* the engine the workers and aggregators run */
        size_t n;
        int shards, workers;
        sc_codec_t **codecs; /* [worker * shards + shard] */
        sc_rng_t *rngs;      /* same index: randk / stochastic rounding */
        float *g;
        sc_buf_t payload;
        sc_auth_t auth; /* authenticated job: records signed as their worker */
} sc_fake_t;

static void sc_fake_free(sc_fake_t *f)
{
        for (int i = 0; f->codecs && i < f->workers * f->shards; i++)
                sc_codec_destroy(f->codecs[i]);
        free(f->codecs);
        free(f->rngs);
        free(f->g);
        sc_buf_free(&f->payload);
        sc_job_destroy(f->job);
        sc_auth_free(&f->auth);
}

static int sc_fake_init(sc_fake_t *f, const sc_conf_t *conf, char *err, size_t errsz)
{
        sc_job_spec_t jspec;
        memset(f, 0, sizeof(*f));
        f->conf = conf;
        f->shards = conf->job.shards;
        f->workers = conf->job.sync.n_workers;
        sc_job_spec_conf(&jspec, conf);
        if (sc_job_new(&f->job, &jspec, conf, err, errsz) ||
            sc_job_auth_load(&f->auth, conf, err, errsz))
                return -1;
        f->n = sc_job_nparams(f->job);
        size_t cnt = (size_t)f->workers * (size_t)f->shards;
        if (!(f->codecs = calloc(cnt, sizeof(*f->codecs))) ||
            !(f->rngs = calloc(cnt, sizeof(*f->rngs))) || !(f->g = malloc(f->n * sizeof(float))))
                return snprintf(err, errsz, "out of memory"), -1;
        for (int w = 0; w < f->workers; w++)
                for (int s = 0; s < f->shards; s++) {
                        size_t i = (size_t)w * (size_t)f->shards + (size_t)s;
                        if (sc_job_codec_new(f->job, s, &f->codecs[i], err, errsz))
                                return -1;
                        sc_rng_seed(&f->rngs[i],
                                    conf->train.seed ^ (0x9e3779b97f4a7c15ull * (i + 1)));
                }
        return 0;
}

/* Appends to out the update message of (worker, shard, seq); the payload is
 * encoded with the worker's codec (its residual advances). A shard outside
 * the job (a bad record) gets a payload of shard 0's. */
static int sc_fake_update(sc_fake_t *f, int w, int s, long seq, sc_buf_t *out, char *err,
                          size_t errsz)
{
        const sc_conf_t *conf = f->conf;
        int cs = s < f->shards ? s : 0;
        size_t b, e, i = (size_t)w * (size_t)f->shards + (size_t)cs;
        sc_rng_t root, r;
        sc_job_range(f->job, cs, &b, &e);
        sc_rng_seed(&root, conf->train.seed + 0x51f7);
        sc_rng_split(&root, &r, ((uint64_t)w << 44) | ((uint64_t)s << 28) | (uint64_t)seq);
        for (size_t k = 0; k < e - b; k++)
                f->g[k] = (sc_rng_uniform(&r) * 2.0f - 1.0f) * 0.01f;
        sc_sync_kind_t kind = conf->job.sync.kind;
        sc_wire_update_t m = {.worker = (uint32_t)w,
                              .shard = (uint32_t)s,
                              .seq = (uint64_t)seq,
                              .t_read = sc_sync_is_round_based(kind)
                                            ? (uint64_t)(seq - 1)
                                            : (uint64_t)(seq - 1) * (uint64_t)f->workers,
                              .samples = (uint32_t)(1 + (w * 7 + seq) % 32),
                              .kind = sc_sync_sends_gradients(kind) ? SC_WIRE_GRAD
                                      : conf->job.sync.send_models  ? SC_WIRE_FULL_MODEL
                                                                    : SC_WIRE_DELTA};
        size_t start = out->len;
        return sc_job_update_encode(f->job, f->codecs[i], &m, f->g, &f->rngs[i], &f->payload, out,
                                    err, errsz) ||
                       sc_auth_sign(&f->auth, out, start, (uint32_t)w, err, errsz)
                   ? -1
                   : 0;
}

/* One of six kinds of bad record for partition s (every one is rejected). */
static int sc_fake_bad(sc_fake_t *f, long k, int s, sc_buf_t *out, char *err, size_t errsz)
{
        switch (k % 6) {
        case 0: /* a bit flip: CRC mismatch */
        case 5: /* truncated */
                if (sc_fake_update(f, 0, s, 1, out, err, errsz))
                        return -1;
                if (k % 6 == 0)
                        out->data[out->len / 2] ^= 0x10;
                else
                        out->len -= 3;
                return 0;
        case 1: /* not a wire message at all */
                return sc_buf_append(out, "{\"json\": \"from another producer\"}", 34) ? -1 : 0;
        case 2: { /* a control message on the update topic */
                sc_wire_control_t c = {.kind = SC_WIRE_CTL_HEARTBEAT, .worker = 0};
                return sc_wire_encode_control(out, &c, err, errsz) ? -1 : 0;
        }
        case 3: /* an update for another shard */
                return sc_fake_update(f, 0, (s + 1) % (f->shards + 1), 1, out, err, errsz);
        default: { /* an unknown worker id */
                sc_wire_update_t m = {.worker = (uint32_t)f->workers + 5,
                                      .shard = (uint32_t)s,
                                      .seq = 1,
                                      .samples = 1,
                                      .kind = SC_WIRE_GRAD,
                                      .codec = SC_CODEC_NONE};
                size_t b, e;
                sc_job_range(f->job, s, &b, &e);
                sc_codec_t *c = NULL;
                f->payload.len = 0;
                memset(f->g, 0, (e - b) * sizeof(float));
                if (sc_codec_new(&c, SC_CODEC_NONE, NULL, e - b, NULL, 0, err, errsz) ||
                    sc_codec_encode(c, f->g, NULL, &f->payload, err, errsz)) {
                        sc_codec_destroy(c);
                        return -1;
                }
                sc_codec_destroy(c);
                m.payload = f->payload.data;
                m.payload_len = f->payload.len;
                return sc_wire_encode_update(out, &m, err, errsz) ? -1 : 0;
        }
        }
}

/* A producer of fake workers' records on the job's topics. */
typedef struct sc_st_send {
        sc_fake_t f;
        sc_kafka_topic_spec_t topics[SC_JOB__NTOPICS];
        sc_kafka_delivery_t dv;
        rd_kafka_t *rk;
        sc_buf_t msg;
        long produced, bad, dups;
        double t0;
        char err[1024];
} sc_st_send_t;

static int sc_st_send_init(sc_st_send_t *st, const sc_conf_t *conf, const sc_st_opts_t *o)
{
        rd_kafka_conf_t *kc;
        char *err = st->err;
        size_t errsz = sizeof(st->err);
        st->t0 = sc_clock_mono();
        sc_kafka_delivery_init(&st->dv);
        if (sc_fake_init(&st->f, conf, err, errsz) ||
            sc_kafka_admin_job_topics(conf->job.name, conf->job.shards, conf->job.replication,
                                      st->topics, err, errsz) ||
            sc_kafka_conf_from_json(&kc, (const json_t *)conf->kafka, "$.kafka", err, errsz))
                return -1;
        sc_kafka_conf_log_bridge(kc);
        sc_kafka_conf_set(kc, "enable.idempotence", "true", "selftest", err, errsz);
        sc_kafka_conf_set(kc, "linger.ms", "5", "selftest", err, errsz);
        sc_kafka_conf_delivery(kc);
        if (!(st->rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, err, errsz))) {
                rd_kafka_conf_destroy(kc);
                return -1;
        }
        if (!o->no_create &&
            sc_kafka_admin_ensure(st->rk, st->topics, SC_JOB__NTOPICS, 10000, NULL, err, errsz))
                return -1;
        return 0;
}

/* Produces len bytes of data to partition p of the job's topic t (key: the
 * partition number for J.grad, none otherwise). */
static int sc_st_put(sc_st_send_t *st, int t, int32_t p, const void *data, size_t len)
{
        char key[16];
        int klen = t == SC_JOB_GRAD ? snprintf(key, sizeof(key), "%d", (int)p) : 0;
        return sc_kafka_produce(st->rk, st->topics[t].name, p, klen ? key : NULL, (size_t)klen,
                                data, len, NULL, NULL, 0, 0, &st->dv, 10000, st->err,
                                sizeof(st->err))
                   ? -1
                   : 0;
}

/* One control message of kind o->ctl_kind from worker o->ctl_worker. */
static int sc_st_send_ctl(sc_st_send_t *st, const sc_st_opts_t *o)
{
        sc_wire_control_t c = {.worker = (uint32_t)o->ctl_worker,
                               .timestamp = (int64_t)(sc_clock_mono() * 1e6)};
        c.kind = !strcmp(o->ctl_kind, "join")        ? SC_WIRE_CTL_JOIN
                 : !strcmp(o->ctl_kind, "heartbeat") ? SC_WIRE_CTL_HEARTBEAT
                                                     : SC_WIRE_CTL_LEAVE;
        st->msg.len = 0;
        return sc_wire_encode_control(&st->msg, &c, st->err, sizeof(st->err)) ||
                       sc_auth_sign(&st->f.auth, &st->msg, 0, c.worker, st->err, sizeof(st->err)) ||
                       sc_st_put(st, SC_JOB_CTL, RD_KAFKA_PARTITION_UA, st->msg.data, st->msg.len)
                   ? -1
                   : 0;
}

/* Garbage, then a model message of another shard, in every J.model partition. */
static int sc_st_send_bad_models(sc_st_send_t *st)
{
        static const char junk[] = "not a model shard";
        for (int p = 0; p < st->f.shards; p++) {
                sc_wire_model_t m = {.shard = (uint32_t)(p + 1), .count = 1, .params = st->f.g};
                st->msg.len = 0;
                st->f.g[0] = 1.0f;
                if (sc_st_put(st, SC_JOB_MODEL, p, junk, sizeof(junk) - 1) ||
                    sc_wire_encode_model(&st->msg, &m, st->err, sizeof(st->err)) ||
                    sc_st_put(st, SC_JOB_MODEL, p, st->msg.data, st->msg.len))
                        return -1;
                st->bad += 2;
        }
        return 0;
}

/* The update of (w, s, seq), then a duplicate and a bad record when due,
 * paced at o->rate. Seqs before o->seq_from and o->skip_worker's updates
 * only advance the codec state. */
static int sc_st_send_update(sc_st_send_t *st, const sc_st_opts_t *o, int w, int s, long seq)
{
        st->msg.len = 0;
        if (sc_fake_update(&st->f, w, s, seq, &st->msg, st->err, sizeof(st->err)))
                return -1;
        if (seq < o->seq_from || w == o->skip_worker)
                return 0;
        if (sc_st_put(st, SC_JOB_GRAD, s, st->msg.data, st->msg.len))
                return -1;
        st->produced++;
        if (o->dup_every > 0 && st->produced % o->dup_every == 0) {
                if (sc_st_put(st, SC_JOB_GRAD, s, st->msg.data, st->msg.len))
                        return -1;
                st->dups++;
        }
        if (o->corrupt_every > 0 && st->produced % o->corrupt_every == 0) {
                st->msg.len = 0;
                if (sc_fake_bad(&st->f, st->bad, s, &st->msg, st->err, sizeof(st->err)) ||
                    sc_st_put(st, SC_JOB_GRAD, s, st->msg.data, st->msg.len))
                        return -1;
                st->bad++;
        }
        if (o->rate > 0) {
                double due = st->t0 + (double)st->produced / o->rate;
                while (sc_clock_mono() < due)
                        rd_kafka_poll(st->rk, 1);
        } else {
                rd_kafka_poll(st->rk, 0);
        }
        return 0;
}

static int sc_st_send_updates(sc_st_send_t *st, const sc_st_opts_t *o)
{
        for (long seq = 1; seq <= o->seq_to && !sc_cli_stop; seq++)
                for (int w = 0; w < st->f.workers; w++)
                        for (int s = 0; s < st->f.shards; s++)
                                if (sc_st_send_update(st, o, w, s, seq))
                                        return -1;
        return 0;
}

/* produce, bad-model and ctl. */
static int sc_st_produce(const sc_conf_t *conf, const sc_st_opts_t *o)
{
        sc_st_send_t st;
        int rc = 1;

        memset(&st, 0, sizeof(st));
        if (sc_st_send_init(&st, conf, o))
                goto out;
        if (o->ctl_kind    ? sc_st_send_ctl(&st, o)
            : o->bad_model ? sc_st_send_bad_models(&st)
                           : sc_st_send_updates(&st, o))
                goto out;
        if (sc_kafka_delivery_wait(st.rk, &st.dv, 30000, st.err, sizeof(st.err)))
                goto out;
        printf("produced: {\"updates\":%ld,\"duplicates\":%ld,\"bad\":%ld,\"seconds\":%.3f}\n",
               st.produced, st.dups, st.bad, sc_clock_mono() - st.t0);
        rc = 0;
out:
        if (rc)
                fprintf(stderr, "agg_selftest %s: %s\n", o->mode, st.err);
        if (st.rk)
                rd_kafka_destroy(st.rk);
        sc_buf_free(&st.msg);
        sc_fake_free(&st.f);
        return rc;
}

/* Applies one encoded update message to srv the way the aggregator does. */
static int sc_st_ref_apply(sc_fake_t *f, sc_server_t *srv, const sc_buf_t *msg, char *err,
                           size_t errsz)
{
        sc_wire_msg_t wm;
        if (sc_auth_decode(&f->auth, msg->data, msg->len, &wm, NULL, err, errsz))
                return -1;
        return sc_job_apply(f->job, srv, &wm.u.update, NULL, err, errsz) ? -1 : 0;
}

/* ref[s] for every shard: a server from the initial model that applied
 * every update of seqs 1 .. o->seq_to the way the aggregator does. */
static int sc_st_expected(sc_fake_t *f, const sc_conf_t *conf, const sc_st_opts_t *o,
                          sc_server_t **ref, char *err, size_t errsz)
{
        sc_buf_t msg = {0};
        int rc = -1;
        for (int s = 0; s < f->shards; s++) {
                if (sc_job_server_new(f->job, s, &ref[s], err, errsz))
                        goto out;
        }
        for (long seq = 1; seq <= o->seq_to; seq++)
                for (int w = 0; w < f->workers; w++)
                        for (int s = 0; s < f->shards; s++) {
                                msg.len = 0;
                                if (sc_fake_update(f, w, s, seq, &msg, err, errsz) ||
                                    sc_st_ref_apply(f, ref[s], &msg, err, errsz))
                                        goto out;
                        }
        rc = 0;
out:
        sc_buf_free(&msg);
        return rc;
}

/* The record's parameters: the shard's own array, or (a failover snapshot
 * that carries them once, in its server state) the restored state's. */
static int sc_st_record_params(const sc_wire_model_view_t *m, sc_fake_t *f, int s, float *got,
                               size_t len)
{
        sc_server_t *srv = NULL;
        char err[512];
        if (!m->params_in_state) {
                sc_wire_get_f32s(got, m->params, len);
                return 0;
        }
        if (sc_job_server_new(f->job, s, &srv, err, sizeof(err)) ||
            sc_server_restore(srv, m->state, m->state_len, err, sizeof(err))) {
                fprintf(stderr, "shard %d: state: %s\n", s, err);
                sc_server_destroy(srv);
                return -1;
        }
        memcpy(got, sc_server_params(srv), len * sizeof(float));
        sc_server_destroy(srv);
        return 0;
}

/* 1 when the record's parameters equal ref's bit for bit; else prints the
 * largest difference and returns 0. */
static int sc_st_params_equal(const sc_wire_model_view_t *m, sc_fake_t *f, const sc_server_t *ref,
                              int s)
{
        size_t len = sc_server_len(ref);
        float *got = malloc(len * sizeof(float));
        const float *want = sc_server_params(ref);
        double maxdiff = 0;
        if (!got || sc_st_record_params(m, f, s, got, len)) {
                free(got);
                return 0;
        }
        int same = !memcmp(got, want, len * sizeof(float));
        for (size_t k = 0; k < len; k++) {
                double d = fabs((double)got[k] - (double)want[k]);
                maxdiff = d > maxdiff ? d : maxdiff;
        }
        if (!same)
                fprintf(stderr, "shard %d: max |diff| %g\n", s, maxdiff);
        free(got);
        return same;
}

/* 1 when the record applied seq_to of each of the workers. */
static int sc_st_applied_ok(const sc_wire_model_view_t *m, long seq_to, int workers)
{
        for (uint32_t i = 0; i < m->napplied; i++) {
                sc_wire_applied_t a;
                sc_wire_get_applied(m, i, &a);
                if (a.seq != (uint64_t)seq_to)
                        return 0;
        }
        return m->napplied == (uint32_t)workers || seq_to <= 0;
}

/* Compares shard s's newest J.model record with ref and prints
 * "check: {...}"; *ok is 1 when they agree. */
static int sc_st_check_shard(rd_kafka_t *rk, const char *topic, sc_fake_t *f,
                             const sc_server_t *ref, int s, long seq_to, int *ok, char *err,
                             size_t errsz)
{
        sc_kafka_model_rec_t rec;
        int found = 0, same = 0, applied_ok = 1;
        if (sc_kafka_model_read_latest(rk, topic, s, 10000, &f->auth, NULL, NULL, NULL, &rec,
                                       &found, err, errsz))
                return -1;
        const sc_wire_model_view_t *m = &rec.mr_model;
        if (found && m->count == sc_server_len(ref)) {
                same = sc_st_params_equal(m, f, ref, s);
                applied_ok = sc_st_applied_ok(m, seq_to, f->workers);
        }
        *ok = found && same && applied_ok && m->version == sc_server_version(ref);
        printf("check: {\"shard\":%d,\"found\":%s,\"version\":%llu,\"expected_version\":"
               "%llu,\"grad_offset\":%lld,\"params_equal\":%s,\"applied_ok\":%s,"
               "\"ok\":%s}\n",
               s, found ? "true" : "false", found ? (unsigned long long)m->version : 0ULL,
               (unsigned long long)sc_server_version(ref), found ? (long long)m->grad_offset : -1LL,
               same ? "true" : "false", applied_ok ? "true" : "false", *ok ? "true" : "false");
        sc_kafka_model_rec_free(&rec);
        return 0;
}

static rd_kafka_t *sc_st_consumer(const sc_conf_t *conf, char *err, size_t errsz)
{
        rd_kafka_t *rk = NULL;
        sc_kafka_reader_new(&rk, conf, "scadles.selftest-check", err, errsz);
        return rk;
}

static int sc_st_check(const sc_conf_t *conf, const sc_st_opts_t *o)
{
        sc_kafka_topic_spec_t topics[SC_JOB__NTOPICS];
        sc_server_t **ref = NULL;
        rd_kafka_t *rk = NULL;
        sc_fake_t f;
        char err[1024] = "out of memory";
        int rc = 1, bad_shards = 0;

        if (sc_fake_init(&f, conf, err, sizeof(err)) ||
            sc_kafka_admin_job_topics(conf->job.name, conf->job.shards, conf->job.replication,
                                      topics, err, sizeof(err)) ||
            !(ref = calloc((size_t)f.shards, sizeof(*ref))) ||
            sc_st_expected(&f, conf, o, ref, err, sizeof(err)) ||
            !(rk = sc_st_consumer(conf, err, sizeof(err))))
                goto out;
        for (int s = 0; s < f.shards; s++) {
                int ok;
                if (sc_st_check_shard(rk, topics[SC_JOB_MODEL].name, &f, ref[s], s, o->seq_to, &ok,
                                      err, sizeof(err)))
                        goto out;
                bad_shards += !ok;
        }
        rc = bad_shards ? 1 : 0;
        err[0] = 0;
out:
        if (rc && err[0])
                fprintf(stderr, "agg_selftest check: %s\n", err);
        if (rk)
                rd_kafka_destroy(rk);
        for (int s = 0; ref && s < f.shards; s++)
                sc_server_destroy(ref[s]);
        free(ref);
        sc_fake_free(&f);
        return rc;
}

/* ---- ledger ---- */

#define SC_LEDGER_MAX_WORKERS 1024
/* Seqs a worker's bitmap can hold (8 MiB): a record with a higher seq is
 * counted out of range, not trusted for an allocation. */
#define SC_LEDGER_MAX_SEQ ((uint64_t)1 << 26)

/* One worker's updates seen on a J.grad partition. */
typedef struct sc_ledger_worker {
        uint8_t *seen;              /* bitmap of seqs seen, grown as needed */
        uint64_t nbits;             /* bits in seen */
        uint64_t first, last, seqs; /* lowest and highest seq seen, distinct ones */
} sc_ledger_worker_t;

typedef struct sc_ledger {
        int workers;
        const sc_auth_t *auth; /* authenticated job: records verify with it */
        uint64_t records, bad, other, repeated, samples;
        sc_ledger_worker_t *w; /* (workers) */
} sc_ledger_t;

static int sc_ledger_on(void *opaque, const rd_kafka_message_t *m)
{
        sc_ledger_t *l = opaque;
        sc_wire_msg_t wm;
        char why[256];
        l->records++;
        if (sc_auth_decode(l->auth, m->payload, m->len, &wm, NULL, why, sizeof(why))) {
                l->bad++;
                return 0;
        }
        if (wm.type != SC_WIRE_UPDATE) {
                l->other++;
                return 0;
        }
        const sc_wire_update_t *u = &wm.u.update;
        if (u->worker >= (uint32_t)l->workers || u->seq == 0 || u->seq >= SC_LEDGER_MAX_SEQ) {
                l->bad++;
                return 0;
        }
        sc_ledger_worker_t *w = &l->w[u->worker];
        if (u->seq >= w->nbits) {
                uint64_t nb = w->nbits ? w->nbits : 4096;
                while (nb <= u->seq)
                        nb *= 2;
                uint8_t *g = realloc(w->seen, (size_t)(nb / 8));
                if (!g)
                        return 1; /* the read stops short: an error */
                memset(g + w->nbits / 8, 0, (size_t)((nb - w->nbits) / 8));
                w->seen = g;
                w->nbits = nb;
        }
        uint8_t bit = (uint8_t)(1u << (u->seq % 8));
        if (w->seen[u->seq / 8] & bit) {
                l->repeated++;
                return 0;
        }
        w->seen[u->seq / 8] |= bit;
        w->seqs++;
        l->samples += u->samples;
        if (!w->first || u->seq < w->first)
                w->first = u->seq;
        if (u->seq > w->last)
                w->last = u->seq;
        return 0;
}

static void sc_ledger_free(sc_ledger_t *l)
{
        for (int i = 0; l->w && i < l->workers; i++)
                free(l->w[i].seen);
        free(l->w);
}

/* Shard s's ledger: J.grad [s] start to end, then its newest J.model record. */
static int sc_st_ledger_shard(rd_kafka_t *rk, const sc_kafka_topic_spec_t *topics,
                              const sc_fake_t *f, int s, char *err, size_t errsz)
{
        int64_t lo = 0, hi = 0;
        sc_kafka_model_rec_t rec;
        int found = 0, rc = -1;
        sc_ledger_t l = {.workers = f->workers, .auth = &f->auth};
        if (f->workers > SC_LEDGER_MAX_WORKERS) {
                snprintf(err, errsz, "more than %d workers", SC_LEDGER_MAX_WORKERS);
                return -1;
        }
        if (!(l.w = calloc((size_t)f->workers, sizeof(*l.w)))) {
                snprintf(err, errsz, "out of memory");
                goto out;
        }
        const char *grad = topics[SC_JOB_GRAD].name;
        if (sc_kafka_end_offsets(rk, grad, s, 30000, &lo, &hi, err, errsz) ||
            (hi > lo &&
             sc_kafka_read_range(rk, grad, s, lo, hi, 30000, sc_ledger_on, &l, err, errsz)))
                goto out;
        if (l.records < (uint64_t)(hi - lo)) {
                snprintf(err, errsz, "%s [%d]: read %llu of the %lld records in [%lld, %lld)", grad,
                         s, (unsigned long long)l.records, (long long)(hi - lo), (long long)lo,
                         (long long)hi);
                goto out;
        }
        if (sc_kafka_model_read_latest(rk, topics[SC_JOB_MODEL].name, s, 30000, &f->auth, NULL,
                                       NULL, NULL, &rec, &found, err, errsz))
                goto out;
        uint64_t missing = 0, unapplied = 0, updates = 0;
        printf("ledger: {\"shard\":%d,\"log_start\":%lld,\"end\":%lld,\"records\":%llu,"
               "\"workers\":[",
               s, (long long)lo, (long long)hi, (unsigned long long)l.records);
        for (int w = 0; w < f->workers; w++) {
                const sc_ledger_worker_t *x = &l.w[w];
                uint64_t applied = 0;
                for (uint32_t i = 0; found && i < rec.mr_model.napplied; i++) {
                        sc_wire_applied_t a;
                        sc_wire_get_applied(&rec.mr_model, i, &a);
                        if (a.worker == (uint32_t)w)
                                applied = a.seq;
                }
                /* Seqs below the first one in the log went before the log
                 * start (retention): only gaps above it are missing. */
                missing += x->first ? x->last - x->first + 1 - x->seqs : 0;
                unapplied += x->last > applied ? x->last - applied : 0;
                updates += x->seqs;
                printf("%s{\"worker\":%d,\"updates\":%llu,\"first_seq\":%llu,"
                       "\"last_seq\":%llu,\"applied_seq\":%llu}",
                       w ? "," : "", w, (unsigned long long)x->seqs, (unsigned long long)x->first,
                       (unsigned long long)x->last, (unsigned long long)applied);
        }
        printf("],\"updates\":%llu,\"repeated\":%llu,\"samples\":%llu,\"missing\":%llu,"
               "\"unapplied\":%llu,\"bad\":%llu,\"other\":%llu,\"model_found\":%s,"
               "\"model_version\":%llu}\n",
               (unsigned long long)updates, (unsigned long long)l.repeated,
               (unsigned long long)l.samples, (unsigned long long)missing,
               (unsigned long long)unapplied, (unsigned long long)l.bad,
               (unsigned long long)l.other, found ? "true" : "false",
               found ? (unsigned long long)rec.mr_model.version : 0ULL);
        if (found)
                sc_kafka_model_rec_free(&rec);
        rc = 0;
out:
        sc_ledger_free(&l);
        return rc;
}

static int sc_st_ledger(const sc_conf_t *conf)
{
        sc_kafka_topic_spec_t topics[SC_JOB__NTOPICS];
        rd_kafka_t *rk = NULL;
        sc_fake_t f;
        char err[1024] = "out of memory";
        int rc = 1;
        if (sc_fake_init(&f, conf, err, sizeof(err)) ||
            sc_kafka_admin_job_topics(conf->job.name, conf->job.shards, conf->job.replication,
                                      topics, err, sizeof(err)) ||
            !(rk = sc_st_consumer(conf, err, sizeof(err))))
                goto out;
        for (int s = 0; s < f.shards; s++)
                if (sc_st_ledger_shard(rk, topics, &f, s, err, sizeof(err)))
                        goto out;
        rc = 0;
out:
        if (rc)
                fprintf(stderr, "agg_selftest ledger: %s\n", err);
        if (rk)
                rd_kafka_destroy(rk);
        sc_fake_free(&f);
        return rc;
}

/* An integer option's value into *out; -1 after printing the error. */
static int sc_st_long(const char *opt, const char *s, long long lo, long *out)
{
        long long v;
        if (sc_cli_integer("agg_selftest", opt, s, lo, LONG_MAX, &v))
                return -1;
        *out = (long)v;
        return 0;
}

/* Takes the option c of the tool's own; returns 0, or -1 on a bad value. */
static int sc_st_opt(sc_st_opts_t *o, int c, const char *arg)
{
        long v;
        switch (c) {
        case 'N':
                o->no_create = 1;
                return 0;
        case 'W':
        case 'S':
                if (sc_st_long(c == 'W' ? "--worker" : "--skip-worker", arg, c == 'W' ? 0 : -1, &v))
                        return -1;
                *(c == 'W' ? &o->ctl_worker : &o->skip_worker) = (int)v;
                return 0;
        case 'f':
                return sc_st_long("--seq-from", arg, 1, &o->seq_from);
        case 't':
                return sc_st_long("--seq-to", arg, 0, &o->seq_to);
        case 'r':
                return sc_cli_number("agg_selftest", "--rate", arg, &o->rate);
        case 'x':
                return sc_st_long("--corrupt-every", arg, 0, &o->corrupt_every);
        default: /* 'u' */
                return sc_st_long("--dup-every", arg, 0, &o->dup_every);
        }
}

/* The mode (argv[1], and for ctl its kind) and the options; returns -1 to
 * go on, else an exit code. */
static int sc_st_parse(int argc, char **argv, sc_st_opts_t *o)
{
        static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
                                                 {"set", required_argument, NULL, 's'},
                                                 {"bootstrap", required_argument, NULL, 'b'},
                                                 {"bootstrap-file", required_argument, NULL, 'B'},
                                                 {"no-create", no_argument, NULL, 'N'},
                                                 {"worker", required_argument, NULL, 'W'},
                                                 {"skip-worker", required_argument, NULL, 'S'},
                                                 {"seq-from", required_argument, NULL, 'f'},
                                                 {"seq-to", required_argument, NULL, 't'},
                                                 {"rate", required_argument, NULL, 'r'},
                                                 {"corrupt-every", required_argument, NULL, 'x'},
                                                 {"dup-every", required_argument, NULL, 'u'},
                                                 {"help", no_argument, NULL, 'h'},
                                                 {NULL, 0, NULL, 0}};
        int c, first = 2;
        memset(o, 0, sizeof(*o));
        o->seq_from = 1;
        o->seq_to = 10;
        o->skip_worker = -1;
        o->mode = argc > 1 ? argv[1] : "";
        if (!strcmp(o->mode, "ctl")) {
                o->ctl_kind = argc > 2 ? argv[2] : "";
                first = 3;
                if (strcmp(o->ctl_kind, "join") && strcmp(o->ctl_kind, "heartbeat") &&
                    strcmp(o->ctl_kind, "leave")) {
                        fprintf(stderr,
                                "agg_selftest ctl '%s': expected join, heartbeat or leave\n",
                                o->ctl_kind);
                        return 2;
                }
        } else if (strcmp(o->mode, "produce") && strcmp(o->mode, "check") &&
                   strcmp(o->mode, "bad-model") && strcmp(o->mode, "ledger")) {
                sc_st_usage(stderr);
                return 2;
        }
        o->bad_model = !strcmp(o->mode, "bad-model");
        optind = first;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":c:s:b:B:h", longopts, NULL)) != -1) {
                int taken = sc_cli_conf_opt("agg_selftest", &o->co, c, optarg);
                if (taken < 0)
                        return 2;
                if (taken)
                        continue;
                if (c == 'h' || c == ':' || c == '?')
                        return sc_cli_opt_other("agg_selftest", c, argv, sc_st_usage);
                if (sc_st_opt(o, c, optarg))
                        return 2;
        }
        if (sc_cli_no_operands("agg_selftest", argc, argv, sc_st_usage))
                return 2;
        if (!o->co.config || o->seq_to < o->seq_from - 1) {
                fprintf(stderr, "agg_selftest: %s\n\n",
                        !o->co.config ? "-c CONFIG is required" : "--seq-to is before --seq-from");
                sc_st_usage(stderr);
                return 2;
        }
        return -1;
}

int main(int argc, char **argv)
{
        sc_st_opts_t o;
        sc_conf_t conf;
        int rc;

        if ((rc = sc_st_parse(argc, argv, &o)) >= 0)
                return rc;
        sc_conf_defaults(&conf);
        if ((rc = sc_cli_conf_load("agg_selftest", &conf, &o.co)))
                goto out;
        sc_kafka_log_set_sink(sc_cli_kafka_log, "agg_selftest");
        sc_cli_signals();
        rc = !strcmp(o.mode, "check")    ? sc_st_check(&conf, &o)
             : !strcmp(o.mode, "ledger") ? sc_st_ledger(&conf)
                                         : sc_st_produce(&conf, &o);
out:
        fflush(stdout);
        sc_kafka_log_set_sink(NULL, NULL);
        sc_conf_free(&conf);
        return rc;
}
