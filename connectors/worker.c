/* worker.c — the worker runtime's loop (sc_worker.h): model, input (the
 * Kafka source pumping into the worker's ingest path, or pushed records),
 * stop conditions, evaluation, checkpoints, resume and commits. One step of
 * training is worker_step.c's, the distributed half worker_job.c's, the
 * summary worker_stats.c's (wk_state.h). */
#include "wk_state.h"
#include "sc_clock.h"
#include "sc_mem.h"

#include <math.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sc_alloc.h"
#include "sc_ckpt.h"
#include "sc_eval_set.h"
#include "sc_file.h"
#include "sc_kafka_util.h"

#define SC_WK_POLL_MAX 2048

static void sc_wk_src_log(void *opaque, int level, const char *msg)
{
        sc_worker_t *w = opaque;
        if (w->spec.log)
                w->spec.log(w->spec.log_opaque, level, msg);
}

/* The decoder of a pushed topic (sc_ingest_decoder_fn). */
static void sc_wk_decoder(void *opaque, const char *topic, sc_decode_spec_t *ds)
{
        sc_worker_t *w = opaque;
        sc_ks_decode_spec(w->conf, topic, w->numel, w->n_classes, ds);
}

void sc_worker_spec_defaults(sc_worker_spec_t *spec)
{
        memset(spec, 0, sizeof(*spec));
        spec->input = SC_WORKER_INPUT_KAFKA;
        spec->eval = 1;
        spec->inject_beta = 0.1;
}

/* Model, optimizer, schedule and test set. */
static sc_err_t sc_wk_model(sc_worker_t *w, char *errstr, size_t errstr_size)
{
        const sc_conf_t *conf = w->conf;
        sc_err_t err;
        const sc_conf_optim_t *op = &conf->optim;
        if (op->warmup_epochs > 0 || op->total_epochs > 0 || op->n_milestones_epochs > 0)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: $.optim.schedule: epochs have no meaning on a stream; give "
                               "the schedule in steps",
                               conf->origin);
        w->sched = op->sched;
        w->sched.lr = op->lr;
        if (w->sched.kind == SC_SCHED_COSINE && w->sched.total_steps == 0)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: $.optim.schedule.total_steps: the cosine schedule needs a "
                               "horizon in steps on a stream",
                               conf->origin);
        if ((err = sc_model_new(&w->model, &conf->model, errstr, errstr_size)) == SC_ERR_NOMEM)
                return err;
        if (err) {
                sc_conf_model_error(conf, errstr, errstr_size);
                return SC_ERR_CONFIG;
        }
        if (conf->model.loss != SC_LOSS_SOFTMAX_XENT)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: $.model.loss: labelled streams need the softmax "
                               "cross-entropy loss",
                               conf->origin);
        sc_nn_set_threads(conf->train.threads);
        sc_rng_t root, init;
        sc_rng_seed(&root, conf->train.seed);
        sc_rng_split(&root, &init, 1);
        sc_rng_split(&root, &w->rng, 2 + 1000u * (uint64_t)(w->spec.worker_id + 1));
        if (w->spec.distributed) {
                /* The job's initial model (sc_job_initial): stream 0. */
                sc_rng_t r0;
                sc_rng_seed(&root, conf->train.seed);
                sc_rng_split(&root, &r0, 0);
                sc_model_init(w->model, &r0);
        } else {
                sc_model_init(w->model, &init);
        }
        w->numel = sc_shape_numel(conf->model.input);
        w->n_classes = (int)sc_shape_numel(sc_model_output_shape(w->model));
        sc_sgd_spec_t ss = {
            .momentum = op->momentum, .nesterov = op->nesterov, .weight_decay = op->weight_decay};
        if (sc_sgd_init(&w->sgd, &ss, sc_model_nparams(w->model)))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "out of memory for the optimizer");
        w->have_sgd = 1;
        if (sc_metrics_new(&w->preq, w->n_classes, (size_t)conf->eval.window, errstr,
                           errstr_size) ||
            sc_metrics_new(&w->test_metrics, w->n_classes, (size_t)conf->eval.window, errstr,
                           errstr_size))
                return SC_ERR_NOMEM;
        if (!conf->worker.eval || !w->spec.eval)
                return SC_OK;
        return sc_eval_set_load(conf, w->n_classes, &w->test, errstr, errstr_size);
}

static sc_err_t sc_wk_resume(sc_worker_t *w, char *errstr, size_t errstr_size);

/* What the configuration and the spec must agree on before anything is
 * made. */
static sc_err_t sc_wk_check(const sc_worker_t *w, char *errstr, size_t errstr_size)
{
        const sc_conf_t *conf = w->conf;
        const sc_worker_spec_t *spec = &w->spec;
        if (conf->source.unlabelled)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: $.source.unlabelled: a worker trains on labelled records; "
                               "unlabelled ones are for scadles predict",
                               conf->origin);
        if (spec->distributed &&
            (spec->worker_id < 0 || spec->worker_id >= conf->job.sync.n_workers))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "worker id %d: the job admits ids 0 .. %d (job.workers)",
                               spec->worker_id, conf->job.sync.n_workers - 1);
        for (int i = 0; spec->distributed && i < conf->model.n_layers; i++)
                if (conf->model.layers[i].kind == SC_LAYER_STANDARDIZE)
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "%s: $.model.layers[%d]: standardize is for standalone "
                                       "workers for now: in a job each worker would learn its own "
                                       "statistics and the job's model would have none",
                                       conf->origin, i);
        if (spec->inject_alpha < 0 || spec->inject_alpha > 1 || spec->inject_beta < 0 ||
            spec->inject_beta > 1)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "injection: alpha and beta must be in [0, 1]");
        if (sc_wk_auto_window(conf) && !spec->distributed)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: $.worker.window: \"auto\" takes the window from a job's "
                               "model broadcast (the sum of its workers' rates); a standalone "
                               "worker needs seconds",
                               conf->origin);
        return SC_OK;
}

/* The training rows of the largest step (a batch and what a job mixes into
 * it) and the model's activations for them, so that no step allocates. */
static sc_err_t sc_wk_rows(sc_worker_t *w, char *errstr, size_t errstr_size)
{
        w->bspec = w->conf->worker.batch;
        int bmax = sc_batch_spec_max(&w->bspec);
        w->tcap = bmax + (int)ceil(w->spec.inject_beta * bmax) + 1;
        /* The batch is the head of the training rows: a take gathers the
         * samples straight into them, foreign ones go after. */
        if (!(w->tx = sc_malloc((size_t)w->tcap * w->numel * sizeof(float))) ||
            !(w->ty = sc_malloc((size_t)w->tcap * sizeof(int32_t))) ||
            !(w->plogits = sc_malloc((size_t)w->tcap * (size_t)w->n_classes * sizeof(float))) ||
            sc_batch_wrap(&w->batch, bmax, w->numel, w->tx, w->ty))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory for a batch");
        if (sc_model_reserve(w->model, w->tcap))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "out of memory for the activations of %d samples", w->tcap);
        return SC_OK;
}

/* The worker owns its ingest path in every mode: pushed records go into it,
 * or the Kafka source pumps its consumer's records into it. */
static sc_err_t sc_wk_input(sc_worker_t *w, char *errstr, size_t errstr_size)
{
        const sc_conf_t *conf = w->conf;
        const sc_worker_spec_t *spec = &w->spec;
        uint64_t seed = conf->train.seed +
                        (spec->input == SC_WORKER_INPUT_KAFKA ? (uint64_t)spec->worker_id : 0);
        sc_ingest_spec_t is = {.numel = w->numel,
                               .stream = w->sspec,
                               .batch = w->bspec,
                               .seed = seed,
                               .decoder = sc_wk_decoder,
                               .decoder_opaque = w};
        sc_err_t err = sc_ingest_new(&w->ingest, &is, errstr, errstr_size);
        if (!err && spec->input == SC_WORKER_INPUT_KAFKA &&
            !(err = sc_kafka_source_new(&w->src, conf, w->numel, w->n_classes, seed, sc_wk_src_log,
                                        w, errstr, errstr_size)))
                err = sc_kafka_source_feed(w->src, w->ingest, errstr, errstr_size);
        return err;
}

/* How the source commits (after the checkpoints that hold its records, or
 * naming the records a job's model holds), and the waker a distributed
 * worker sleeps on until the first of its clients has work: a record, a
 * model, a delivery report. */
static sc_err_t sc_wk_commits_and_waker(sc_worker_t *w, char *errstr, size_t errstr_size)
{
        const sc_conf_t *conf = w->conf;
        sc_err_t err = SC_OK;
        /* A standalone worker that checkpoints what its model holds commits
         * no further than its last checkpoint. */
        w->durable_commits = !w->job && w->src && conf->train.checkpoint[0] && conf->train.resume;
        if (w->durable_commits)
                sc_kafka_source_durable(w->src, 1);
        /* A job member's finished records are in the job's model: a
         * partition's next owner skips those its commits name. */
        if (w->job && w->src)
                sc_kafka_source_commit_covers(w->src, 1);
        if (w->durable_commits && conf->train.checkpoint_interval <= 0)
                sc_wk_logf(w, 5,
                           "commits follow checkpoints: with train.checkpoint_interval 0 the "
                           "group's committed offsets advance only when the worker stops");
        if (w->job && w->src &&
            ((err = sc_kafka_waker_new(&w->waker, errstr, errstr_size)) ||
             (err = sc_kafka_waker_watch(w->waker, sc_kafka_source_handle(w->src), errstr,
                                         errstr_size)) ||
             (err = sc_wk_job_watch(w, w->waker, errstr, errstr_size))))
                return err;
        return SC_OK;
}

sc_err_t sc_worker_new(sc_worker_t **wp, const sc_worker_spec_t *spec, char *errstr,
                       size_t errstr_size)
{
        sc_err_t err;
        *wp = NULL;
        sc_worker_t *w = sc_calloc(1, sizeof(*w));
        if (!w)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        w->spec = *spec;
        w->conf = spec->conf;
        w->last_acc = -1;
        w->t_step0 = w->t_step1 = -1;
        const sc_conf_t *conf = w->conf;
        if ((err = sc_wk_check(w, errstr, errstr_size)) ||
            (err = sc_wk_model(w, errstr, errstr_size)) ||
            (err = sc_wk_rows(w, errstr, errstr_size)))
                goto fail;
        w->sspec = conf->streams.buffer;
        /* The job's clients first: the source joins its group last, so no
         * rebalance waits for a member busy with the job's start-up. */
        if (spec->distributed && (err = sc_wk_job_new(w, errstr, errstr_size)))
                goto fail;
        if ((err = sc_wk_input(w, errstr, errstr_size)) ||
            (err = sc_wk_resume(w, errstr, errstr_size)) ||
            (err = sc_wk_commits_and_waker(w, errstr, errstr_size)))
                goto fail;
        sc_drift_spec_t ds = {.delta = conf->drift.delta,
                              .threshold = conf->drift.threshold,
                              .min_samples = (uint64_t)conf->drift.min_samples,
                              .alpha = conf->drift.alpha};
        sc_drift_init(&w->drift, &ds);
        if ((err = sc_monitor_new(&w->mon, conf, "worker", spec->log, spec->log_opaque, errstr,
                                  errstr_size)))
                goto fail;
        *wp = w;
        return SC_OK;
fail:
        sc_worker_destroy(w);
        return sc_kafka_fatal_or(err, errstr, errstr_size);
}

void sc_worker_destroy(sc_worker_t *w)
{
        if (!w)
                return;
        sc_monitor_destroy(w->mon);
        sc_kafka_waker_destroy(w->waker);
        sc_wk_job_destroy(w);
        sc_kafka_source_destroy(w->src);
        sc_ingest_destroy(w->ingest);
        sc_batch_destroy(w->batch);
        sc_free(w->tx);
        sc_free(w->ty);
        if (w->have_sgd)
                sc_sgd_free(&w->sgd);
        sc_model_destroy(w->model);
        sc_dataset_free(&w->test);
        sc_metrics_destroy(w->preq);
        sc_metrics_destroy(w->test_metrics);
        sc_free(w->plogits);
        for (size_t i = 0; i < w->n_durable; i++)
                sc_free(w->durable[i].topic);
        sc_free(w->durable);
        sc_free(w);
}

/* ---- checkpoint and resume ---- */

/* A JSON array or object a callback fills (covers, rates); failed once an
 * element could not be added. */
typedef struct sc_wk_jfill {
        json_t *list;
        int failed;
} sc_wk_jfill_t;

static void sc_wk_cover_json(void *opaque, const char *topic, int32_t partition, int64_t next,
                             const int64_t *done, size_t ndone)
{
        sc_wk_jfill_t *cv = opaque;
        json_t *d = json_array();
        for (size_t i = 0; d && i < ndone; i++)
                if (json_array_append_new(d, json_integer((json_int_t)done[i])))
                        cv->failed = 1;
        json_t *c = d ? json_pack("{s:s, s:i, s:I, s:o}", "topic", topic, "partition",
                                  (int)partition, "next", (json_int_t)next, "done", d)
                      : NULL;
        if (!c || json_array_append_new(cv->list, c))
                cv->failed = 1;
}

static void sc_wk_rate_json(void *opaque, const char *topic, double rate)
{
        sc_wk_jfill_t *rv = opaque;
        if (json_object_set_new(rv->list, topic, json_real(rate)))
                rv->failed = 1;
}

/* The checkpoint's resume section (docs/STREAMS.md): which records the model
 * holds, per partition, the prequential metrics of the samples it was
 * trained on, and each topic's arrival rate. NULL with errstr filled on
 * failure. */
static char *sc_wk_resume_json(sc_worker_t *w, char *errstr, size_t errstr_size)
{
        sc_wk_jfill_t cv = {json_array(), 0}, rv = {json_object(), 0};
        char *text = NULL;
        if (!cv.list || !rv.list) {
                snprintf(errstr, errstr_size, "out of memory for the resume section");
                goto out;
        }
        if (sc_ingest_cover(w->ingest, sc_wk_cover_json, &cv, errstr, errstr_size))
                goto out;
        sc_ingest_rates(w->ingest, w->t_now, sc_wk_rate_json, &rv);
        json_t *j =
            cv.failed || rv.failed
                ? NULL
                : json_pack("{s:s, s:I, s:I, s:O, s:o*, s:O}", "format", "scadles-resume/1", "step",
                            (json_int_t)w->steps, "samples",
                            (json_int_t)(w->resumed_samples + w->samples), "covers", cv.list,
                            "prequential", sc_metrics_state(w->preq), "rates", rv.list);
        text = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        if (!text)
                snprintf(errstr, errstr_size, "out of memory for the resume section");
out:
        json_decref(cv.list);
        json_decref(rv.list);
        return text;
}

/* Push mode with train.checkpoint: the host commits only what the last
 * durable checkpoint covers, so a restart after kill -9 re-delivers every
 * record the resumed model lacks (those it holds beyond are skipped). */
static void sc_wk_durable_cover(void *opaque, const char *topic, int32_t partition, int64_t next,
                                const int64_t *done, size_t ndone)
{
        sc_worker_t *w = opaque;
        (void)done;
        (void)ndone;
        for (size_t i = 0; i < w->n_durable; i++)
                if (w->durable[i].partition == partition && !strcmp(w->durable[i].topic, topic)) {
                        w->durable[i].reported &= w->durable[i].next == next;
                        w->durable[i].next = next;
                        return;
                }
        sc_wk_durable_t *nd = sc_realloc(w->durable, (w->n_durable + 1) * sizeof(*nd));
        char *t = sc_strdup(topic);
        if (!nd || !t) {
                if (nd)
                        w->durable = nd;
                sc_free(t);
                return; /* not reported: the host commits less, nothing is lost */
        }
        w->durable = nd;
        nd[w->n_durable++] = (sc_wk_durable_t){.topic = t, .partition = partition, .next = next};
}

static void sc_wk_durable_kafka(void *opaque, const char *topic, int32_t partition, int64_t next,
                                const int64_t *done, size_t ndone)
{
        (void)done;
        (void)ndone;
        sc_kafka_source_durable_at(opaque, topic, partition, next);
}

/* Saves the model to train.checkpoint (atomically) with, for a standalone
 * worker, the records it holds; a failure is logged, the run goes on (the
 * previous checkpoint stays). */
static void sc_wk_checkpoint(sc_worker_t *w)
{
        char why[512];
        const sc_conf_t *conf = w->conf;
        sc_ckpt_meta_t meta = {.step = w->steps, .seed = conf->train.seed};
        char *resume = NULL;
        if (!w->job && !(resume = sc_wk_resume_json(w, why, sizeof(why)))) {
                sc_wk_logf(w, 3, "checkpoint %s not written: %s", conf->train.checkpoint, why);
                return;
        }
        meta.resume = (const uint8_t *)resume;
        meta.resume_len = resume ? strlen(resume) : 0;
        if (sc_ckpt_save(conf->train.checkpoint, w->model, w->have_sgd ? &w->sgd : NULL, &meta, why,
                         sizeof(why)))
                sc_wk_logf(w, 3, "checkpoint: %s", why);
        else {
                w->checkpoints++;
                if (!w->src && !w->job)
                        sc_ingest_cover(w->ingest, sc_wk_durable_cover, w, why, sizeof(why));
                if (w->durable_commits &&
                    !sc_ingest_cover(w->ingest, sc_wk_durable_kafka, w->src, why, sizeof(why)) &&
                    sc_kafka_source_commit(w->src, 0, why, sizeof(why)))
                        sc_wk_logf(w, 4, "%s", why);
        }
        free(resume);
}

/* Gives the resume section's covers to the ingest path. */
static sc_err_t sc_wk_resume_covers(sc_worker_t *w, const char *text, size_t len, size_t *np,
                                    char *errstr, size_t errstr_size)
{
        const char *path = w->conf->train.checkpoint;
        char why[256];
        json_error_t je;
        sc_err_t err = SC_OK;
        *np = 0;
        json_t *j = json_loadb(text, len, 0, &je);
        if (!j)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "%s: resume section: not JSON (line %d, column %d: %s)", path,
                               je.line, je.column, je.text);
        json_t *covers = json_object_get(j, "covers");
        if (!json_is_array(covers)) {
                json_decref(j);
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "%s: resume section: $.covers: expected an array", path);
        }
        json_int_t samples = json_integer_value(json_object_get(j, "samples"));
        w->resumed_samples = samples > 0 ? (uint64_t)samples : 0;
        /* Prequential metrics go on from the checkpoint's (a section written
         * before they were kept has none: they start afresh). */
        json_t *pq = json_object_get(j, "prequential");
        if (pq && (err = sc_metrics_restore(w->preq, pq, why, sizeof(why)))) {
                json_decref(j);
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "%s: resume section: prequential: %s", path, why);
        }
        /* Each topic's arrival rate starts from the checkpoint's, so the
         * first batches after a restart have the size the rates gave. */
        json_t *rates = json_object_get(j, "rates"), *rv;
        const char *topic;
        if (rates && !json_is_object(rates))
                err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                              "%s: resume section: $.rates: expected an object", path);
        json_object_foreach(rates, topic, rv)
        {
                if (err)
                        break;
                if (!json_is_number(rv) || !(json_number_value(rv) >= 0))
                        err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                      "%s: resume section: $.rates.%s: expected a rate >= 0", path,
                                      topic);
                else
                        err = sc_ingest_rate_seed(w->ingest, topic, json_number_value(rv), errstr,
                                                  errstr_size);
        }
        if (err) {
                json_decref(j);
                return err;
        }
        for (size_t i = 0; !err && i < json_array_size(covers); i++) {
                json_t *c = json_array_get(covers, i), *done = json_object_get(c, "done");
                json_t *t = json_object_get(c, "topic"), *p = json_object_get(c, "partition"),
                       *n = json_object_get(c, "next");
                size_t nd = json_array_size(done);
                int64_t *d = nd ? malloc(nd * sizeof(int64_t)) : NULL;
                if (nd && !d) {
                        err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                                      "%s: resume section: out of memory", path);
                        break;
                }
                int ok = json_is_string(t) && json_is_integer(p) && json_is_integer(n) &&
                         json_integer_value(p) >= 0 && json_integer_value(p) <= INT32_MAX &&
                         json_is_array(done);
                for (size_t k = 0; ok && k < nd; k++) {
                        ok = json_is_integer(json_array_get(done, k));
                        if (ok)
                                d[k] = json_integer_value(json_array_get(done, k));
                }
                if (!ok)
                        err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                                      "%s: resume section: $.covers[%zu]: expected topic, "
                                      "partition (>= 0), next and done (an array of offsets)",
                                      path, i);
                else if ((err = sc_ingest_cover_add(
                              w->ingest, json_string_value(t), (int32_t)json_integer_value(p),
                              json_integer_value(n), d, nd, why, sizeof(why))))
                        err =
                            sc_errf(err == SC_ERR_NOMEM ? err : SC_ERR_CORRUPT, errstr, errstr_size,
                                    "%s: resume section: $.covers[%zu]: %s", path, i, why);
                free(d);
        }
        *np = json_array_size(covers);
        json_decref(j);
        return err;
}

typedef struct sc_wk_rate_sum {
        int n;
        double sum;
} sc_wk_rate_sum_t;

static void sc_wk_rate_sum(void *opaque, const char *topic, double rate)
{
        sc_wk_rate_sum_t *rs = opaque;
        (void)topic;
        rs->n++;
        rs->sum += rate;
}

/* A standalone worker whose train.checkpoint exists goes on from it (unless
 * train.resume is false): model, optimizer velocity, step, and the covers
 * of the records its model holds. A checkpoint that does not load is an
 * error: starting afresh would overwrite it. */
static sc_err_t sc_wk_resume(sc_worker_t *w, char *errstr, size_t errstr_size)
{
        const sc_conf_t *conf = w->conf;
        const char *path = conf->train.checkpoint;
        char why[768];
        if (w->spec.distributed || !path[0] || !conf->train.resume || access(path, F_OK))
                return SC_OK;
        sc_ckpt_meta_t meta;
        char *resume = NULL;
        size_t ncovers = 0;
        size_t resume_len = 0;
        sc_err_t err = sc_ckpt_load_resume(path, w->model, &w->sgd, &meta, NULL, &resume,
                                           &resume_len, why, sizeof(why));
        if (!err && resume)
                err = sc_wk_resume_covers(w, resume, resume_len, &ncovers, why, sizeof(why));
        free(resume);
        if (err)
                return sc_errf(err == SC_ERR_NOMEM ? err : SC_ERR_CONFIG, errstr, errstr_size,
                               "train.checkpoint: %s; the worker would overwrite it: move it "
                               "away, or set train.resume false to start afresh",
                               why);
        w->steps = meta.step;
        w->steps0 = meta.step;
        w->resumed = 1;
        if (!w->src)
                sc_ingest_cover(w->ingest, sc_wk_durable_cover, w, why, sizeof(why));
        sc_wk_rate_sum_t rs = {0, 0};
        sc_ingest_rates(w->ingest, w->t_now, sc_wk_rate_sum, &rs);
        sc_wk_logf(w, 6,
                   "resumed from %s: step %llu, %llu samples trained before, %zu partition(s) "
                   "covered, arrival rates of %d topic(s) resumed (%.1f samples/s in all)",
                   path, (unsigned long long)meta.step, (unsigned long long)w->resumed_samples,
                   ncovers, rs.n, rs.sum);
        return SC_OK;
}

/* ---- push mode ---- */

sc_err_t sc_worker_push(sc_worker_t *w, const char *topic, int32_t partition, int64_t offset,
                        const void *key, size_t key_len, const void *value, size_t value_len,
                        const sc_worker_header_t *headers, size_t n_headers, int64_t timestamp_ms,
                        char *errstr, size_t errstr_size)
{
        sc_decode_header_t hd[SC_DECODE_MAX_HEADERS + 1];
        sc_ingest_result_t res;
        int index;
        (void)timestamp_ms;
        if (w->spec.input != SC_WORKER_INPUT_PUSH)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "sc_worker_push: this worker reads Kafka itself");
        sc_err_t err = sc_ingest_stream(w->ingest, topic, &index, errstr, errstr_size);
        if (err)
                return err;
        /* One past the limit is enough for sc_decode_record to reject the record. */
        if (n_headers > SC_DECODE_MAX_HEADERS + 1)
                n_headers = SC_DECODE_MAX_HEADERS + 1;
        for (size_t i = 0; i < n_headers; i++) {
                hd[i].name = headers[i].name;
                hd[i].value = headers[i].value;
                hd[i].size = headers[i].size;
        }
        sc_record_t rec = {.key = key,
                           .key_size = key_len,
                           .value = value,
                           .value_size = value_len,
                           .headers = hd,
                           .n_headers = n_headers};
        err = sc_ingest_record(w->ingest, index, partition, offset, &rec, w->t_now, &res, errstr,
                               errstr_size);
        if (err == SC_ERR_AGAIN || err == SC_ERR_NOMEM)
                return err; /* not taken: the caller holds the record */
        w->in_since++;
        w->t_rx = w->t_now;
        if (!err && res.first)
                sc_wk_logf(w, 4, "%s", res.msg);
        return err;
}

int sc_worker_paused(const sc_worker_t *w, const char *topic)
{
        int i = sc_ingest_find(w->ingest, topic);
        return i < 0 ? -1 : sc_stream_paused(sc_ingest_at(w->ingest, i)->stream);
}

void sc_worker_commits(sc_worker_t *w, sc_worker_commit_fn fn, void *opaque)
{
        sc_offsets_commit_t c[64];
        if (w->src) /* the source commits its own consumer's positions */
                return;
        if (w->conf->train.checkpoint[0] && w->conf->train.resume && !w->job) {
                for (size_t i = 0; i < w->n_durable; i++)
                        if (!w->durable[i].reported) {
                                w->durable[i].reported = 1;
                                fn(opaque, w->durable[i].topic, w->durable[i].partition,
                                   w->durable[i].next);
                        }
                return;
        }
        for (int i = 0; i < sc_ingest_count(w->ingest); i++) {
                const sc_ingest_stream_t *is = sc_ingest_at(w->ingest, i);
                size_t n;
                do {
                        n = sc_stream_commits(is->stream, c, 64);
                        for (size_t k = 0; k < n; k++)
                                fn(opaque, is->topic, c[k].partition, c[k].offset);
                } while (n == 64);
        }
}

/* 1 for a member of the group that holds no partition (a rebalance gave
 * them all to others): it idles as well as one whose input ended. */
static int sc_wk_unassigned(const sc_worker_t *w)
{
        return w->src && sc_kafka_source_stats(w->src)->ks_partitions == 0;
}

/* 1 for a member whose assigned partitions hold records and whose position
 * is at their ends (a worker restarted on a feed it had read to its end):
 * it idles from its assignment although it received nothing. Asked once a
 * second at most (it copies the assignment); the answer is kept between. */
static int sc_wk_caught_up(sc_worker_t *w, double t)
{
        if (t - w->t_caught < 1.0)
                return w->caught;
        int64_t ends = 0;
        w->t_caught = t;
        w->caught = w->src && sc_kafka_source_stats(w->src)->ks_partitions > 0 &&
                    sc_kafka_source_lag_ends(w->src, &ends) == 0 && ends > 0;
        return w->caught;
}

static void sc_wk_check_stop(sc_worker_t *w, double t)
{
        const sc_conf_worker_t *wc = &w->conf->worker;
        /* A worker revoked of everything waits to be assigned again (its
         * group's coordinator may be moving after a broker died): it counts
         * as idle only after three times as long. */
        double idle = wc->idle_exit;
        if (w->src && sc_kafka_source_stats(w->src)->ks_awaiting)
                idle *= 3;
        if (w->stopped)
                return;
        /* Idle time counts only while a broker (and the Schema Registry of
         * held avro records) answers: an outage says nothing about whether
         * the topics are idle. */
        if (w->src &&
            (!sc_kafka_source_reachable(w->src) || sc_kafka_source_registry_waiting(w->src)))
                w->t_unreach = t;
        double quiet_since = fmax(w->t_rx, w->t_unreach);
        if (wc->duration > 0 && t - w->t0 >= wc->duration)
                sc_worker_stop(w, "duration");
        else if (wc->max_samples > 0 && w->samples >= (uint64_t)wc->max_samples)
                sc_worker_stop(w, "max-samples");
        else if (wc->idle_exit > 0 && (w->rebalances > 0 || !w->src) && t - quiet_since >= idle &&
                 (w->steps + w->in_since > 0 || sc_wk_unassigned(w) || sc_wk_caught_up(w, t)) &&
                 !sc_wk_holds_batch(w))
                sc_worker_stop(w, "idle");
        /* A job worker whose policy waits for a model that does not come (no
         * aggregator, or a job stalled) idles too, though it holds batches:
         * they stay uncommitted (returned at the revocation) for a later run.
         * Not before a round held by a silent member could have been closed
         * (job.session_timeout, job.sync.round_timeout) on top. */
        else if (wc->idle_exit > 0 && t - quiet_since >= idle &&
                 sc_wk_job_waited(w, t) >=
                     idle + w->conf->job.session_timeout + w->conf->job.round_timeout)
                sc_worker_stop(w, "idle: no model");
}

void sc_worker_clock(sc_worker_t *w, double now)
{
        if (!w->started) {
                w->started = 1;
                w->t0 = w->t_rx = w->t_prog = w->t_eval = w->t_commit = w->t_ckpt = now;
        }
        w->t_now = now;
}

/* Hands free heap memory back to the system when a stream freed chunks of
 * rows (a backlog drained, a topic left: docs/STREAMS.md), and once a
 * minute besides (sc_mem.h). */
static void sc_wk_give_back(sc_worker_t *w, double now)
{
        sc_stream_stats_t s;
        if (!sc_mem_look_due(&w->trim, now))
                return;
        sc_ingest_totals(w->ingest, &s);
        sc_mem_give_back(&w->trim, s.chunks_freed, now);
}

static sc_err_t sc_wk_poll(sc_worker_t *w, double now, int timeout_ms, char *errstr,
                           size_t errstr_size);

sc_err_t sc_worker_poll(sc_worker_t *w, double now, int timeout_ms, char *errstr,
                        size_t errstr_size)
{
        sc_err_t err = sc_wk_poll(w, now, timeout_ms, errstr, errstr_size);
        char why[600];
        /* The endpoint outlives the loop (a plugin's host goes on): it says
         * why the worker no longer trains (a stop: sc_worker_stop). */
        if (err) {
                snprintf(why, sizeof(why), "the worker failed: %s", errstr);
                sc_monitor_final(w->mon, why);
        }
        return err;
}

static sc_err_t sc_wk_poll(sc_worker_t *w, double now, int timeout_ms, char *errstr,
                           size_t errstr_size)
{
        const sc_conf_worker_t *wc = &w->conf->worker;
        sc_err_t err = SC_OK;
        sc_worker_clock(w, now);
        sc_wk_check_stop(w, now);
        if (w->stopped)
                return SC_OK;
        if ((w->src || w->job) && (err = sc_kafka_fatal_check(errstr, errstr_size)))
                return err;
        sc_batcher_t *bt = sc_wk_batcher(w);
        double wake = INFINITY;
        /* A policy waiting for a model sleeps on the clients (the model's
         * arrival wakes it), however full the buffer. */
        int waiting = sc_wk_job_waiting(w);
        int ready = bt && sc_batcher_ready(bt, now, &wake) && now >= w->t_next && !waiting;
        if (w->src) {
                int tmo = ready ? 0 : (int)fmin(timeout_ms, fmax(1.0, (wake - now) * 1000.0));
                /* A job's timers tick at 5 ms; while the policy waits, a ready
                 * batch is no reason to wake and the clients wake the loop
                 * for a model, so it sleeps up to 250 ms, a quarter of
                 * job.heartbeat_interval when that is shorter (heartbeats and
                 * commits, 1 s apart by default, keep their time). */
                if (waiting)
                        tmo = (int)fmin(
                            timeout_ms,
                            fmax(1.0, fmin(250.0, 250.0 * w->conf->job.heartbeat_interval)));
                else if (w->job && tmo > 5)
                        tmo = 5;
                size_t got = 0;
                /* With a waker, sleep on all the clients at once, not on the
                 * source alone (a model or a delivery report wakes it too). */
                if ((err = sc_kafka_source_poll(w->src, now, w->waker ? 0 : tmo, SC_WK_POLL_MAX,
                                                &got, errstr, errstr_size)))
                        return err;
                if (w->waker && !got && tmo > 0 && sc_kafka_waker_wait(w->waker, tmo) &&
                    (err = sc_kafka_source_poll(w->src, now, 0, SC_WK_POLL_MAX, &got, errstr,
                                                errstr_size)))
                        return err;
                w->in_since += got;
                const sc_kafka_source_stats_t *ks = sc_kafka_source_stats(w->src);
                uint64_t events = ks->ks_assigns + ks->ks_revokes;
                if (got || events != w->rebalances)
                        w->t_rx = now;
                w->rebalances = events;
        }
        /* No arrivals for a while: end of input, release the shuffle buffer. */
        int quiet = now - w->t_rx > fmax(0.5, 2 * wc->batch.window);
        bt = sc_wk_batcher(w);
        if (bt && quiet != w->draining) {
                sc_batcher_drain(bt, quiet);
                w->draining = quiet;
        }
        if (w->job) {
                if ((err = sc_wk_job_poll(w, now, errstr, errstr_size)))
                        return err;
        } else if (bt && now >= w->t_next && sc_batcher_ready(bt, now, NULL)) {
                uint64_t id;
                int n;
                if ((err = sc_wk_train(w, now, 1, NULL, &id, &n, errstr, errstr_size)))
                        return err;
                /* Standalone: the update is applied locally, acknowledged at once. */
                if ((err = sc_wk_ack(w, id, errstr, errstr_size)))
                        return err;
        }
        if (w->src && now - w->t_commit >= wc->commit_interval) {
                char why[512];
                if (sc_kafka_source_commit(w->src, 0, why, sizeof(why)))
                        sc_wk_logf(w, 4, "%s", why);
                w->t_commit = now;
        }
        if (w->test.n && wc->eval_interval > 0 && now - w->t_eval >= wc->eval_interval &&
            w->steps > 0) {
                if (sc_worker_eval(w, (size_t)wc->eval_samples, &w->last_acc, &w->last_test_loss) ==
                    SC_OK)
                        w->t_last_acc = now - w->t0;
                w->t_eval = now;
        }
        if (w->conf->train.checkpoint[0] && w->conf->train.checkpoint_interval > 0 &&
            now - w->t_ckpt >= w->conf->train.checkpoint_interval && w->steps > 0) {
                sc_wk_checkpoint(w);
                w->t_ckpt = now;
        }
        if (wc->progress_interval > 0 && now - w->t_prog >= wc->progress_interval) {
                sc_wk_progress(w, now);
                w->t_prog = now;
        }
        sc_wk_give_back(w, now);
        sc_wk_metrics(w, now);
        sc_wk_check_stop(w, now);
        return SC_OK;
}

int sc_worker_done(const sc_worker_t *w, const char **reason)
{
        if (reason)
                *reason = w->reason ? w->reason : "running";
        return w->stopped;
}

void sc_worker_stop(sc_worker_t *w, const char *reason)
{
        if (w->stopped)
                return;
        w->stopped = 1;
        w->reason = reason;
        char why[128];
        snprintf(why, sizeof(why), "the worker stopped (%s)", reason ? reason : "asked to");
        sc_monitor_final(w->mon, why);
}

/* A graceful stop trains what the shuffle pool holds (its samples pin their
 * partitions' commit points: untrained, the records trained after them could
 * not be committed either) and the last partial batch, reading nothing more;
 * a distributed worker goes on following its policy (rounds wait for their
 * models) for at most timeout_ms. What is left is returned uncommitted at
 * the revocation and counted there. */
static sc_err_t sc_wk_flush(sc_worker_t *w, int timeout_ms, char *errstr, size_t errstr_size)
{
        sc_batcher_t *bt = sc_wk_batcher(w);
        if (!bt || !w->started)
                return SC_OK;
        sc_batcher_flush(bt);
        double m0 = sc_clock_mono(), base = w->t_now;
        double t_end = m0 + timeout_ms / 1e3;
        uint64_t before = w->samples;
        sc_err_t err = SC_OK;
        while (sc_batcher_pooled(bt) > 0 && sc_clock_mono() < t_end) {
                double now = base + (sc_clock_mono() - m0);
                w->t_now = now;
                if (w->job) {
                        if ((err = sc_wk_job_poll(w, now, errstr, errstr_size)))
                                break;
                } else if (now >= w->t_next && sc_batcher_ready(bt, now, NULL)) {
                        uint64_t id;
                        int n;
                        if ((err = sc_wk_train(w, now, 1, NULL, &id, &n, errstr, errstr_size)) ||
                            (err = sc_wk_ack(w, id, errstr, errstr_size)))
                                break;
                        continue;
                }
                if (w->waker) {
                        sc_kafka_waker_wait(w->waker, 1);
                } else {
                        struct timespec ts = {0, 1000000};
                        nanosleep(&ts, NULL);
                }
        }
        if (w->samples > before || sc_batcher_pooled(bt) > 0)
                sc_wk_logf(w, 6, "stop: trained %" PRIu64 " pooled sample(s), %zu left",
                           w->samples - before, sc_batcher_pooled(bt));
        return err;
}

sc_err_t sc_worker_finish(sc_worker_t *w, int timeout_ms, char *errstr, size_t errstr_size)
{
        sc_err_t err = SC_OK, e2;
        char why[512];
        if (w->finished)
                return SC_OK;
        w->finished = 1;
        if (!w->stopped)
                sc_worker_stop(w, "finish");
        /* Not after an error, past --max-samples, nor when the model the
         * policy waits for did not come (what is pooled goes back
         * uncommitted, counted as returned). */
        if (!w->reason || (strcmp(w->reason, "error") && strcmp(w->reason, "max-samples") &&
                           strcmp(w->reason, "idle: no model")))
                err = sc_wk_flush(w, timeout_ms, errstr, errstr_size);
        w->elapsed = w->started ? w->t_now - w->t0 : 0;
        if (w->job && !err)
                err = sc_wk_job_finish(w, timeout_ms, errstr, errstr_size);
        else if (w->job)
                (void)sc_wk_job_finish(w, timeout_ms, why, sizeof(why));
        /* The checkpoint before the final commit: a durable worker commits
         * what it covers. A worker that trained nothing keeps an earlier
         * file (the model it would write is only the initial one). */
        if (w->conf->train.checkpoint[0] && w->steps > 0)
                sc_wk_checkpoint(w);
        else if (w->conf->train.checkpoint[0])
                sc_wk_logf(w, 5, "checkpoint %s not written: nothing was trained",
                           w->conf->train.checkpoint);
        if (w->src && (e2 = sc_kafka_source_finish(w->src, timeout_ms, why, sizeof(why)))) {
                if (!err)
                        err = sc_errf(e2, errstr, errstr_size, "%s", why);
        }
        if (w->test.n && sc_worker_eval(w, 0, &w->final_acc, &w->final_loss) == SC_OK)
                w->evaluated = 1;
        return err;
}

sc_err_t sc_worker_eval(sc_worker_t *w, size_t n, double *acc, double *loss)
{
        const sc_dataset_t *ds = &w->test;
        if (!ds->n)
                return SC_ERR_STATE;
        if (n == 0 || n > ds->n)
                n = ds->n;
        sc_metrics_reset(w->test_metrics);
        if (sc_metrics_eval(w->test_metrics, w->model, ds->x, ds->y, n))
                return SC_ERR_NOMEM;
        sc_metrics_summary_t s;
        sc_metrics_summary(w->test_metrics, &s);
        if (isnan(s.loss))
                return SC_ERR_STATE;
        *acc = s.accuracy;
        *loss = s.loss;
        return SC_OK;
}

sc_model_t *sc_worker_model(sc_worker_t *w)
{
        return w->model;
}

void sc_worker_decode_spec(const sc_worker_t *w, const char *topic, sc_decode_spec_t *ds)
{
        sc_ks_decode_spec(w->conf, topic, w->numel, w->n_classes, ds);
}
