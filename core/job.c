/* job.c — the job engine: shard layout, initial model, server specs,
 * per-shard codecs, update encode / decode / apply and broadcast set-up,
 * shared by the Kafka runtime and the simulator (sc_job.h). */
#include "sc_job.h"

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
        job->maxlen = (job->n + (size_t)ns - 1) / (size_t)ns + 1;
        if (!(job->begin = calloc((size_t)ns + 1, sizeof(*job->begin))) ||
            !(job->views = calloc((size_t)job->nviews + 1, sizeof(*job->views))) ||
            !(job->clip = calloc((size_t)job->nviews + 1, sizeof(*job->clip))) ||
            !(job->idx = malloc(job->maxlen * sizeof(uint32_t))) ||
            !(job->val = malloc(job->maxlen * sizeof(float))) ||
            !(job->dense = malloc(job->maxlen * sizeof(float)))) {
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
