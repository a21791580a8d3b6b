/* worker_metrics.c — the worker's Prometheus families (docs/OPERATIONS.md),
 * written into each snapshot of its endpoint (sc_monitor.h) from the same
 * counters as its progress lines and summary (worker_stats.c). */
#include "wk_state.h"

#include <inttypes.h>
#include <stdio.h>

#include "sc_monitor.h"

#define sc_wkm_counter(p, name, help, v) sc_prom_one(p, name, "counter", help, v)
#define sc_wkm_gauge(p, name, help, v) sc_prom_one(p, name, "gauge", help, v)

/* scadles_records_total{topic, outcome}, the rejections by reason and what
 * the buffers hold. */
static void sc_wkm_records(sc_worker_t *w, sc_prom_t *p)
{
        static const char *const outcomes[] = {"consumed", "trained", "dropped", "rejected",
                                               "returned"};
        int ns = sc_ingest_count(w->ingest);
        sc_prom_family(p, "scadles_records_total", "counter",
                       "Records of a topic by outcome: consumed (read and counted), trained, "
                       "dropped (truncation), rejected (malformed), returned (buffered when "
                       "their partition was revoked).");
        for (int i = 0; i < ns; i++) {
                const sc_ingest_stream_t *is = sc_ingest_at(w->ingest, i);
                const sc_stream_stats_t *ss = sc_stream_stats(is->stream);
                const uint64_t v[] = {ss->consumed, ss->trained, ss->dropped, ss->rejected,
                                      ss->revoked};
                for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
                        const char *lbl[] = {"topic", is->topic, "outcome", outcomes[k], NULL};
                        sc_prom_sample(p, NULL, lbl, (double)v[k]);
                }
        }
        sc_prom_family(p, "scadles_stream_row_bytes", "gauge",
                       "Bytes of sample rows a topic's buffer holds now: made as its buffer "
                       "grows, given back 10-20 s after a backlog drains.");
        for (int i = 0; i < ns; i++) {
                const sc_ingest_stream_t *is = sc_ingest_at(w->ingest, i);
                const char *lbl[] = {"topic", is->topic, NULL};
                sc_prom_sample(p, NULL, lbl, (double)sc_stream_row_bytes(is->stream));
        }
        sc_stream_stats_t s;
        sc_ingest_totals(w->ingest, &s);
        sc_monitor_rejected(p, &s.faults);
        sc_wkm_counter(p, "scadles_records_skipped_total",
                       "Records a resumed checkpoint or a previous owner had trained: finished "
                       "without training again.",
                       (double)s.skipped);
        sc_wkm_gauge(p, "scadles_buffered_samples", "Samples buffered, waiting to be trained.",
                     (double)s.buffered);
        sc_wkm_gauge(p, "scadles_inflight_samples",
                     "Samples taken from the buffers and not yet finished: in the shuffle pool, in "
                     "a batch, or trained with their update not yet acknowledged.",
                     (double)s.inflight);
}

/* scadles_model_records_refused_total{reason}: J.bcast records not taken
 * (docs/SECURITY.md); "other" is what no named reason covers (framing, a
 * shard's size, a payload that does not decode). */
static void sc_wkm_refused(sc_prom_t *p, const sc_job_model_stats_t *ms)
{
        uint64_t named = ms->auth_bad + ms->nonfinite + ms->jump + ms->magnitude + ms->loss;
        const char *reasons[] = {"auth",     "nonfinite", "jump", "magnitude",
                                 "rollback", "loss",      "other"};
        const uint64_t v[] = {ms->auth_bad,
                              ms->nonfinite,
                              ms->jump,
                              ms->magnitude,
                              ms->rollback,
                              ms->loss,
                              ms->bad > named ? ms->bad - named : 0};
        sc_prom_family(p, "scadles_model_records_refused_total", "counter",
                       "Job model broadcast records refused, by reason: auth (unsigned or a tag "
                       "that does not verify), nonfinite, jump (too far ahead), magnitude "
                       "(beyond job.limits.model_max_abs), rollback (older than the model held: a "
                       "replay or a deposed owner's), loss (a model whose loss on the worker's "
                       "last batch is not finite, not installed), other.");
        for (size_t k = 0; k < sizeof(v) / sizeof(v[0]); k++) {
                const char *lbl[] = {"reason", reasons[k], NULL};
                sc_prom_sample(p, NULL, lbl, (double)v[k]);
        }
}

/* Training, prequential and held-out figures, the distributed half's. */
static void sc_wkm_training(sc_worker_t *w, sc_prom_t *p)
{
        sc_worker_counters_t c;
        sc_worker_counters(w, &c);
        sc_metrics_summary_t ps;
        sc_metrics_summary(w->preq, &ps);
        sc_wkm_counter(p, "scadles_train_steps_total",
                       "Training steps (batches) taken by this process.",
                       (double)(c.steps - w->steps0));
        sc_wkm_counter(p, "scadles_train_samples_total", "Samples trained.", (double)c.samples);
        sc_wkm_gauge(p, "scadles_train_loss", "Mean training loss of the last batch.", c.loss);
        sc_prom_family(p, "scadles_learning_rate", "gauge",
                       "Learning rate of the last local step (none where the aggregators step).");
        if (w->lr > 0)
                sc_prom_sample(p, NULL, NULL, w->lr);
        sc_wkm_counter(p, "scadles_prequential_samples_total",
                       "Samples scored by the model before it trained on them.",
                       (double)c.preq_samples);
        if (ps.n) { /* no sample before the first scored one */
                sc_prom_pair(p, "scadles_prequential_accuracy", "gauge",
                             "Accuracy of the model on samples before training on them: since "
                             "the start (window=\"all\") and over the last eval.window samples "
                             "(window=\"recent\").",
                             "window", "all", ps.accuracy, "recent", ps.window_accuracy);
                sc_prom_pair(p, "scadles_prequential_loss", "gauge",
                             "Mean cross-entropy of the model on samples before training on "
                             "them (window as for the accuracy).",
                             "window", "all", ps.loss, "recent", ps.window_loss);
        }
        sc_prom_family(p, "scadles_test_accuracy", "gauge",
                       "Accuracy on the held-out set at the last periodic evaluation.");
        if (w->t_last_acc > 0)
                sc_prom_sample(p, NULL, NULL, w->last_acc);
        sc_wkm_counter(p, "scadles_drift_events_total",
                       "Rises of the prequential error found by the drift detector.",
                       (double)w->drift_events);
        sc_wkm_gauge(p, "scadles_drift_statistic",
                     "The drift detector's statistic (an alarm above drift.threshold).",
                     w->conf->drift.on ? sc_drift_statistic(&w->drift) : 0);
        sc_wkm_counter(p, "scadles_checkpoints_total", "Checkpoints written.",
                       (double)w->checkpoints);
        if (!w->job)
                return;
        sc_wkm_gauge(p, "scadles_model_version", "Smallest version of the job's model shards held.",
                     (double)c.model_version);
        sc_prom_pair(p, "scadles_updates_total", "counter",
                     "Update messages produced (state=\"sent\") and acknowledged by the broker "
                     "(state=\"acked\").",
                     "state", "sent", (double)c.updates_sent, "acked", (double)c.updates_acked);
        sc_prom_pair(p, "scadles_network_bytes_total", "counter",
                     "Bytes of updates sent (direction=\"up\") and of the model received "
                     "(direction=\"down\").",
                     "direction", "up", (double)c.bytes_up, "down", (double)c.bytes_down);
        sc_wkm_gauge(p, "scadles_compression_ratio",
                     "Dense bytes the updates stand for over the bytes sent (1 before any).",
                     c.bytes_up ? (double)c.dense_bytes / (double)c.bytes_up : 1.0);
        sc_wkm_refused(p, sc_job_model_stats(w->job->jm));
}

void sc_wk_metrics(sc_worker_t *w, double now)
{
        if (!sc_monitor_due(w->mon, now))
                return;
        sc_prom_t *p = sc_monitor_begin(w->mon, now);
        if (w->src)
                sc_monitor_reach(w->mon, now, sc_kafka_source_reachable(w->src));
        sc_wkm_records(w, p);
        if (w->src)
                sc_monitor_source(p, w->src);
        sc_wkm_training(w, p);
        sc_monitor_publish(
            w->mon, now, sc_monitor_finite(sc_model_params(w->model), sc_model_nparams(w->model)));
}
