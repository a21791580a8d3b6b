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
        sc_sim_bcast_free(sim);
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
                        free(d->bn_state);
                        sc_sgd_free(&d->local);
                }
        free(sim->devs);
        sc_mix_inject_destroy(sim->inject);
        sc_adsp_tuner_destroy(sim->tuner);
        if (sim->servers)
                for (int s = 0; s < sim->ns; s++)
                        sc_server_destroy(sim->servers[s]);
        free(sim->servers);
        sc_job_destroy(sim->job);
        sc_buf_free(&sim->buf);
        sc_buf_free(&sim->payload);
        free(sim->x);
        free(sim->y);
        free(sim->tmp);
        free(sim->bidx);
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

/* The job the devices and servers run: the Kafka job's spec (sc_job_spec_conf)
 * with the simulator's shards, seed, policy and update codec. Error feedback
 * is job.codec.error_feedback, as on Kafka; the limits are job.limits but for
 * the seq window: a device that leaves loses its updates in flight, and a
 * window would refuse all it sends after 64 more. */
static void sc_sim_job_spec(const sc_sim_t *sim, sc_job_spec_t *js)
{
        const sc_sim_spec_t *spec = &sim->spec;

        sc_job_spec_conf(js, sim->conf);
        js->shards = spec->shards > 0 ? spec->shards : 1;
        js->shards_key = "$.sim.shards";
        if (spec->seed)
                js->seed = spec->seed;
        js->sync = spec->sync;
        js->codec.id = spec->codec;
        js->codec.ratio = spec->codec_ratio;
        js->codec.delta = spec->codec_delta;
        js->codec.vote = spec->codec_vote;
        js->codec.half = spec->codec_half;
        js->codec.log8 = spec->codec_log8;
        js->codec.rice = spec->codec_rice;
        js->limits.seq_window = 0;
        if (sim->conf->optim.sched.kind == SC_SCHED_COSINE)
                js->total_steps = spec->max_steps;
}

/* scadles auto window: every device learns the sum of the stream rates the
 * online devices' workers size their batches with. */
static void sc_sim_rate_sum(sc_sim_t *sim)
{
        double sum = 0;
        for (int i = 0; i < sim->nd; i++)
                if (!sim->devs[i].offline)
                        sum += sc_sync_worker_rate(sim->devs[i].w);
        for (int i = 0; i < sim->nd; i++)
                sc_sync_worker_set_rate_sum(sim->devs[i].w, sum);
}

/* The configuration's parts the simulator refuses. */
static sc_err_t sc_sim_check(const sc_sim_spec_t *spec, const sc_conf_t *conf, char *errstr,
                             size_t errstr_size)
{
        /* Schedule times count server steps (versions) here: epochs mean nothing
         * on a stream. */
        if (conf->optim.warmup_epochs > 0 || conf->optim.total_epochs > 0 ||
            conf->optim.n_milestones_epochs > 0)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "$.optim.schedule: the simulator counts schedule times in server "
                               "steps; use warmup_steps, total_steps and milestones");
        if (conf->optim.sched.kind == SC_SCHED_COSINE && conf->optim.sched.total_steps <= 0 &&
            spec->max_steps <= 0)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "$.optim.schedule.total_steps: a cosine schedule in the "
                               "simulator needs total_steps (or sim.max_steps)");
        return SC_OK;
}

/* ADSP's commit-rate tuner (sim.tune). */
static sc_err_t sc_sim_tuner(sc_sim_t *sim, char *errstr, size_t errstr_size)
{
        /* Rates above Gamma / B_min all commit every B_min. */
        double cr = sim->spec.sync.commit_rate, cmax = 64 * cr;
        if (sim->spec.sync.commit_min > 0 &&
            sim->spec.sync.gamma / sim->spec.sync.commit_min < cmax)
                cmax = sim->spec.sync.gamma / sim->spec.sync.commit_min;
        sc_adsp_tuner_spec_t ts = {.gamma = sim->spec.sync.gamma,
                                   .c_init = cr,
                                   .c_step = cr,
                                   .c_max = cmax > cr ? cmax : cr,
                                   .target_loss = sim->spec.target_loss,
                                   .rise = 0.3,
                                   .research_every = sim->spec.research_every,
                                   .warmup = sim->spec.sync.gamma};
        return sc_adsp_tuner_new(&sim->tuner, &ts, 0, errstr, errstr_size);
}

/* Device i: codecs, policy half, its rng (from root), stream rate (drawn
 * from r), partition, compute speed, links (drawn from links), model copy
 * and first event. SC_ERR_NOMEM: the caller says "out of memory". */
static sc_err_t sc_sim_dev_new(sc_sim_t *sim, int i, sc_rng_t *root, sc_rng_t *r, sc_rng_t *links,
                               char *errstr, size_t errstr_size)
{
        const sc_sim_spec_t *spec = &sim->spec;
        sc_sim_dev_t *d = &sim->devs[i];
        size_t n = sim->n;
        sc_err_t err;
        if (!(d->codec = calloc((size_t)sim->ns, sizeof(*d->codec))) ||
            !(d->info = calloc((size_t)sim->ns, sizeof(*d->info))) ||
            !(d->read_ver = calloc((size_t)sim->ns, sizeof(*d->read_ver))))
                return SC_ERR_NOMEM;
        for (int sh = 0; sh < sim->ns; sh++)
                if ((err = sc_job_codec_new(sim->job, sh, &d->codec[sh], errstr, errstr_size)))
                        return err;
        if ((err = sc_sync_worker_new(&d->w, &sim->spec.sync, (uint32_t)i, errstr, errstr_size)))
                return err;
        sc_rng_split(root, &d->rng, 100 + (uint64_t)i);
        d->stream.rate = sc_sim_draw_rate(spec, i, r);
        d->stream.truncation = spec->truncation;
        d->stream.window = spec->buffer_window;
        if ((err = sc_sim_partition(sim, i, d))) {
                if (err == SC_ERR_CONFIG)
                        sc_errf(err, errstr, errstr_size,
                                "$.sim.labels_per_device: device %d has no samples", i);
                return err;
        }
        sc_sync_worker_set_rate(d->w, d->stream.rate);
        d->spc = spec->per_sample *
                 (sim->nd > 1 ? 1.0 + (spec->heterogeneity - 1.0) * i / (sim->nd - 1) : 1.0);
        d->data_wait_since = -1;
        sc_sim_links_draw(spec, links, &d->up, &d->down);
        if (!(d->params = malloc(n * sizeof(float))) ||
            !(d->sync_params = malloc(n * sizeof(float))) || !(d->grad = calloc(n, sizeof(float))))
                return SC_ERR_NOMEM;
        if (spec->local_mu > 0) {
                /* The velocity is the device's own: kept across commits and
                 * models received, as the server's is across rounds. */
                sc_sgd_spec_t ls = {.momentum = spec->local_mu};
                if (sc_sgd_init(&d->local, &ls, n))
                        return SC_ERR_NOMEM;
        }
        memcpy(d->params, sc_model_params(sim->model), n * sizeof(float));
        memcpy(d->sync_params, d->params, n * sizeof(float));
        if (sc_model_nstate(sim->model)) {
                size_t ss = sc_model_nstate(sim->model) * sizeof(float);
                if (!(d->bn_state = malloc(ss)))
                        return SC_ERR_NOMEM;
                memcpy(d->bn_state, sc_model_state(sim->model), ss);
        }
        if (!spec->downlink_bcast && sc_sim_queue_push(&sim->q, 0.0, SC_EV_READY, i, NULL))
                return SC_ERR_NOMEM;
        d->busy = 1;
        return SC_OK;
}

/* The first evaluation and the churn plan's leaves and rejoins. */
static sc_err_t sc_sim_plan(sc_sim_t *sim)
{
        const sc_sim_spec_t *spec = &sim->spec;
        if (sc_sim_queue_push(&sim->q, 0.0, SC_EV_EVAL, -1, NULL))
                return SC_ERR_NOMEM;
        for (int c = 0; c < spec->n_churn; c++) {
                const sc_sim_churn_t *ch = &spec->churn[c];
                if (sc_sim_queue_push(&sim->q, ch->leave_at, SC_EV_LEAVE, ch->device, NULL) ||
                    (ch->rejoin_at > ch->leave_at &&
                     sc_sim_queue_push(&sim->q, ch->rejoin_at, SC_EV_JOIN, ch->device, NULL)))
                        return SC_ERR_NOMEM;
        }
        return SC_OK;
}

sc_err_t sc_sim_new(sc_sim_t **simp, const sc_sim_spec_t *spec, const sc_conf_t *conf,
                    const sc_dataset_t *train, const sc_dataset_t *test, char *errstr,
                    size_t errstr_size)
{
        sc_sim_t *sim;
        sc_job_spec_t jspec;
        sc_rng_t root, r;
        sc_err_t err;

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
        if ((err = sc_sync_spec_check(&sim->spec.sync, errstr, errstr_size)) ||
            (err = sc_sim_check(spec, conf, errstr, errstr_size)))
                goto out;
        sc_sim_job_spec(sim, &jspec);
        if ((err = sc_job_new(&sim->job, &jspec, conf, errstr, errstr_size)))
                goto out;
        sim->model = sc_job_model(sim->job);
        if (sc_shape_numel(sc_model_output_shape(sim->model)) != (size_t)train->n_classes ||
            sc_shape_numel(conf->model.input) != sc_shape_numel(train->shape)) {
                err = sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                              "$.model: input or output size does not fit the data set (%d "
                              "classes)",
                              train->n_classes);
                goto out;
        }
        sc_nn_set_threads(1); /* deterministic and fair on shared cores */
        sim->n = sc_model_nparams(sim->model);
        sc_rng_seed(&root, jspec.seed);
        sc_job_rng(sim->job, &r); /* stream 0, past the initial model's draw */
        sim->ns = sc_job_shards(sim->job);
        sim->begin = sc_job_begins(sim->job);
        if (!(sim->servers = calloc((size_t)sim->ns, sizeof(*sim->servers))))
                goto out_nomem;
        for (int sh = 0; sh < sim->ns; sh++)
                if ((err = sc_job_server_new(sim->job, sh, &sim->servers[sh], errstr, errstr_size)))
                        goto out;
        sim->local_lr = spec->local_lr > 0 ? spec->local_lr : conf->optim.lr;
        sim->commit_rate = sim->spec.sync.commit_rate;
        sim->ingress.bps = spec->server_ingress_bps;
        sim->tau = sim->spec.sync.local_steps;
        if (spec->tune && spec->sync.kind == SC_SYNC_ADSP &&
            (err = sc_sim_tuner(sim, errstr, errstr_size)))
                goto out;
        sim->max_batch =
            sim->spec.sync.kind == SC_SYNC_SCADLES ? sim->spec.sync.b_max : sim->spec.sync.batch;
        if (!(sim->x =
                  malloc((size_t)sim->max_batch * sc_shape_numel(train->shape) * sizeof(float))) ||
            !(sim->y = malloc((size_t)sim->max_batch * sizeof(int32_t))) ||
            !(sim->bidx = malloc((size_t)sim->max_batch * sizeof(uint32_t))) ||
            !(sim->tmp = malloc(sim->n * sizeof(float))) ||
            !(sim->devs = calloc((size_t)sim->nd, sizeof(*sim->devs))) ||
            !(sim->votes = calloc((size_t)sim->nd, sizeof(int))))
                goto out_nomem;
        if (sim->spec.inject_alpha > 0 && sim->spec.inject_beta > 0) {
                /* 64 of the largest batches in all, at least one per device */
                size_t cap = 64 * (size_t)sim->max_batch / (size_t)sim->nd;
                if (cap < (size_t)sim->max_batch)
                        cap = (size_t)sim->max_batch;
                if (sc_mix_inject_new(&sim->inject, sim->nd, cap))
                        goto out_nomem;
        }
        sc_rng_split(&root, &sim->inj_rng, 1);
        /* The links' draws come from a copy of root, so the draws after them
         * are those of a run without edge links. */
        sc_rng_t links = root;
        sc_rng_split(&links, &links, 2);
        for (int i = 0; i < sim->nd; i++)
                if ((err = sc_sim_dev_new(sim, i, &root, &r, &links, errstr, errstr_size)))
                        goto err_dev;
        if (spec->downlink_bcast && (err = sc_sim_bcast_init(sim, errstr, errstr_size)))
                goto out;
        if (spec->downlink_bcast && sc_sim_bcast_start(sim))
                goto out_nomem;
        sc_sim_rate_sum(sim);
        if (sc_sim_plan(sim))
                goto out_nomem;
        *simp = sim;
        return SC_OK;

err_dev:
        if (err != SC_ERR_NOMEM)
                goto out;
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
                                sc_mix_inject_put(sim->inject, i, sim->bidx[k]);
                        sc_sim_link_send(&d->up, sim->now, (size_t)m * sample_bytes);
                        sim->inject_bytes += (size_t)m * sample_bytes;
                }
                size_t mixed =
                    sc_mix_inject_draw(sim->inject, &d->rng, (sc_mix_draw_t)sim->spec.inject_draw,
                                       i, (size_t)m, &sim->bidx[b - m], NULL);
                if (mixed)
                        sc_sim_link_send(&d->down, sim->now, mixed * sample_bytes);
        }
        sc_dataset_gather(sim->train, sim->bidx, (size_t)b, sim->x, sim->y);
        for (int sh = 0; sh < sim->ns; sh++)
                d->read_ver[sh] = d->info[sh].version;
        memcpy(sc_model_params(sim->model), d->params, sim->n * sizeof(float));
        if (d->bn_state) /* each device keeps its own running statistics */
                memcpy(sc_model_state(sim->model), d->bn_state,
                       sc_model_nstate(sim->model) * sizeof(float));
        loss = sc_model_train_batch(sim->model, sim->x, sim->y, NULL, b, &d->rng, NULL);
        if (d->bn_state)
                memcpy(d->bn_state, sc_model_state(sim->model),
                       sc_model_nstate(sim->model) * sizeof(float));
        memcpy(d->grad, sc_model_grads(sim->model), sim->n * sizeof(float));
        if (local_step) {
                float lr = (float)sim->local_lr;
                if (d->local.velocity)
                        sc_sgd_step(&d->local, d->params, d->grad, lr);
                else
                        for (size_t k = 0; k < sim->n; k++)
                                d->params[k] -= lr * d->grad[k];
        }
        sim->samples += (uint64_t)b;
        if (isfinite(loss)) {
                sim->loss_sum += loss;
                sim->loss_n++;
                if (sim->tuner)
                        sc_adsp_tuner_observe(sim->tuner, sim->now, loss);
                if (sim->spec.adacomm_interval > 0) {
                        if (sim->ada_f0_n < (uint64_t)sim->nd) {
                                sim->ada_f0_sum += loss;
                                sim->ada_f0_n++;
                        }
                        if (sim->now >= sim->ada_start + 0.75 * sim->spec.adacomm_interval) {
                                sim->ada_sum += loss;
                                sim->ada_n++;
                        }
                }
        }
        return loss;
}

/* async_pull applies to the policies whose server replies only to the sender. */
static int sc_sim_pulls(const sc_sim_t *sim)
{
        sc_sync_kind_t k = sim->spec.sync.kind;
        return sim->spec.async_pull && (k == SC_SYNC_ASP || k == SC_SYNC_ADACOMP);
}

/* When device d's update (bytes on the wire, its codec payload encoded from
 * len gradient coordinates at now) has been applied at the server: encoding
 * (sim.encode_rate), the device's uplink, the server's ingress link
 * (sim.server_ingress_bps) and its apply queue (sim.apply_rate coordinates/s,
 * one update at a time). Ingress and apply are FIFO in the order updates are
 * sent. */
static double sc_sim_server_at(sc_sim_t *sim, double now, sc_sim_dev_t *d, size_t len, size_t bytes,
                               const sc_buf_t *payload)
{
        const sc_sim_spec_t *sp = &sim->spec;
        double t = now + (sp->encode_rate > 0 ? (double)len / sp->encode_rate : 0);
        double at = sc_sim_link_send(&d->up, t, bytes);
        if (sp->server_ingress_bps > 0) {
                double in = at;
                at = sc_sim_link_send(&sim->ingress, in, bytes);
                sim->server_wait += at - in - (double)bytes / sp->server_ingress_bps;
        }
        if (sp->apply_rate > 0) {
                sc_codec_info_t info;
                size_t coords = len;
                if (!sc_codec_payload_info(payload->data, payload->len, &info, NULL, 0))
                        coords = info.nnz;
                double start = sim->apply_free_at > at ? sim->apply_free_at : at;
                sim->server_wait += start - at;
                sim->apply_free_at = start + (double)coords / sp->apply_rate;
                at = sim->apply_free_at;
        }
        return at;
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
                size_t b = sim->begin[sh];
                if (sim->spec.codec == SC_CODEC_ADAPTIVE && sim->spec.codec_vote) {
                        /* The reference ScaDLES decides by majority vote of the devices. */
                        for (int k = 0; k < sim->nd; k++)
                                sim->votes[k] = sc_codec_adaptive_vote(sim->devs[k].codec[sh]);
                        sc_codec_adaptive_set_decision(
                            d->codec[sh], sc_codec_adaptive_majority(sim->votes, sim->nd));
                }
                sc_wire_update_t u = {.worker = (uint32_t)i,
                                      .shard = (uint32_t)sh,
                                      .seq = act->seq,
                                      .t_read = d->read_ver[sh],
                                      .samples = (uint32_t)(d->last_batch > 0 ? d->last_batch : 1),
                                      .kind = (sc_wire_update_kind_t)act->update_kind};
                sim->buf.len = 0;
                if ((err = sc_job_update_encode(sim->job, d->codec[sh], &u, vec + b, &d->rng,
                                                &sim->payload, &sim->buf, errstr, errstr_size)))
                        return err;
                if (!(msg = malloc(sizeof(*msg) + sim->buf.len)))
                        return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "sim: out of memory");
                msg->worker = (uint32_t)i;
                msg->shard = sh;
                msg->len = sim->buf.len;
                memcpy(msg->bytes, sim->buf.data, sim->buf.len);
                /* the bytes a worker's update record carries on J.grad */
                double at = sc_sim_server_at(sim, sim->now, d, sim->begin[sh + 1] - b, msg->len,
                                             &sim->payload);
                if (sc_sim_queue_push(&sim->q, at, SC_EV_RECV, i, msg)) {
                        free(msg);
                        return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "sim: out of memory");
                }
                d->pulls += sc_sim_pulls(sim);
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
                if (d->pulls > 0) {
                        /* async_pull: the next batch starts from the reply. */
                        d->busy = 0;
                        return SC_OK;
                }
                int b = act.batch > sim->max_batch ? sim->max_batch : act.batch;
                double t = sim->now;
                d->stream.min_keep = (uint64_t)b;
                sc_sim_stream_advance(&d->stream, sim->now);
                if (sim->spec.scadles_drain && sim->spec.sync.kind == SC_SYNC_SCADLES) {
                        /* Reference ScaDLES: at each window's end take everything
                         * buffered, clamped to [b_min, b_max]. */
                        uint64_t have = d->stream.buffered;
                        t = d->last_take + sc_sync_worker_window(d->w);
                        b = have < (uint64_t)sim->spec.sync.b_min   ? sim->spec.sync.b_min
                            : have > (uint64_t)sim->spec.sync.b_max ? sim->spec.sync.b_max
                                                                    : (int)have;
                }
                if (d->stream.buffered < (uint64_t)b || t > sim->now) {
                        double tb = sc_sim_stream_ready_at(&d->stream, sim->now, (uint64_t)b);
                        t = tb > t ? tb : t;
                        if (d->data_wait_since < 0)
                                d->data_wait_since = sim->now;
                        d->busy = 1;
                        return sc_sim_queue_push(&sim->q, t, SC_EV_READY, i, NULL);
                }
                if (d->data_wait_since >= 0) {
                        d->data_wait += sim->now - d->data_wait_since;
                        d->data_wait_since = -1;
                }
                d->last_take = sim->now;
                sc_sim_compute(sim, i, b, act.local_step);
                d->last_batch = b;
                d->busy = 1;
                return sc_sim_queue_push(&sim->q, sim->now + d->spc * b + sim->spec.step_overhead,
                                         SC_EV_COMPUTED, i, NULL);
        }
}

/* ---- server -------------------------------------------------------------- */

/* Sends shard sh's model to device i (one copy shared by a broadcast). */
static sc_err_t sc_sim_deliver(sc_sim_t *sim, int sh, int i, sc_sim_snap_t **snapp)
{
        sc_sim_delivery_t *del;
        sc_sim_dev_t *d = &sim->devs[i];
        size_t len = sim->begin[sh + 1] - sim->begin[sh];
        size_t bytes = len * sizeof(float) + SC_SIM_MSG_HDR;
        const float *src = sc_server_params(sim->servers[sh]);
        sc_err_t err;

        if (sim->bsh) { /* the broadcast records device i reads to catch up */
                bytes = 0;
                if ((err = sc_sim_bcast_send(sim, sh, i, &bytes, &src)))
                        return err;
        }
        if (!*snapp) {
                if (!(*snapp = malloc(sizeof(**snapp) + len * sizeof(float))))
                        return SC_ERR_NOMEM;
                (*snapp)->refs = 0;
                (*snapp)->shard = sh;
                memcpy((*snapp)->params, src, len * sizeof(float));
        }
        if (!(del = malloc(sizeof(*del))))
                return SC_ERR_NOMEM;
        del->snap = *snapp;
        del->snap->refs++;
        sc_server_model_info(sim->servers[sh], (uint32_t)i, &del->info);
        double at = sc_sim_link_send(&d->down, sim->now, bytes);
        if (sc_sim_queue_push(&sim->q, at, SC_EV_MODEL, i, del)) {
                del->snap->refs--;
                free(del);
                return SC_ERR_NOMEM;
        }
        return SC_OK;
}

static sc_err_t sc_sim_recv(sc_sim_t *sim, sc_sim_msg_t *msg, char *errstr, size_t errstr_size)
{
        sc_server_t *srv = sim->servers[msg->shard];
        sc_apply_result_t res;
        sc_sim_snap_t *snap = NULL;
        uint64_t v0 = sc_server_version(srv), c0 = sc_server_min_clock(srv);
        int sh = msg->shard;
        sc_sync_kind_t kind = sim->spec.sync.kind;
        sc_wire_msg_t wm;
        sc_err_t err;

        if ((err = sc_wire_decode(msg->bytes, msg->len, &wm, errstr, errstr_size)) ||
            (err = sc_job_apply(sim->job, srv, &wm.u.update, &res, errstr, errstr_size)))
                return err;
        uint64_t t_read = wm.u.update.t_read;
        if (!sc_sync_is_round_based(kind) && res.status == SC_APPLY_APPLIED) {
                sim->stale_sum += (double)(v0 - (t_read < v0 ? t_read : v0));
                sim->stale_n++;
        }
        if (sc_sync_is_round_based(kind)) {
                if (res.stepped)
                        for (int i = 0; i < sim->nd && !err; i++)
                                if (!sim->devs[i].offline)
                                        err = sc_sim_deliver(sim, sh, i, &snap);
        } else {
                err = sc_sim_deliver(sim, sh, (int)msg->worker, &snap);
                if (kind == SC_SYNC_SSP && sc_server_min_clock(srv) > c0)
                        for (int i = 0; i < sim->nd && !err; i++)
                                if (i != (int)msg->worker && !sim->devs[i].busy &&
                                    !sim->devs[i].offline)
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
        if (d->pulls > 0)
                d->pulls--;
        if (!d->busy)
                return sc_sim_ready(sim, i, errstr, errstr_size);
        return SC_OK;
}

/* Device i leaves (live = 0) or comes back (live = 1): the servers learn it,
 * a round waiting only for i closes, and a returning device gets the model. */
static sc_err_t sc_sim_churn(sc_sim_t *sim, int i, int live, char *errstr, size_t errstr_size)
{
        sc_sim_dev_t *d = &sim->devs[i];
        sc_err_t err = SC_OK;

        if (d->offline == !live)
                return SC_OK;
        d->offline = !live;
        d->busy = 0;
        d->pulls = 0; /* its messages in flight are lost */
        sc_sim_rate_sum(sim);
        for (int sh = 0; sh < sim->ns && !err; sh++) {
                sc_server_t *srv = sim->servers[sh];
                sc_sim_snap_t *snap = NULL;
                sc_apply_result_t res;
                uint64_t c0 = sc_server_min_clock(srv);
                int released;
                sc_server_set_live(srv, (uint32_t)i, live, &res);
                released = sim->spec.sync.kind == SC_SYNC_SSP && sc_server_min_clock(srv) > c0;
                for (int k = 0; k < sim->nd && !err; k++) {
                        sc_sim_dev_t *o = &sim->devs[k];
                        int to = k == i ? live : res.stepped || (released && !o->busy);
                        if (to && !o->offline)
                                err = sc_sim_deliver(sim, sh, k, &snap);
                }
                if (snap && snap->refs == 0)
                        free(snap);
        }
        return err ? sc_errf(err, errstr, errstr_size, "sim: out of memory") : SC_OK;
}

/* ---- the run loop ------------------------------------------------------- */

/* ADACOMM: at the start of each interval, every device's tau follows the loss. */
static void sc_sim_adacomm(sc_sim_t *sim)
{
        double t0 = sim->spec.adacomm_interval;
        if (sim->now < sim->ada_start + t0)
                return;
        if (sim->ada_n && sim->ada_f0_n) {
                sim->tau = sc_sync_adacomm_tau(sim->spec.sync.local_steps,
                                               sim->ada_sum / (double)sim->ada_n,
                                               sim->ada_f0_sum / (double)sim->ada_f0_n);
                for (int i = 0; i < sim->nd; i++)
                        sc_sync_worker_set_local_steps(sim->devs[i].w, sim->tau);
        }
        sim->ada_start += t0 * floor((sim->now - sim->ada_start) / t0);
        sim->ada_sum = 0;
        sim->ada_n = 0;
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
                if (ev.dev >= 0 && sim->devs[ev.dev].offline &&
                    (ev.type == SC_EV_READY || ev.type == SC_EV_COMPUTED ||
                     ev.type == SC_EV_MODEL || ev.type == SC_EV_RECV)) {
                        /* A device that left does nothing; what it sent is lost. */
                        sim->lost_msgs += ev.type == SC_EV_RECV;
                        sc_sim_free_ptr(ev.type, ev.ptr);
                        continue;
                }
                switch (ev.type) {
                case SC_EV_LEAVE:
                case SC_EV_JOIN:
                        err = sc_sim_churn(sim, ev.dev, ev.type == SC_EV_JOIN, errstr, errstr_size);
                        break;
                case SC_EV_READY:
                        err = sc_sim_ready(sim, ev.dev, errstr, errstr_size);
                        break;
                case SC_EV_COMPUTED:
                        sim->devs[ev.dev].busy = 0;
                        sc_sync_worker_computed(sim->devs[ev.dev].w, sim->now,
                                                sim->devs[ev.dev].last_batch);
                        if (sim->spec.adacomm_interval > 0 &&
                            sim->spec.sync.kind == SC_SYNC_LOCALSGD)
                                sc_sim_adacomm(sim);
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
