/* job.c — the job engine: shard layout, initial model, server specs,
 * per-shard codecs, update encode / decode / apply and broadcast set-up,
 * shared by the Kafka runtime and the simulator (sc_job.h). */
#include "sc_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sc_job_s {
        sc_job_spec_t spec;
        const sc_conf_t *conf;
        sc_model_t *model;
        sc_rng_t rng; /* stream 0 after the initial draw */
        size_t n, maxlen;
        size_t *begin;                  /* (shards + 1) shard s is [begin[s], begin[s + 1]) */
        sc_tensor_view_t *views, *clip; /* (ntensors) the model's, a shard's */
        int nviews;
        uint32_t *idx; /* (maxlen) decode scratch */
        float *val, *dense;
        sc_wire_applied_t *applied; /* (workers) a broadcast's applied-seq vector */
        int nworkers;
        double *heard;        /* (workers) when each was last heard, the driver's clock */
        int64_t *ctl_ts;      /* (workers) signed control: the newest timestamp */
        uint8_t *left;        /* (workers) said leave and was not heard since */
        uint64_t *left_clock; /* (workers) the last seq sent before the leave */
        double *rate;         /* (workers) the stream rate each last announced, samples/s */
};

void sc_job_shard_range(size_t n, int shards, int shard, size_t *beginp, size_t *endp)
{
        *beginp = (size_t)((uint64_t)n * (uint64_t)shard / (uint64_t)shards);
        *endp = (size_t)((uint64_t)n * (uint64_t)(shard + 1) / (uint64_t)shards);
}

sc_err_t sc_job_initial_seeded(const sc_conf_t *conf, uint64_t seed, sc_model_t **modelp,
                               sc_rng_t *rngp, char *errstr, size_t errstr_size)
{
        sc_rng_t root, r;
        sc_err_t err;

        if ((err = sc_model_new(modelp, &conf->model, errstr, errstr_size))) {
                sc_conf_model_error(conf, errstr, errstr_size);
                return err;
        }
        sc_rng_seed(&root, seed);
        sc_rng_split(&root, &r, 0);
        sc_model_init(*modelp, &r);
        if (rngp)
                *rngp = r;
        return SC_OK;
}

sc_err_t sc_job_initial(const sc_conf_t *conf, sc_model_t **modelp, char *errstr,
                        size_t errstr_size)
{
        return sc_job_initial_seeded(conf, conf->train.seed, modelp, NULL, errstr, errstr_size);
}

void sc_job_codec_params(const sc_job_codec_t *c, sc_codec_params_t *params)
{
        sc_codec_params_default(params, c->id);
        if (c->ratio > 0)
                params->ratio = c->ratio;
        if (c->error_feedback >= 0)
                params->error_feedback = c->error_feedback;
        if (c->delta > 0)
                params->delta = c->delta;
        params->vote = c->id == SC_CODEC_ADAPTIVE && c->vote;
        params->half_values = c->half;
        params->log8_values = c->log8;
        params->rice_index = c->rice;
}

void sc_job_spec_conf(sc_job_spec_t *spec, const sc_conf_t *conf)
{
        const sc_conf_job_t *job = &conf->job;

        memset(spec, 0, sizeof(*spec));
        spec->shards = job->shards;
        spec->shards_key = "$.job.shards";
        spec->seed = conf->train.seed;
        spec->sync = job->sync;
        spec->codec = (sc_job_codec_t){.id = job->codec,
                                       .ratio = job->codec_ratio,
                                       .error_feedback = job->codec_error_feedback,
                                       .delta = job->codec_delta};
        spec->limits = job->limits;
        sc_bcast_spec_conf(&spec->bcast, job);
        spec->session_timeout = job->session_timeout;
}

void sc_job_destroy(sc_job_t *job)
{
        if (!job)
                return;
        sc_model_destroy(job->model);
        free(job->begin);
        free(job->views);
        free(job->clip);
        free(job->idx);
        free(job->val);
        free(job->dense);
        free(job->applied);
        free(job->heard);
        free(job->ctl_ts);
        free(job->left);
        free(job->left_clock);
        free(job->rate);
        free(job);
}

sc_err_t sc_job_new(sc_job_t **jobp, const sc_job_spec_t *spec, const sc_conf_t *conf, char *errstr,
                    size_t errstr_size)
{
        sc_job_t *job;
        sc_err_t err;
        int ns = spec->shards;

        *jobp = NULL;
        if (!(job = calloc(1, sizeof(*job))))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        job->spec = *spec;
        if (!job->spec.shards_key)
                job->spec.shards_key = "$.job.shards";
        job->conf = conf;
        if ((err = sc_job_initial_seeded(conf, spec->seed, &job->model, &job->rng, errstr,
                                         errstr_size)))
                goto out;
        job->n = sc_model_nparams(job->model);
        if (ns < 1 || (size_t)ns > job->n) {
                err = sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                              "%s: %s: %d shards for %zu parameters (each needs at least one)",
                              conf->origin, job->spec.shards_key, ns, job->n);
                goto out;
        }
        job->nviews = sc_model_ntensors(job->model);
        job->nworkers = spec->sync.n_workers > 0 ? spec->sync.n_workers : 1;
        job->maxlen = (job->n + (size_t)ns - 1) / (size_t)ns + 1;
        if (!(job->begin = calloc((size_t)ns + 1, sizeof(*job->begin))) ||
            !(job->views = calloc((size_t)job->nviews + 1, sizeof(*job->views))) ||
            !(job->clip = calloc((size_t)job->nviews + 1, sizeof(*job->clip))) ||
            !(job->idx = malloc(job->maxlen * sizeof(uint32_t))) ||
            !(job->val = malloc(job->maxlen * sizeof(float))) ||
            !(job->dense = malloc(job->maxlen * sizeof(float))) ||
            !(job->applied = calloc((size_t)job->nworkers, sizeof(*job->applied))) ||
            !(job->heard = calloc((size_t)job->nworkers, sizeof(*job->heard))) ||
            !(job->ctl_ts = calloc((size_t)job->nworkers, sizeof(*job->ctl_ts))) ||
            !(job->left = calloc((size_t)job->nworkers, 1)) ||
            !(job->left_clock = calloc((size_t)job->nworkers, sizeof(*job->left_clock))) ||
            !(job->rate = calloc((size_t)job->nworkers, sizeof(*job->rate)))) {
                err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
                goto out;
        }
        for (int s = 0; s < ns; s++)
                sc_job_shard_range(job->n, ns, s, &job->begin[s], &job->begin[s + 1]);
        for (int v = 0; v < job->nviews; v++)
                job->views[v] = *sc_model_tensor(job->model, v);
        *jobp = job;
        return SC_OK;
out:
        sc_job_destroy(job);
        return err;
}

const sc_job_spec_t *sc_job_spec(const sc_job_t *job)
{
        return &job->spec;
}

sc_model_t *sc_job_model(const sc_job_t *job)
{
        return job->model;
}

size_t sc_job_nparams(const sc_job_t *job)
{
        return job->n;
}

int sc_job_shards(const sc_job_t *job)
{
        return job->spec.shards;
}

void sc_job_range(const sc_job_t *job, int shard, size_t *beginp, size_t *endp)
{
        *beginp = job->begin[shard];
        *endp = job->begin[shard + 1];
}

const size_t *sc_job_begins(const sc_job_t *job)
{
        return job->begin;
}

void sc_job_rng(const sc_job_t *job, sc_rng_t *rng)
{
        *rng = job->rng;
}

sc_err_t sc_job_server_spec(const sc_job_t *job, int shard, sc_server_spec_t *spec, char *errstr,
                            size_t errstr_size)
{
        const sc_conf_t *conf = job->conf;
        sc_err_t err;

        memset(spec, 0, sizeof(*spec));
        if (shard < 0 || shard >= job->spec.shards)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "shard %d outside 0..%d", shard,
                               job->spec.shards - 1);
        spec->sync = job->spec.sync;
        spec->limits = job->spec.limits;
        spec->sgd.momentum = conf->optim.momentum;
        spec->sgd.nesterov = conf->optim.nesterov;
        spec->sgd.weight_decay = conf->optim.weight_decay;
        if ((err = sc_conf_sched_steps(conf, 1, &spec->sched, errstr, errstr_size)))
                return err;
        if (conf->optim.sched.total_steps <= 0 && job->spec.total_steps > 0)
                spec->sched.total_steps = job->spec.total_steps;
        spec->shard = (uint32_t)shard;
        sc_job_range(job, shard, &spec->begin, &spec->end);
        return SC_OK;
}

sc_err_t sc_job_server_new(const sc_job_t *job, int shard, sc_server_t **srvp, char *errstr,
                           size_t errstr_size)
{
        sc_server_spec_t spec;
        sc_err_t err;

        *srvp = NULL;
        if ((err = sc_job_server_spec(job, shard, &spec, errstr, errstr_size)))
                return err;
        return sc_server_new(srvp, &spec, sc_model_params(job->model) + spec.begin, errstr,
                             errstr_size);
}

sc_err_t sc_job_codec_new(const sc_job_t *job, int shard, sc_codec_t **codecp, char *errstr,
                          size_t errstr_size)
{
        sc_codec_params_t cp;
        size_t b, e;

        sc_job_range(job, shard, &b, &e);
        sc_job_codec_params(&job->spec.codec, &cp);
        int nv = sc_codec_clip_views(job->views, job->nviews, b, e, job->clip);
        return sc_codec_new(codecp, job->spec.codec.id, &cp, e - b, job->clip, nv, errstr,
                            errstr_size);
}

sc_err_t sc_job_bcast_new(const sc_job_t *job, int shard, sc_bcast_pub_t **pubp, char *errstr,
                          size_t errstr_size)
{
        size_t b, e;

        sc_job_range(job, shard, &b, &e);
        return sc_bcast_pub_new_model(pubp, &job->spec.bcast, (uint32_t)shard, job->model, b, e,
                                      errstr, errstr_size);
}

sc_err_t sc_job_record_encode(sc_buf_t *buf, const sc_server_t *srv, int64_t grad_offset,
                              char *errstr, size_t errstr_size)
{
        const sc_server_spec_t *sp = sc_server_spec(srv);
        int nw = sp->sync.n_workers;
        sc_wire_applied_t *applied = NULL;
        uint8_t *state = NULL;
        size_t state_len = 0;
        uint32_t na = 0;
        sc_err_t err;

        if ((err = sc_server_snapshot(srv, &state, &state_len)))
                return sc_errf(err, errstr, errstr_size, "shard %u: snapshot: %s", sp->shard,
                               sc_err2str(err));
        if (!(applied = malloc((size_t)nw * sizeof(*applied)))) {
                free(state);
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        }
        na = sc_bcast_applied(srv, applied);
        sc_wire_model_t m = {.shard = sp->shard,
                             .version = sc_server_version(srv),
                             .begin = sp->begin,
                             .count = (uint32_t)sc_server_len(srv),
                             .grad_offset = grad_offset,
                             .params_in_state = 1, /* the snapshot holds them */
                             .napplied = na,
                             .applied = applied,
                             .state_len = (uint32_t)state_len,
                             .state = state};
        err = sc_wire_encode_model(buf, &m, errstr, errstr_size);
        free(applied);
        free(state);
        return err;
}

int sc_job_server_restore(const sc_job_t *job, sc_server_t *srv, const sc_wire_model_view_t *m,
                          char *why, size_t why_size)
{
        const sc_server_spec_t *sp = sc_server_spec(srv);

        (void)job;
        if (m->begin != sp->begin || m->count != sp->end - sp->begin) {
                snprintf(why, why_size,
                         "shard range [%llu, +%u) differs from this job's [%zu, +%zu) (another "
                         "model or shard count?)",
                         (unsigned long long)m->begin, m->count, sp->begin, sp->end - sp->begin);
                return 1;
        }
        if (m->grad_offset < -1) {
                snprintf(why, why_size, "grad_offset %lld", (long long)m->grad_offset);
                return 1;
        }
        return sc_server_restore(srv, m->state, m->state_len, why, why_size) != SC_OK;
}

sc_err_t sc_job_bcast_encode(sc_job_t *job, sc_bcast_pub_t *pub, const sc_server_t *srv,
                             sc_buf_t *out, sc_wire_bcast_kind_t *kindp, char *errstr,
                             size_t errstr_size)
{
        uint32_t na = sc_bcast_applied(srv, job->applied);
        return sc_bcast_pub_encode(pub, sc_server_params(srv), sc_server_version(srv), job->applied,
                                   na, NULL, out, kindp, errstr, errstr_size);
}

sc_err_t sc_job_update_encode(const sc_job_t *job, sc_codec_t *codec, const sc_wire_update_t *hdr,
                              const float *vec, sc_rng_t *rng, sc_buf_t *payload, sc_buf_t *out,
                              char *errstr, size_t errstr_size)
{
        sc_wire_update_t u = *hdr;
        sc_err_t err;

        payload->len = 0;
        if ((err = sc_codec_encode(codec, vec, rng, payload, errstr, errstr_size)))
                return err;
        u.codec = (uint8_t)job->spec.codec.id;
        u.payload = payload->data;
        u.payload_len = payload->len;
        return sc_wire_encode_update(out, &u, errstr, errstr_size);
}

sc_err_t sc_job_update_decode(sc_job_t *job, const sc_server_t *srv, const sc_wire_update_t *wu,
                              sc_update_t *u, char *errstr, size_t errstr_size)
{
        return sc_server_update_decode(wu, sc_server_len(srv), job->idx, job->val, job->dense, u,
                                       errstr, errstr_size);
}

sc_err_t sc_job_apply(sc_job_t *job, sc_server_t *srv, const sc_wire_update_t *wu,
                      sc_apply_result_t *res, char *errstr, size_t errstr_size)
{
        sc_update_t u;
        sc_err_t err;

        if ((err = sc_job_update_decode(job, srv, wu, &u, errstr, errstr_size)))
                return err;
        return sc_server_apply(srv, &u, res, errstr, errstr_size);
}

/* ---- membership ---- */

void sc_job_members_start(sc_job_t *job, double now)
{
        for (int w = 0; w < job->nworkers; w++) {
                job->heard[w] = now;
                job->left[w] = 0;
        }
}

/* A control message's clock field (the last seq its worker sent), 0 when
 * absent or not a count. */
static uint64_t sc_job_ctl_clock(const sc_wire_control_t *c)
{
        for (uint32_t i = 0; i < c->nfields && i < SC_WIRE_CTL_MAX_FIELDS; i++) {
                double v = c->fields[i].value;
                if (c->fields[i].key == SC_WIRE_F_CLOCK)
                        return v >= 0 && v < 1.8e19 ? (uint64_t)v : 0;
        }
        return 0;
}

int sc_job_members_control(sc_job_t *job, const sc_wire_control_t *c, int is_signed, double sent,
                           char *why, size_t why_size)
{
        uint32_t w = c->worker;

        if (w >= (uint32_t)job->nworkers) {
                snprintf(why, why_size, "worker %u outside 0..%d", w, job->nworkers - 1);
                return 1;
        }
        if (is_signed) {
                if (c->timestamp <= job->ctl_ts[w]) {
                        snprintf(why, why_size,
                                 "worker %u: control message of %lld us, not newer than its last "
                                 "(a replay)",
                                 w, (long long)c->timestamp);
                        return 1;
                }
                job->ctl_ts[w] = c->timestamp;
        }
        switch (c->kind) {
        case SC_WIRE_CTL_JOIN:
        case SC_WIRE_CTL_HEARTBEAT: {
                job->left[w] = 0;
                if (sent > job->heard[w])
                        job->heard[w] = sent;
                /* an announced rate out of range (or NaN) counts as none */
                double r = sc_wire_control_field(c, SC_WIRE_F_RATE, 0.0);
                job->rate[w] = r > 0 && r <= SC_JOB_RATE_MAX ? r : 0.0;
                break;
        }
        case SC_WIRE_CTL_LEAVE:
                job->left[w] = 1;
                job->left_clock[w] = sc_job_ctl_clock(c);
                break;
        default:
                break;
        }
        return 0;
}

void sc_job_members_heard(sc_job_t *job, int w, uint64_t seq, double now)
{
        if (seq > job->left_clock[w])
                job->left[w] = 0;
        job->heard[w] = now;
}

int sc_job_members_live(const sc_job_t *job, int w, double now)
{
        return !job->left[w] && now - job->heard[w] <= job->spec.session_timeout;
}

double sc_job_members_rate_sum(const sc_job_t *job, double now)
{
        double sum = 0;
        for (int w = 0; w < job->nworkers; w++)
                if (sc_job_members_live(job, w, now))
                        sum += job->rate[w];
        return sum;
}

int sc_job_members_live_on(const sc_job_t *job, int w, uint64_t seen, double now)
{
        if (now - job->heard[w] > job->spec.session_timeout)
                return 0;
        return !job->left[w] || seen < job->left_clock[w];
}
