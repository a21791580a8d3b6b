/* worker_stats.c — the worker's progress lines and its summary as JSON
 * (record accounting per docs/STREAMS.md, training and job counters, the
 * distributed half's counters and update latency percentiles). */
#include "wk_state.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sc_worker_counters(const sc_worker_t *w, sc_worker_counters_t *c)
{
        memset(c, 0, sizeof(*c));
        c->steps = w->steps;
        c->samples = w->samples;
        c->last_acc = w->last_acc;
        c->loss = w->last_loss;
        sc_metrics_summary_t ps;
        sc_metrics_summary(w->preq, &ps);
        c->preq_samples = ps.n;
        c->preq_acc = ps.accuracy;
        c->preq_loss = ps.loss;
        c->preq_window_acc = ps.window_accuracy;
        c->drift_events = w->drift_events;
        c->drift_last = w->drift_last;
        if (w->job)
                sc_wk_job_counters(w, c);
}

void sc_wk_progress(sc_worker_t *w, double now)
{
        sc_stream_stats_t s;
        sc_worker_counters_t c;
        char acc[64] = "", job[256] = "", src[160] = "", preq[128] = "";
        double dt = now - w->t_prog;
        sc_ingest_totals(w->ingest, &s);
        sc_worker_counters(w, &c);
        sc_batcher_t *bt = sc_wk_batcher(w);
        int ns = sc_ingest_count(w->ingest);
        double cap = (double)w->conf->streams.buffer.cap * (ns > 0 ? ns : 1);
        if (w->t_last_acc > 0)
                snprintf(acc, sizeof(acc), "  test acc %.4f @%.0fs", w->last_acc, w->t_last_acc);
        sc_metrics_summary_t ps;
        sc_metrics_summary(w->preq, &ps);
        if (ps.n)
                snprintf(preq, sizeof(preq), "  preq acc %.4f (last %" PRIu64 ": %.4f) loss %.4f",
                         ps.accuracy, ps.window_n, ps.window_accuracy, ps.loss);
        if (w->job)
                snprintf(job, sizeof(job),
                         "  v%" PRIu64 " sent %" PRIu64 " acked %" PRIu64 " up %.2fMB down %.2fMB",
                         c.model_version, c.updates_sent, c.updates_acked, c.bytes_up / 1e6,
                         c.bytes_down / 1e6);
        if (w->src) {
                const sc_kafka_source_stats_t *ks = sc_kafka_source_stats(w->src);
                int64_t lag = sc_kafka_source_lag(w->src);
                snprintf(src, sizeof(src), "  lost %" PRIu64 "  lag %" PRId64 "  paused %d/%d",
                         ks->ks_lost, lag, ks->ks_paused_partitions, ks->ks_partitions);
        }
        sc_wk_logf(w, 6,
                   "%6.1f s  in %.0f/s  trained %" PRIu64 " (%.0f/s)  batch %.0f  buf %" PRIu64
                   " (%.0f%%) pool %zu  dropped %" PRIu64 "  rejected %" PRIu64
                   "%s  loss %.4f  train acc "
                   "%.4f%s%s%s",
                   now - w->t0, dt > 0 ? (double)w->in_since / dt : 0.0, s.trained,
                   dt > 0 ? (double)w->seen / dt : 0.0,
                   w->batches ? (double)w->samples / (double)w->batches : 0.0, s.buffered,
                   100.0 * (double)s.buffered / cap, bt ? sc_batcher_pooled(bt) : 0, s.dropped,
                   s.rejected, src, w->seen ? w->loss_sum / (double)w->seen : 0.0,
                   w->seen ? w->hits / (double)w->seen : 0.0, preq, acc, job);
        w->loss_sum = w->hits = 0;
        w->seen = 0;
        w->in_since = 0;
}

/* The held-out evaluation's figures (when the worker evaluated) and the
 * class names the per-class figures follow. */
static void sc_wk_stats_eval(const sc_worker_t *w, json_t *j)
{
        if (w->evaluated) {
                json_object_set_new(j, "test_accuracy", json_real(w->final_acc));
                json_object_set_new(j, "test_loss", json_real(w->final_loss));
                json_object_set_new(j, "test_samples", json_integer((json_int_t)w->test.n));
                json_t *tm = sc_metrics_json(w->test_metrics);
                if (tm) {
                        json_object_set(j, "test_per_class_accuracy",
                                        json_object_get(tm, "per_class_accuracy"));
                        json_object_set(j, "test_confusion", json_object_get(tm, "confusion"));
                        json_decref(tm);
                }
        }
        const sc_vocab_t *names = w->conf->streams.decode.labels;
        if (names) { /* class i of the per-class figures and predictions */
                json_t *cls = json_array();
                for (size_t k = 0; cls && k < sc_vocab_size(names); k++)
                        json_array_append_new(cls, json_string(sc_vocab_name(names, k)));
                json_object_set_new(j, "classes", cls);
        }
}

/* One object per stream (topic): its records by outcome, the bytes of
 * sample rows its buffer holds now and the chunks of rows it gave back;
 * *row_bytes gets their sum. */
static json_t *sc_wk_stats_streams(const sc_worker_t *w, uint64_t *row_bytes)
{
        json_t *streams = json_array();
        int ns = sc_ingest_count(w->ingest);
        *row_bytes = 0;
        for (int i = 0; streams && i < ns; i++) {
                const sc_ingest_stream_t *is = sc_ingest_at(w->ingest, i);
                const sc_stream_stats_t *ss = sc_stream_stats(is->stream);
                size_t rb = sc_stream_row_bytes(is->stream);
                *row_bytes += rb;
                json_array_append_new(
                    streams, json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "topic",
                                       is->topic, "consumed", (json_int_t)ss->consumed, "trained",
                                       (json_int_t)ss->trained, "dropped", (json_int_t)ss->dropped,
                                       "rejected", (json_int_t)ss->rejected, "returned",
                                       (json_int_t)ss->revoked, "row_bytes", (json_int_t)rb,
                                       "chunks_freed", (json_int_t)ss->chunks_freed));
        }
        return streams;
}

char *sc_worker_stats_json(sc_worker_t *w)
{
        sc_stream_stats_t s;
        char err[512];
        sc_kafka_source_stats_t none;
        memset(&none, 0, sizeof(none));
        const sc_kafka_source_stats_t *ks = w->src ? sc_kafka_source_stats(w->src) : &none;
        sc_ingest_totals(w->ingest, &s);
        uint64_t rhs = s.trained + s.dropped + s.rejected + s.revoked + s.buffered + s.inflight;
        sc_err_t chk = SC_OK;
        if (w->src)
                chk = sc_kafka_source_check(w->src, err, sizeof(err));
        else if (sc_wk_batcher(w))
                chk = sc_batcher_check(sc_wk_batcher(w), err, sizeof(err));
        int ok = s.consumed == rhs && chk == SC_OK;
        json_t *faults = json_object();
        for (int k = 1; k < SC_DECODE_FAULT__END; k++)
                if (s.faults.count[k])
                        json_object_set_new(faults, sc_decode_fault_name((sc_decode_fault_t)k),
                                            json_integer((json_int_t)s.faults.count[k]));
        json_t *j = json_pack(
            "{s:s, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:I, s:I, s:I, "
            "s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:o}",
            "reason", w->reason ? w->reason : "running", "elapsed", w->elapsed, "received",
            (json_int_t)ks->ks_received, "consumed", (json_int_t)s.consumed, "trained",
            (json_int_t)s.trained, "dropped", (json_int_t)s.dropped, "rejected",
            (json_int_t)s.rejected, "returned", (json_int_t)s.revoked, "buffered",
            (json_int_t)s.buffered, "inflight", (json_int_t)s.inflight, "held",
            (json_int_t)ks->ks_held, "identity_ok", ok, "lost", (json_int_t)ks->ks_lost, "orphaned",
            (json_int_t)ks->ks_orphaned, "duplicates", (json_int_t)ks->ks_duplicates, "dead_letter",
            (json_int_t)ks->ks_dead_letter, "dead_letter_failed",
            (json_int_t)ks->ks_dead_letter_failed, "batches", (json_int_t)w->batches, "pauses",
            (json_int_t)ks->ks_pauses, "resumes", (json_int_t)ks->ks_resumes, "peak_buffered",
            (json_int_t)s.peak_buffered, "rebalances",
            (json_int_t)(ks->ks_assigns + ks->ks_revokes), "commit_errors",
            (json_int_t)ks->ks_commit_errors, "mean_latency_s",
            s.taken ? s.latency_sum / (double)s.taken : 0.0, "faults", faults);
        if (!j)
                return NULL;
        if (!ok)
                json_object_set_new(
                    j, "identity_error",
                    json_string(s.consumed == rhs ? err : "consumed != sum of outcomes"));
        json_object_set_new(j, "redelivered", json_integer((json_int_t)ks->ks_redelivered));
        json_object_set_new(j, "align_pauses", json_integer((json_int_t)ks->ks_align_pauses));
        json_t *reg = w->src ? sc_kafka_source_registry_json(w->src) : NULL;
        if (reg)
                json_object_set_new(j, "schema_registry", reg);
        json_object_set_new(j, "resumed", json_boolean(w->resumed));
        json_object_set_new(j, "skipped", json_integer((json_int_t)s.skipped));
        json_object_set_new(j, "steps", json_integer((json_int_t)w->steps));
        json_object_set_new(j, "samples_total",
                            json_integer((json_int_t)(w->resumed_samples + w->samples)));
        json_object_set_new(j, "samples", json_integer((json_int_t)w->samples));
        json_object_set_new(j, "train_span_s",
                            json_real(w->t_step0 >= 0 ? w->t_step1 - w->t_step0 : 0.0));
        sc_wk_stats_eval(w, j);
        if (w->conf->train.checkpoint[0])
                json_object_set_new(j, "checkpoints", json_integer((json_int_t)w->checkpoints));
        json_t *pq = sc_metrics_json(w->preq);
        if (pq)
                json_object_set_new(j, "prequential", pq);
        if (w->conf->drift.on)
                json_object_set_new(j, "drift",
                                    json_pack("{s:I, s:I}", "events", (json_int_t)w->drift_events,
                                              "last_sample", (json_int_t)w->drift_last));
        uint64_t row_bytes;
        json_t *streams = sc_wk_stats_streams(w, &row_bytes);
        json_object_set_new(j, "row_bytes", json_integer((json_int_t)row_bytes));
        if (streams)
                json_object_set_new(j, "streams", streams);
        if (w->src) {
                json_t *parts = sc_kafka_source_partitions(w->src, 5000);
                if (parts)
                        json_object_set_new(j, "partitions", parts);
        }
        if (w->job)
                sc_wk_job_json(w, j);
        char *text = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        return text;
}

/* ---- the distributed half ---- */

/* Authentication and the model records refused (docs/SECURITY.md). */
static void sc_wk_security_json(const sc_wk_job_t *j, const sc_job_model_stats_t *ms, json_t *o)
{
        if (!o)
                return;
        json_object_set_new(o, "authenticated", json_boolean(j->auth.on));
        json_object_set_new(o, "inject_auth_bad", json_integer((json_int_t)j->inj_auth));
        json_object_set_new(o, "inject_replayed", json_integer((json_int_t)j->inj_replayed));
        json_object_set_new(o, "model_auth_bad", json_integer((json_int_t)ms->auth_bad));
        json_object_set_new(o, "model_nonfinite", json_integer((json_int_t)ms->nonfinite));
        json_object_set_new(o, "model_jump", json_integer((json_int_t)ms->jump));
        json_object_set_new(o, "model_magnitude", json_integer((json_int_t)ms->magnitude));
        json_object_set_new(o, "model_rollback", json_integer((json_int_t)ms->rollback));
        json_object_set_new(o, "model_loss", json_integer((json_int_t)ms->loss));
}

static int sc_wk_cmp_float(const void *a, const void *b)
{
        float x = *(const float *)a, y = *(const float *)b;
        return (x > y) - (x < y);
}

/* {n, p50, p95, p99} in ms of the first n samples (copied, then sorted). */
static json_t *sc_wk_pct(const float *v, size_t n)
{
        float *c = n ? malloc(n * sizeof(float)) : NULL;
        double q[3] = {0, 0, 0}, at[3] = {0.50, 0.95, 0.99};
        if (c) {
                memcpy(c, v, n * sizeof(float));
                qsort(c, n, sizeof(float), sc_wk_cmp_float);
                for (int i = 0; i < 3; i++) {
                        size_t k = (size_t)ceil(at[i] * (double)n);
                        q[i] = round((double)c[k > 0 ? k - 1 : 0] * 100) / 100;
                }
                free(c);
        }
        return json_pack("{s:I, s:f, s:f, s:f}", "n", (json_int_t)n, "p50", q[0], "p95", q[1],
                         "p99", q[2]);
}

void sc_wk_job_counters(const sc_worker_t *w, sc_worker_counters_t *c)
{
        const sc_wk_job_t *j = w->job;
        c->updates_sent = j->sent;
        c->updates_acked = j->acked;
        c->bytes_up = j->bytes_up;
        c->dense_bytes = j->dense_bytes;
        c->bytes_down = sc_job_model_stats(j->jm)->bytes;
        c->model_version = sc_job_model_min_version(j->jm);
        c->injected_out = j->injected_out;
        c->injected_in = j->injected_in;
}

void sc_wk_job_json(const sc_worker_t *w, json_t *out)
{
        const sc_wk_job_t *j = w->job;
        const sc_job_model_stats_t *ms = sc_job_model_stats(j->jm);
        json_t *o = json_pack(
            "{s:i, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I, "
            "s:I, s:I, s:f, s:I, s:I}",
            "worker", w->spec.worker_id, "job", w->conf->job.name, "policy",
            sc_sync_kind_name(w->conf->job.sync.kind), "codec", sc_codec_name(w->conf->job.codec),
            "seq_base", (json_int_t)j->seq_base, "seq_last",
            (json_int_t)(j->seq_base + sc_sync_worker_clock(j->sync)), "updates_sent",
            (json_int_t)j->sent, "updates_acked", (json_int_t)j->acked, "updates_failed",
            (json_int_t)j->failed, "bytes_up", (json_int_t)j->bytes_up, "compression",
            j->bytes_up ? (double)j->dense_bytes / (double)j->bytes_up : 1.0, "dense_bytes",
            (json_int_t)j->dense_bytes, "bytes_down", (json_int_t)ms->bytes, "model_records",
            (json_int_t)ms->records, "model_bad", (json_int_t)ms->bad, "model_version",
            (json_int_t)sc_job_model_min_version(j->jm), "injected_out",
            (json_int_t)j->injected_out, "injected_in", (json_int_t)j->injected_in, "own_skipped",
            (json_int_t)j->own_skipped, "wait_s", sc_sync_worker_wait_seconds(j->sync),
            "inject_bad", (json_int_t)j->inj_bad, "ctl_sent", (json_int_t)j->ctl_sent);
        sc_wk_security_json(j, ms, o);
        if (o) {
                json_object_set_new(o, "away", json_integer((json_int_t)j->aways));
                json_object_set_new(o, "model_keyframes", json_integer((json_int_t)ms->keyframes));
                json_object_set_new(o, "model_seeks", json_integer((json_int_t)ms->seeks));
                /* the batch window at the end, and the rate sum an auto one came from */
                const sc_batcher_t *bt = w->ingest ? sc_ingest_batcher(w->ingest) : NULL;
                if (bt)
                        json_object_set_new(o, "window", json_real(sc_batcher_window(bt)));
                json_object_set_new(o, "window_rate_sum", json_real(j->auto_sum));
                json_object_set_new(
                    o, "window_estimated",
                    json_boolean(sc_wk_auto_window(w->conf) && j->auto_sum > 0 && !j->auto_heard));
        }
        if (o) {
                json_t *lat = json_pack("{s:o, s:o}", "acked", sc_wk_pct(j->lat_ack, j->n_ack),
                                        "visible", sc_wk_pct(j->lat_vis, j->n_vis));
                if (lat)
                        json_object_set_new(o, "latency_ms", lat);
                if (j->inj_from) {
                        json_t *from = json_array();
                        for (int i = 0; from && i < w->conf->job.sync.n_workers; i++)
                                json_array_append_new(from,
                                                      json_integer((json_int_t)j->inj_from[i]));
                        if (from)
                                json_object_set_new(o, "injected_from", from);
                }
                json_object_set_new(out, "job", o);
        }
}
