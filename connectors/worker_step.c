/* worker_step.c — the worker's own step, below its loop (worker.c), its
 * distributed half (worker_job.c) and its summary (worker_stats.c): the
 * ingest path it owns (batcher, acknowledgements, what it buffers), one
 * training step. Calls nothing of the files above it. */
#include "wk_state.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

sc_batcher_t *sc_wk_batcher(sc_worker_t *w)
{
        return sc_ingest_batcher(w->ingest);
}

sc_err_t sc_wk_ack(sc_worker_t *w, uint64_t id, char *errstr, size_t errstr_size)
{
        return sc_batcher_ack(sc_wk_batcher(w), id, errstr, errstr_size);
}

/* Feeds the drift detector the prequential error of the batch's n own
 * samples (scored in w->plogits) and acts on an alarm (drift.action). */
static void sc_wk_drift(sc_worker_t *w, int n)
{
        const sc_conf_drift_t *dc = &w->conf->drift;
        if (!dc->on)
                return;
        for (int i = 0; i < n; i++) {
                const float *z = w->plogits + (size_t)i * (size_t)w->n_classes;
                int pred = 0;
                for (int k = 1; k < w->n_classes; k++)
                        if (z[k] > z[pred])
                                pred = k;
                if (!sc_drift_add(&w->drift, pred != w->ty[i]))
                        continue;
                w->drift_events++;
                sc_metrics_summary_t ps;
                sc_metrics_summary(w->preq, &ps);
                w->drift_last = ps.n - (uint64_t)(n - 1 - i);
                if (dc->action == SC_CONF_DRIFT_RESET && w->have_sgd)
                        memset(w->sgd.velocity, 0, w->sgd.n * sizeof(float));
                if (dc->action == SC_CONF_DRIFT_BOOST)
                        w->boost_left = (uint64_t)dc->boost_samples;
                if (w->drift_events > SC_WK_DRIFT_LOGGED && w->drift_events % 100)
                        continue; /* counted, logged every 100th */
                sc_wk_logf(w, 4,
                           "drift: the prequential error rose (Page-Hinkley statistic above "
                           "drift.threshold %g) at prequential sample %" PRIu64
                           "; recent accuracy %.4f; action %s%s",
                           dc->threshold, w->drift_last, ps.window_accuracy,
                           dc->action == SC_CONF_DRIFT_RESET   ? "reset (momentum forgotten)"
                           : dc->action == SC_CONF_DRIFT_BOOST ? "boost (learning rate raised)"
                                                               : "none",
                           w->drift_events == SC_WK_DRIFT_LOGGED
                               ? " (further events are logged every 100th)"
                               : "");
        }
}

sc_err_t sc_wk_train(sc_worker_t *w, double now, int local_step, sc_wk_mix_fn mix, uint64_t *idp,
                     int *np, char *errstr, size_t errstr_size)
{
        sc_batcher_t *bt = sc_wk_batcher(w);
        if (!bt || !sc_batcher_ready(bt, now, NULL))
                return SC_ERR_AGAIN;
        sc_err_t err = sc_batcher_take(bt, now, w->batch, errstr, errstr_size);
        if (err)
                return err;
        int n = w->batch->n, m = 0, correct = 0; /* its rows are tx, ty */
        /* Prequential: the batch's own samples scored by the model before it
         * trains; the training pass's own outputs when they are the model's
         * predictions (no dropout, no batchnorm), else one inference pass. */
        int same = sc_model_train_is_eval(w->model);
        if (!same &&
            !isnan(sc_model_eval_batch(w->model, w->tx, NULL, NULL, n, NULL, w->plogits))) {
                sc_metrics_add_logits(w->preq, w->plogits, w->ty, n);
                sc_wk_drift(w, n);
        }
        if (mix)
                m = mix(w, w->batch, w->tx + (size_t)n * w->numel, w->ty + n, w->tcap - n);
        float loss = sc_model_train_batch_out(w->model, w->tx, w->ty, NULL, n + m, &w->rng,
                                              &correct, same ? w->plogits : NULL);
        if (same) {
                sc_metrics_add_logits(w->preq, w->plogits, w->ty, n);
                sc_wk_drift(w, n);
        }
        if (!isfinite(loss))
                return sc_errf(SC_ERR_DIVERGED, errstr, errstr_size,
                               "loss diverged at step %llu: it is %s (lower optim.lr)",
                               (unsigned long long)w->steps, isnan(loss) ? "NaN" : "infinite");
        if (local_step) {
                double lr = sc_step_lr(&w->sched, (long)w->steps, n + m, w->conf->optim.base_batch);
                if (w->boost_left > 0) { /* drift.action boost, for the samples trained */
                        uint64_t k = (uint64_t)(n + m);
                        lr *= w->conf->drift.boost;
                        w->boost_left -= w->boost_left < k ? w->boost_left : k;
                }
                w->lr = lr;
                sc_sgd_step(&w->sgd, sc_model_params(w->model), sc_model_grads(w->model),
                            (float)lr);
        }
        w->steps++;
        w->batches++;
        if (w->t_step0 < 0)
                w->t_step0 = now;
        w->t_step1 = now;
        w->samples += (uint64_t)n;
        w->seen += (uint64_t)(n + m);
        w->loss_sum += (double)loss * (n + m);
        w->hits += correct;
        w->last_loss = loss;
        if (w->spec.throttle > 0)
                w->t_next = now + (double)n / w->spec.throttle;
        *idp = w->batch->id;
        *np = n;
        return SC_OK;
}

int sc_wk_holds_batch(sc_worker_t *w)
{
        sc_batcher_t *bt = sc_wk_batcher(w);
        if (!bt)
                return 0;
        sc_stream_stats_t s;
        sc_ingest_totals(w->ingest, &s);
        uint64_t buffered = s.buffered;
        uint64_t need =
            (uint64_t)(w->conf->worker.batch.mode == SC_BATCH_FIXED ? w->conf->worker.batch.b
                                                                    : w->conf->worker.batch.b_min);
        return buffered + sc_batcher_pooled(bt) >= need;
}
