/* sim.c — the simulation run: devices compute real gradients on their
 * streams' samples, encode them with the codec, send them over their links to
 * one shard server applying the sync policy, and receive models back; all on
 * a virtual clock, with metrics written as JSON lines. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_buf.h"
#include "sc_nn.h"
#include "sc_optim.h"
#include "sc_server.h"
#include "sim_impl.h"

enum { SC_EV_READY, SC_EV_COMPUTED, SC_EV_RECV, SC_EV_MODEL, SC_EV_EVAL };

#define SC_SIM_MSG_HDR 32 /* bytes of framing counted per message */

typedef struct sc_sim_msg {
        uint32_t worker;
        int shard;
        uint64_t seq, t_read;
        uint32_t samples;
        sc_update_kind_t kind;
        size_t len;
        uint8_t payload[];
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

typedef struct sc_sim_dev {
        sc_sync_worker_t *w;
        sc_codec_t **codec;         /* (shards) */
        sc_sync_model_info_t *info; /* (shards) latest model info per shard */
        uint64_t *read_ver;         /* (shards) shard versions the last compute started from */
        sc_rng_t rng;
        sc_sim_stream_t stream;
        uint32_t *pool;                     /* owned dataset indices of this device's labels */
        float *params, *sync_params, *grad; /* (n) each */
        double spc;                         /* compute seconds per sample */
        sc_sim_link_t up, down;
        int busy; /* an EV_READY or EV_COMPUTED is pending */
        int last_batch;
        double data_wait;       /* seconds spent waiting for samples, closed waits */
        double data_wait_since; /* start of the open wait; < 0 = none */
        double send_wait;       /* seconds blocked on the uplink */
} sc_sim_dev_t;

struct sc_sim_s {
        sc_sim_spec_t spec;
        const sc_conf_t *conf;
        const sc_dataset_t *train, *test;
        sc_model_t *model;
        sc_server_t **servers; /* (shards) */
        size_t *begin;         /* (shards + 1) shard s is [begin[s], begin[s + 1]) */
        int ns;
        size_t n;
        int nd;
        sc_sim_dev_t *devs;
        sc_sim_queue_t q;
        sc_sim_inject_t inject;
        sc_rng_t inj_rng;
        float *x, *tmp, *dval;
        int32_t *y;
        int *votes; /* (nd) adaptive codec votes */
        uint32_t *bidx, *didx;
        int max_batch;
        sc_buf_t buf;
        sc_adsp_tuner_t *tuner;
        double commit_rate, local_lr;
        /* metrics */
        double now, loss_sum, stale_sum;
        uint64_t loss_n, stale_n, samples, inject_bytes;
        int done, stalled;
        double reached_t; /* first time test accuracy >= target_acc; < 0 = not yet */
        double last_acc, last_test_loss;
        double last_loss, last_stale; /* of the last metric window (NAN / 0 before any) */
};

static void sc_sim_free_ptr(int type, void *ptr)
{
        if (type == SC_EV_MODEL) {
                sc_sim_delivery_t *d = ptr;
                if (--d->snap->refs == 0)
                        free(d->snap);
        }
        free(ptr);
}

void sc_sim_destroy(sc_sim_t *sim)
{
        if (!sim)
                return;
        sc_sim_queue_free(&sim->q, sc_sim_free_ptr);
        if (sim->devs)
                for (int i = 0; i < sim->nd; i++) {
                        sc_sim_dev_t *d = &sim->devs[i];
                        sc_sync_worker_destroy(d->w);
                        if (d->codec)
                                for (int s = 0; s < sim->ns; s++)
                                        sc_codec_destroy(d->codec[s]);
                        free(d->codec);
                        free(d->info);
                        free(d->read_ver);
                        free(d->pool);
                        free(d->params);
                        free(d->sync_params);
                        free(d->grad);
                }
        free(sim->devs);
        sc_sim_inject_free(&sim->inject);
        sc_adsp_tuner_destroy(sim->tuner);
        if (sim->servers)
                for (int s = 0; s < sim->ns; s++)
                        sc_server_destroy(sim->servers[s]);
        free(sim->servers);
        free(sim->begin);
        sc_model_destroy(sim->model);
        sc_buf_free(&sim->buf);
        free(sim->x);
        free(sim->y);
        free(sim->tmp);
        free(sim->dval);
        free(sim->bidx);
        free(sim->didx);
        free(sim->votes);
        free(sim);
}

/* Dataset indices whose labels device i sees: k consecutive labels from i*k. */
static sc_err_t sc_sim_partition(sc_sim_t *sim, int i, sc_sim_dev_t *d)
{
        const sc_dataset_t *ds = sim->train;
        int k = sim->spec.labels_per_device, nc = ds->n_classes;
        size_t m = 0;

        if (!(d->pool = malloc(ds->n * sizeof(uint32_t))))
                return SC_ERR_NOMEM;
        for (size_t s = 0; s < ds->n; s++) {
                int lab = ds->y[s], first = (i * k) % nc;
                int off = (lab - first + nc) % nc;
                if (k <= 0 || off < k)
                        d->pool[m++] = (uint32_t)s;
        }
        d->stream.pool = d->pool;
        d->stream.pool_n = m;
        return m ? SC_OK : SC_ERR_CONFIG;
}

/* A codec for shard sh: the model's tensors clipped to the shard's range,
 * offsets relative to its start. */
static sc_err_t sc_sim_codec_new(sc_sim_t *sim, int sh, sc_codec_t **codecp, char *errstr,
                                 size_t errstr_size)
{
        size_t b = sim->begin[sh], e = sim->begin[sh + 1];
        int nviews = sc_model_ntensors(sim->model), nv = 0;
        sc_tensor_view_t *views = malloc((size_t)nviews * sizeof(*views));
        sc_codec_params_t cp;
        sc_err_t err;

        if (!views)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "sim: out of memory");
        for (int v = 0; v < nviews; v++) {
                sc_tensor_view_t t = *sc_model_tensor(sim->model, v);
                size_t lo = t.offset > b ? t.offset : b;
                size_t hi = t.offset + t.numel < e ? t.offset + t.numel : e;
                if (lo >= hi)
                        continue;
                t.offset = lo - b;
                t.numel = hi - lo;
                views[nv++] = t;
        }
        sc_codec_params_default(&cp, sim->spec.codec);
        if (sim->spec.codec_ratio > 0)
                cp.ratio = sim->spec.codec_ratio;
        if (sim->spec.codec_delta > 0)
                cp.delta = sim->spec.codec_delta;
        cp.vote = sim->spec.codec == SC_CODEC_ADAPTIVE && sim->spec.codec_vote;
        err = sc_codec_new(codecp, sim->spec.codec, &cp, e - b, views, nv, errstr, errstr_size);
        free(views);
        return err;
}

sc_err_t sc_sim_new(sc_sim_t **simp, const sc_sim_spec_t *spec, const sc_conf_t *conf,
                    const sc_dataset_t *train, const sc_dataset_t *test, char *errstr,
                    size_t errstr_size)
{
        sc_sim_t *sim;
        sc_server_spec_t sspec;
        sc_rng_t root, r;
        sc_err_t err;
        size_t n;

        *simp = NULL;
        if (!(sim = calloc(1, sizeof(*sim))))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "sim: out of memory");
        sim->spec = *spec;
        sim->conf = conf;
        sim->train = train;
        sim->test = test;
        sim->nd = spec->devices;
        sim->reached_t = -1;
        sim->last_loss = NAN;
        sim->spec.sync.n_workers = spec->devices;
        if ((err = sc_sync_spec_check(&sim->spec.sync, errstr, errstr_size)))
                goto out;
        if ((err = sc_model_new(&sim->model, &conf->model, errstr, errstr_size))) {
                sc_conf_model_error(conf, errstr, errstr_size);
                goto out;
        }
        if (sc_shape_numel(sc_model_output_shape(sim->model)) != (size_t)train->n_classes ||
            sc_shape_numel(conf->model.input) != sc_shape_numel(train->shape)) {
                err = sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                              "$.model: input or output size does not fit the data set (%d "
                              "classes)",
                              train->n_classes);
                goto out;
        }
        sc_nn_set_threads(1); /* deterministic and fair on shared cores */
        n = sim->n = sc_model_nparams(sim->model);
        sc_rng_seed(&root, spec->seed ? spec->seed : conf->train.seed);
        sc_rng_split(&root, &r, 0);
        sc_model_init(sim->model, &r);

        memset(&sspec, 0, sizeof(sspec));
        sspec.sync = sim->spec.sync;
        sspec.sgd.momentum = conf->optim.momentum;
        sspec.sgd.nesterov = conf->optim.nesterov;
        sspec.sgd.weight_decay = conf->optim.weight_decay;
        /* Schedule times count server steps (versions) here: epochs mean nothing
         * on a stream. */
        if (conf->optim.warmup_epochs > 0 || conf->optim.total_epochs > 0 ||
            conf->optim.n_milestones_epochs > 0) {
                err = sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                              "$.optim.schedule: the simulator counts schedule times in server "
                              "steps; use warmup_steps, total_steps and milestones");
                goto out;
        }
        if ((err = sc_conf_sched_steps(conf, 1, &sspec.sched, errstr, errstr_size)))
                goto out;
        if (sspec.sched.kind == SC_SCHED_COSINE && conf->optim.sched.total_steps <= 0) {
                if (spec->max_steps <= 0) {
                        err = sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                      "$.optim.schedule.total_steps: a cosine schedule in the "
                                      "simulator needs total_steps (or sim.max_steps)");
                        goto out;
                }
                sspec.sched.total_steps = spec->max_steps;
        }
        sim->ns = spec->shards > 0 ? spec->shards : 1;
        if ((size_t)sim->ns > n) {
                err = sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                              "$.sim.shards: %d shards for %zu parameters", sim->ns, n);
                goto out;
        }
        if (!(sim->servers = calloc((size_t)sim->ns, sizeof(*sim->servers))) ||
            !(sim->begin = calloc((size_t)sim->ns + 1, sizeof(*sim->begin))))
                goto out_nomem;
        for (int sh = 0; sh <= sim->ns; sh++)
                sim->begin[sh] = n * (size_t)sh / (size_t)sim->ns;
        for (int sh = 0; sh < sim->ns; sh++) {
                sspec.shard = (uint32_t)sh;
                sspec.begin = sim->begin[sh];
                sspec.end = sim->begin[sh + 1];
                if ((err = sc_server_new(&sim->servers[sh], &sspec,
                                         sc_model_params(sim->model) + sspec.begin, errstr,
                                         errstr_size)))
                        goto out;
        }
        sim->local_lr = spec->local_lr > 0 ? spec->local_lr : conf->optim.lr;
        sim->commit_rate = sim->spec.sync.commit_rate;
        if (spec->tune && spec->sync.kind == SC_SYNC_ADSP) {
                sc_adsp_tuner_spec_t ts = {.gamma = sim->spec.sync.gamma,
                                           .c_init = sim->spec.sync.commit_rate,
                                           .c_step = sim->spec.sync.commit_rate,
                                           .c_max = 64 * sim->spec.sync.commit_rate,
                                           .target_loss = spec->target_loss,
                                           .rise = 0.3};
                if ((err = sc_adsp_tuner_new(&sim->tuner, &ts, 0, errstr, errstr_size)))
                        goto out;
        }
        sim->max_batch =
            sim->spec.sync.kind == SC_SYNC_SCADLES ? sim->spec.sync.b_max : sim->spec.sync.batch;
        err = SC_ERR_NOMEM;
        if (!(sim->x =
                  malloc((size_t)sim->max_batch * sc_shape_numel(train->shape) * sizeof(float))) ||
            !(sim->y = malloc((size_t)sim->max_batch * sizeof(int32_t))) ||
            !(sim->bidx = malloc((size_t)sim->max_batch * sizeof(uint32_t))) ||
            !(sim->tmp = malloc(n * sizeof(float))) || !(sim->dval = malloc(n * sizeof(float))) ||
            !(sim->didx = malloc(n * sizeof(uint32_t))) ||
            !(sim->devs = calloc((size_t)sim->nd, sizeof(*sim->devs))) ||
            !(sim->votes = calloc((size_t)sim->nd, sizeof(int))) ||
            sc_sim_inject_init(&sim->inject, 64 * (size_t)sim->max_batch))
                goto out_nomem;
        sc_rng_split(&root, &sim->inj_rng, 1);
        for (int i = 0; i < sim->nd; i++) {
                sc_sim_dev_t *d = &sim->devs[i];
                if (!(d->codec = calloc((size_t)sim->ns, sizeof(*d->codec))) ||
                    !(d->info = calloc((size_t)sim->ns, sizeof(*d->info))) ||
                    !(d->read_ver = calloc((size_t)sim->ns, sizeof(*d->read_ver))))
                        goto out_nomem;
                for (int sh = 0; sh < sim->ns; sh++)
                        if ((err = sc_sim_codec_new(sim, sh, &d->codec[sh], errstr, errstr_size)))
                                goto out;
                if ((err = sc_sync_worker_new(&d->w, &sim->spec.sync, (uint32_t)i, errstr,
                                              errstr_size)))
                        goto out;
                sc_rng_split(&root, &d->rng, 100 + (uint64_t)i);
                d->stream.rate = sc_sim_draw_rate(spec, i, &r);
                d->stream.truncation = spec->truncation;
                d->stream.window = spec->buffer_window;
                if ((err = sc_sim_partition(sim, i, d))) {
                        if (err == SC_ERR_CONFIG)
                                sc_errf(err, errstr, errstr_size,
                                        "$.sim.labels_per_device: device %d has no samples", i);
                        else
                                goto out_nomem;
                        goto out;
                }
                sc_sync_worker_set_rate(d->w, d->stream.rate);
                d->spc =
                    spec->per_sample *
                    (sim->nd > 1 ? 1.0 + (spec->heterogeneity - 1.0) * i / (sim->nd - 1) : 1.0);
                d->data_wait_since = -1;
                d->up = (sc_sim_link_t){.bps = spec->up_bps, .latency = spec->latency};
                d->down = (sc_sim_link_t){.bps = spec->down_bps, .latency = spec->latency};
                if (!(d->params = malloc(n * sizeof(float))) ||
                    !(d->sync_params = malloc(n * sizeof(float))) ||
                    !(d->grad = calloc(n, sizeof(float))))
                        goto out_nomem;
                memcpy(d->params, sc_model_params(sim->model), n * sizeof(float));
                memcpy(d->sync_params, d->params, n * sizeof(float));
                if (sc_sim_queue_push(&sim->q, 0.0, SC_EV_READY, i, NULL))
                        goto out_nomem;
                d->busy = 1;
        }
        if (sc_sim_queue_push(&sim->q, 0.0, SC_EV_EVAL, -1, NULL))
                goto out_nomem;
        *simp = sim;
        return SC_OK;

out_nomem:
        err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "sim: out of memory");
out:
        sc_sim_destroy(sim);
        return err;
}

/* ---- devices ------------------------------------------------------------- */

/* Takes b samples (with injection) and runs forward/backward on the device's
 * local model; returns the loss. */
static float sc_sim_compute(sc_sim_t *sim, int i, int b, int local_step)
{
        sc_sim_dev_t *d = &sim->devs[i];
        size_t sample_bytes = sc_shape_numel(sim->train->shape) * sizeof(float) + 4;
        float loss;

        sc_sim_stream_take(&d->stream, &d->rng, (size_t)b, sim->bidx);
        if (sim->spec.inject_alpha > 0 && sim->spec.inject_beta > 0) {
                int m = (int)lround(sim->spec.inject_beta * b);
                if (sc_rng_uniform(&sim->inj_rng) < sim->spec.inject_alpha) {
                        for (int k = 0; k < m; k++)
                                sc_sim_inject_put(&sim->inject, sim->bidx[k], i);
                        sc_sim_link_send(&d->up, sim->now, (size_t)m * sample_bytes);
                        sim->inject_bytes += (size_t)m * sample_bytes;
                }
                int mixed = 0;
                for (int k = 0; k < m; k++)
                        mixed +=
                            sc_sim_inject_draw(&sim->inject, &d->rng, i, &sim->bidx[b - 1 - k]);
                if (mixed)
                        sc_sim_link_send(&d->down, sim->now, (size_t)mixed * sample_bytes);
        }
        sc_dataset_gather(sim->train, sim->bidx, (size_t)b, sim->x, sim->y);
        for (int sh = 0; sh < sim->ns; sh++)
                d->read_ver[sh] = d->info[sh].version;
        memcpy(sc_model_params(sim->model), d->params, sim->n * sizeof(float));
        loss = sc_model_train_batch(sim->model, sim->x, sim->y, NULL, b, &d->rng, NULL);
        memcpy(d->grad, sc_model_grads(sim->model), sim->n * sizeof(float));
        if (local_step) {
                float lr = (float)sim->local_lr;
                for (size_t k = 0; k < sim->n; k++)
                        d->params[k] -= lr * d->grad[k];
        }
        sim->samples += (uint64_t)b;
        if (isfinite(loss)) {
                sim->loss_sum += loss;
                sim->loss_n++;
                if (sim->tuner)
                        sc_adsp_tuner_observe(sim->tuner, sim->now, loss);
        }
        return loss;
}

static sc_err_t sc_sim_send(sc_sim_t *sim, int i, const sc_sync_act_t *act, char *errstr,
                            size_t errstr_size)
{
        sc_sim_dev_t *d = &sim->devs[i];
        const float *vec = d->grad;
        sc_sim_msg_t *msg;
        sc_err_t err;

        if (act->update_kind == SC_UPDATE_DELTA) {
                for (size_t k = 0; k < sim->n; k++)
                        sim->tmp[k] = d->params[k] - d->sync_params[k];
                vec = sim->tmp;
        } else if (act->update_kind == SC_UPDATE_MODEL) {
                vec = d->params;
        }
        for (int sh = 0; sh < sim->ns; sh++) {
                size_t b = sim->begin[sh], len = sim->begin[sh + 1] - b;
                if (sim->spec.codec == SC_CODEC_ADAPTIVE && sim->spec.codec_vote) {
                        /* The reference ScaDLES decides by majority vote of the devices. */
                        for (int k = 0; k < sim->nd; k++)
                                sim->votes[k] = sc_codec_adaptive_vote(sim->devs[k].codec[sh]);
                        sc_codec_adaptive_set_decision(
                            d->codec[sh], sc_codec_adaptive_majority(sim->votes, sim->nd));
                }
                sim->buf.len = 0;
                if ((err = sc_codec_encode(d->codec[sh], vec + b, &d->rng, &sim->buf, errstr,
                                           errstr_size)))
                        return err;
                if (!(msg = malloc(sizeof(*msg) + sim->buf.len)))
                        return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "sim: out of memory");
                msg->worker = (uint32_t)i;
                msg->shard = sh;
                msg->seq = act->seq;
                msg->t_read = d->read_ver[sh];
                msg->samples = (uint32_t)(d->last_batch > 0 ? d->last_batch : 1);
                msg->kind = act->update_kind;
                msg->len = sim->buf.len;
                memcpy(msg->payload, sim->buf.data, sim->buf.len);
                (void)len;
                double at = sc_sim_link_send(&d->up, sim->now, sim->buf.len + SC_SIM_MSG_HDR);
                if (sc_sim_queue_push(&sim->q, at, SC_EV_RECV, i, msg)) {
                        free(msg);
                        return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "sim: out of memory");
                }
        }
        return SC_OK;
}

/* Advances device i's state machine at sim->now until it computes or waits. */
static sc_err_t sc_sim_ready(sc_sim_t *sim, int i, char *errstr, size_t errstr_size)
{
        sc_sim_dev_t *d = &sim->devs[i];
        sc_sync_act_t act;
        sc_err_t err;

        for (;;) {
                sc_sync_worker_next(d->w, sim->now, &act);
                if (act.kind == SC_ACT_WAIT) {
                        d->busy = 0;
                        return SC_OK;
                }
                if (act.kind == SC_ACT_SEND) {
                        if ((err = sc_sim_send(sim, i, &act, errstr, errstr_size)))
                                return err;
                        sc_sync_worker_sent(d->w, sim->now);
                        /* Sending blocks until the update left the device: a
                         * device cannot outrun its uplink. */
                        if (d->up.free_at > sim->now) {
                                d->send_wait += d->up.free_at - sim->now;
                                d->busy = 1;
                                return sc_sim_queue_push(&sim->q, d->up.free_at, SC_EV_READY, i,
                                                         NULL);
                        }
                        continue;
                }
                int b = act.batch > sim->max_batch ? sim->max_batch : act.batch;
                sc_sim_stream_advance(&d->stream, sim->now);
                if (d->stream.buffered < (uint64_t)b) {
                        double t = sc_sim_stream_ready_at(&d->stream, sim->now, (uint64_t)b);
                        if (d->data_wait_since < 0)
                                d->data_wait_since = sim->now;
                        d->busy = 1;
                        return sc_sim_queue_push(&sim->q, t, SC_EV_READY, i, NULL);
                }
                if (d->data_wait_since >= 0) {
                        d->data_wait += sim->now - d->data_wait_since;
                        d->data_wait_since = -1;
                }
                sc_sim_compute(sim, i, b, act.local_step);
                d->last_batch = b;
                d->busy = 1;
                return sc_sim_queue_push(&sim->q, sim->now + d->spc * b + sim->spec.step_overhead,
                                         SC_EV_COMPUTED, i, NULL);
        }
}

/* ---- server -------------------------------------------------------------- */

/* The model version: the least over the shards. */
static uint64_t sc_sim_version(const sc_sim_t *sim)
{
        uint64_t v = UINT64_MAX;
        for (int sh = 0; sh < sim->ns; sh++) {
                uint64_t x = sc_server_version(sim->servers[sh]);
                v = x < v ? x : v;
        }
        return v;
}

/* Sends shard sh's model to device i (one copy shared by a broadcast). */
static sc_err_t sc_sim_deliver(sc_sim_t *sim, int sh, int i, sc_sim_snap_t **snapp)
{
        sc_sim_delivery_t *del;
        sc_sim_dev_t *d = &sim->devs[i];
        size_t len = sim->begin[sh + 1] - sim->begin[sh];

        if (!*snapp) {
                if (!(*snapp = malloc(sizeof(**snapp) + len * sizeof(float))))
                        return SC_ERR_NOMEM;
                (*snapp)->refs = 0;
                (*snapp)->shard = sh;
                memcpy((*snapp)->params, sc_server_params(sim->servers[sh]), len * sizeof(float));
        }
        if (!(del = malloc(sizeof(*del))))
                return SC_ERR_NOMEM;
        del->snap = *snapp;
        del->snap->refs++;
        sc_server_model_info(sim->servers[sh], (uint32_t)i, &del->info);
        double at = sc_sim_link_send(&d->down, sim->now, len * sizeof(float) + SC_SIM_MSG_HDR);
        if (sc_sim_queue_push(&sim->q, at, SC_EV_MODEL, i, del)) {
                del->snap->refs--;
                free(del);
                return SC_ERR_NOMEM;
        }
        return SC_OK;
}

static sc_err_t sc_sim_recv(sc_sim_t *sim, sc_sim_msg_t *msg, char *errstr, size_t errstr_size)
{
        sc_codec_info_t info;
        sc_update_t u = {.worker = msg->worker,
                         .seq = msg->seq,
                         .t_read = msg->t_read,
                         .samples = msg->samples,
                         .kind = msg->kind,
                         .n = sim->begin[msg->shard + 1] - sim->begin[msg->shard]};
        sc_server_t *srv = sim->servers[msg->shard];
        sc_apply_result_t res;
        sc_sim_snap_t *snap = NULL;
        uint64_t v0 = sc_server_version(srv), c0 = sc_server_min_clock(srv);
        int sh = msg->shard;
        sc_sync_kind_t kind = sim->spec.sync.kind;
        sc_err_t err;
        size_t nnz;

        if ((err = sc_codec_payload_info(msg->payload, msg->len, &info, errstr, errstr_size)))
                return err;
        if (info.format == SC_CODEC_FMT_SPARSE) {
                if ((err = sc_codec_decode_sparse(msg->payload, msg->len, sim->didx, sim->dval, u.n,
                                                  &nnz, errstr, errstr_size)))
                        return err;
                u.indices = sim->didx;
                u.count = nnz;
        } else {
                memset(sim->dval, 0, u.n * sizeof(float));
                if ((err = sc_codec_decode_add(msg->payload, msg->len, sim->dval, u.n, 1.0f, errstr,
                                               errstr_size)))
                        return err;
        }
        u.values = sim->dval;
        if ((err = sc_server_apply(srv, &u, &res, errstr, errstr_size)))
                return err;
        if (!sc_sync_is_round_based(kind) && res.status == SC_APPLY_APPLIED) {
                sim->stale_sum += (double)(v0 - (msg->t_read < v0 ? msg->t_read : v0));
                sim->stale_n++;
        }
        if (sc_sync_is_round_based(kind)) {
                if (res.stepped)
                        for (int i = 0; i < sim->nd && !err; i++)
                                err = sc_sim_deliver(sim, sh, i, &snap);
        } else {
                err = sc_sim_deliver(sim, sh, (int)msg->worker, &snap);
                if (kind == SC_SYNC_SSP && sc_server_min_clock(srv) > c0)
                        for (int i = 0; i < sim->nd && !err; i++)
                                if (i != (int)msg->worker && !sim->devs[i].busy)
                                        err = sc_sim_deliver(sim, sh, i, &snap);
        }
        if (snap && snap->refs == 0)
                free(snap);
        if (err)
                return sc_errf(err, errstr, errstr_size, "sim: out of memory");
        if (sim->spec.max_steps > 0 && sc_sim_version(sim) >= (uint64_t)sim->spec.max_steps)
                sim->done = 1;
        return SC_OK;
}

static sc_err_t sc_sim_model(sc_sim_t *sim, int i, sc_sim_delivery_t *del, char *errstr,
                             size_t errstr_size)
{
        sc_sim_dev_t *d = &sim->devs[i];
        int sh = del->snap->shard;
        size_t b = sim->begin[sh], len = sim->begin[sh + 1] - b;
        sc_sync_model_info_t m = {UINT64_MAX, UINT64_MAX, UINT64_MAX};

        memcpy(d->params + b, del->snap->params, len * sizeof(float));
        memcpy(d->sync_params + b, del->snap->params, len * sizeof(float));
        d->info[sh] = del->info;
        for (int k = 0; k < sim->ns; k++) {
                m.version = d->info[k].version < m.version ? d->info[k].version : m.version;
                m.applied_seq =
                    d->info[k].applied_seq < m.applied_seq ? d->info[k].applied_seq : m.applied_seq;
                m.min_clock =
                    d->info[k].min_clock < m.min_clock ? d->info[k].min_clock : m.min_clock;
        }
        sc_sync_worker_model(d->w, sim->now, &m);
        if (!d->busy)
                return sc_sim_ready(sim, i, errstr, errstr_size);
        return SC_OK;
}

/* ---- metrics and the run loop ----------------------------------------------
 */

static void sc_sim_evaluate(sc_sim_t *sim, double *loss, double *acc)
{
        const sc_dataset_t *ds = sim->test;
        size_t m = sim->spec.eval_samples > 0 && (size_t)sim->spec.eval_samples < ds->n
                       ? (size_t)sim->spec.eval_samples
                       : ds->n;
        size_t numel = sc_shape_numel(ds->shape);
        double lsum = 0;
        long hits = 0;

        for (int sh = 0; sh < sim->ns; sh++)
                memcpy(sc_model_params(sim->model) + sim->begin[sh],
                       sc_server_params(sim->servers[sh]),
                       (sim->begin[sh + 1] - sim->begin[sh]) * sizeof(float));
        for (size_t s = 0; s < m; s += 250) {
                int b = (int)(m - s < 250 ? m - s : 250), correct = 0;
                float l = sc_model_eval_batch(sim->model, ds->x + s * numel, ds->y + s, NULL, b,
                                              &correct, NULL);
                lsum += (double)l * b;
                hits += correct;
        }
        *loss = m ? lsum / (double)m : 0;
        *acc = m ? (double)hits / (double)m : 0;
}

/* JSON has no NaN or infinity: those print as null. */
static void sc_sim_num(FILE *out, const char *key, double v, const char *fmt)
{
        fprintf(out, ",\"%s\":", key);
        if (isfinite(v))
                fprintf(out, fmt, v);
        else
                fputs("null", out);
}

static void sc_sim_totals(sc_sim_t *sim, uint64_t *up, uint64_t *down, uint64_t *buffered,
                          uint64_t *dropped, double *wait, double *data_wait, double *send_wait)
{
        *up = *down = *buffered = *dropped = 0;
        *wait = *data_wait = *send_wait = 0;
        for (int i = 0; i < sim->nd; i++) {
                sc_sim_dev_t *d = &sim->devs[i];
                sc_sim_stream_advance(&d->stream, sim->now);
                *up += d->up.bytes;
                *down += d->down.bytes;
                *buffered += d->stream.buffered;
                *dropped += d->stream.dropped;
                *wait += sc_sync_worker_wait_seconds(d->w);
                *send_wait += d->send_wait;
                *data_wait +=
                    d->data_wait + (d->data_wait_since >= 0 ? sim->now - d->data_wait_since : 0);
        }
}

static void sc_sim_line(sc_sim_t *sim, FILE *out, int final)
{
        sc_server_stats_t st;
        uint64_t up, down, buffered, dropped, steps = 0, compressed = 0;
        double wait, data_wait, send_wait, tl, acc;

        sc_sim_evaluate(sim, &tl, &acc);
        sim->last_acc = acc;
        sim->last_test_loss = tl;
        if (sim->reached_t < 0 && sim->spec.target_acc > 0 && acc >= sim->spec.target_acc)
                sim->reached_t = sim->now;
        sc_sim_totals(sim, &up, &down, &buffered, &dropped, &wait, &data_wait, &send_wait);
        sc_server_stats(sim->servers[0], &st); /* every update reaches every shard */
        for (int i = 0; i < sim->nd; i++)
                for (int sh = 0; sh < sim->ns; sh++) {
                        sc_codec_stats_t cs;
                        sc_codec_stats(sim->devs[i].codec[sh], &cs);
                        steps += cs.steps;
                        compressed += cs.compressed;
                }
        fprintf(out, final ? "{\"event\":\"end\",\"t\":%.6f" : "{\"t\":%.6f", sim->now);
        fprintf(out, ",\"step\":%llu,\"updates\":%llu", (unsigned long long)sc_sim_version(sim),
                (unsigned long long)st.applied);
        if (sim->loss_n)
                sim->last_loss = sim->loss_sum / (double)sim->loss_n;
        if (sim->stale_n)
                sim->last_stale = sim->stale_sum / (double)sim->stale_n;
        sc_sim_num(out, "loss", sim->loss_n || final ? sim->last_loss : NAN, "%.6f");
        sc_sim_num(out, "test_loss", tl, "%.6f");
        sc_sim_num(out, "test_acc", acc, "%.4f");
        fprintf(out,
                ",\"samples\":%llu,\"bytes_up\":%llu,\"bytes_down\":%llu,\"inject_"
                "bytes\":%llu,"
                "\"buffered\":%llu,\"dropped\":%llu",
                (unsigned long long)sim->samples, (unsigned long long)up, (unsigned long long)down,
                (unsigned long long)sim->inject_bytes, (unsigned long long)buffered,
                (unsigned long long)dropped);
        sc_sim_num(out, "wait_s", wait, "%.6f");
        sc_sim_num(out, "data_wait_s", data_wait, "%.6f");
        sc_sim_num(out, "send_wait_s", send_wait, "%.6f");
        sc_sim_num(out, "staleness", sim->stale_n || final ? sim->last_stale : 0, "%.4f");
        sc_sim_num(out, "cnc", steps ? (double)compressed / (double)steps : 0, "%.4f");
        if (sim->spec.sync.kind == SC_SYNC_ADSP)
                sc_sim_num(out, "commit_rate", sim->commit_rate, "%.4f");
        if (final) {
                uint64_t peak = 0;
                for (int i = 0; i < sim->nd; i++)
                        peak = sim->devs[i].stream.peak > peak ? sim->devs[i].stream.peak : peak;
                fprintf(out,
                        ",\"policy\":\"%s\",\"devices\":%d,\"shards\":%d,\"peak_buffered\":"
                        "%llu",
                        sc_sync_kind_name(sim->spec.sync.kind), sim->nd, sim->ns,
                        (unsigned long long)peak);
                sc_sim_num(out, "time_to_target", sim->reached_t >= 0 ? sim->reached_t : NAN,
                           "%.6f");
                fprintf(out, ",\"stalled\":%s", sim->stalled ? "true" : "false");
        }
        fputs("}\n", out);
        sim->loss_sum = 0;
        sim->loss_n = 0;
        sim->stale_sum = 0;
        sim->stale_n = 0;
}

sc_err_t sc_sim_run(sc_sim_t *sim, FILE *out, char *errstr, size_t errstr_size)
{
        sc_sim_event_t ev;
        sc_err_t err = SC_OK;

        while (!sim->done) {
                if (!sc_sim_queue_pop(&sim->q, &ev)) {
                        sim->stalled = 1; /* every device waits for something that never comes */
                        break;
                }
                if (ev.t > sim->spec.max_time) {
                        sc_sim_free_ptr(ev.type, ev.ptr);
                        sim->now = sim->spec.max_time;
                        break;
                }
                sim->now = ev.t;
                switch (ev.type) {
                case SC_EV_READY:
                        err = sc_sim_ready(sim, ev.dev, errstr, errstr_size);
                        break;
                case SC_EV_COMPUTED:
                        sim->devs[ev.dev].busy = 0;
                        sc_sync_worker_computed(sim->devs[ev.dev].w, sim->now,
                                                sim->devs[ev.dev].last_batch);
                        if (sim->tuner) {
                                double c = sc_adsp_tuner_tick(sim->tuner, sim->now);
                                if (c != sim->commit_rate) {
                                        sim->commit_rate = c;
                                        for (int i = 0; i < sim->nd; i++)
                                                sc_sync_worker_set_commit_rate(sim->devs[i].w, c);
                                }
                        }
                        err = sc_sim_ready(sim, ev.dev, errstr, errstr_size);
                        break;
                case SC_EV_RECV:
                        err = sc_sim_recv(sim, ev.ptr, errstr, errstr_size);
                        break;
                case SC_EV_MODEL:
                        err = sc_sim_model(sim, ev.dev, ev.ptr, errstr, errstr_size);
                        break;
                case SC_EV_EVAL:
                        sc_sim_line(sim, out, 0);
                        if (sim->reached_t >= 0)
                                sim->done = 1;
                        else if ((err = sc_sim_queue_push(&sim->q, sim->now + sim->spec.eval_every,
                                                          SC_EV_EVAL, -1, NULL)))
                                err = sc_errf(err, errstr, errstr_size, "sim: out of memory");
                        break;
                }
                if (ev.type == SC_EV_MODEL || ev.type == SC_EV_RECV) {
                        sc_sim_free_ptr(ev.type, ev.ptr);
                }
                if (err)
                        return err;
        }
        sc_sim_line(sim, out, 1);
        return ferror(out) ? sc_errf(SC_ERR_IO, errstr, errstr_size, "sim: writing metrics failed")
                           : SC_OK;
}
