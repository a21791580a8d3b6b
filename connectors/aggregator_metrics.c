/* aggregator_metrics.c — the aggregator's Prometheus families
 * (docs/OPERATIONS.md), written into each snapshot of its endpoint
 * (sc_monitor.h) from the counters of its progress lines and summary, and
 * the histograms of staleness, round duration and apply latency. */
#include <math.h>
#include <stdio.h>

#include "agg_state.h"

#define sc_aggm_counter(p, name, help, v) sc_prom_one(p, name, "counter", help, (double)(v))
#define sc_aggm_gauge(p, name, help, v) sc_prom_one(p, name, "gauge", help, (double)(v))

static const double sc_aggm_stale_le[] = {0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 100};
static const double sc_aggm_round_le[] = {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
static const double sc_aggm_apply_le[] = {1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3};
#define SC_AGGM_N(a) (sizeof(a) / sizeof((a)[0]))

void sc_agg_metrics_init(sc_aggregator_t *agg)
{
        sc_prom_hist_init(&agg->h_stale, sc_aggm_stale_le, SC_AGGM_N(sc_aggm_stale_le));
        sc_prom_hist_init(&agg->h_round, sc_aggm_round_le, SC_AGGM_N(sc_aggm_round_le));
        sc_prom_hist_init(&agg->h_apply, sc_aggm_apply_le, SC_AGGM_N(sc_aggm_apply_le));
}

/* Updates and records: counters, rejections by reason. */
static void sc_aggm_updates(sc_aggregator_t *agg, sc_prom_t *p)
{
        sc_aggm_counter(p, "scadles_grad_records_total", "Records read from the job's J.grad.",
                        agg->records);
        sc_aggm_counter(p, "scadles_updates_applied_total", "Updates applied to a model shard.",
                        agg->applied);
        sc_aggm_counter(p, "scadles_updates_late_total",
                        "Round updates computed on an older version, added to the current "
                        "round beside the worker's own.",
                        agg->late);
        sc_aggm_counter(p, "scadles_updates_stale_total",
                        "Updates consumed without being applied: too many rounds behind, or a "
                        "worker's second update of a round.",
                        agg->stale);
        sc_aggm_counter(p, "scadles_updates_duplicate_total",
                        "Updates seen before (a re-delivery): ignored.", agg->duplicates);
        sc_aggm_counter(p, "scadles_updates_lost_total",
                        "J.grad records removed by retention before they were read.", agg->lost);
        sc_aggm_counter(p, "scadles_updates_clipped_total",
                        "Updates scaled down to job.limits.max_norm.", agg->clipped);
        sc_prom_family(p, "scadles_updates_rejected_total", "counter",
                       "Records of J.grad, J.model or J.ctl refused, by reason "
                       "(docs/DISTRIBUTED.md).");
        for (int i = 0; i < SC_REJ__END; i++) {
                const char *lbl[] = {"reason", sc_agg_rej_names[i], NULL};
                sc_prom_sample(p, NULL, lbl, (double)agg->rej[i]);
        }
        sc_aggm_counter(p, "scadles_drift_reports_total",
                        "Drift events the workers reported on J.ctl.", agg->drift_reports);
        sc_aggm_counter(p, "scadles_model_steps_total", "Version advances of the held shards.",
                        agg->steps);
        sc_aggm_counter(p, "scadles_rounds_timed_out_total",
                        "Rounds closed by job.sync.round_timeout without a live worker's turn.",
                        agg->rounds_timed_out);
        sc_aggm_counter(p, "scadles_model_publishes_total", "Shard versions published to J.model.",
                        agg->publishes);
        sc_aggm_counter(p, "scadles_model_publish_failures_total",
                        "Publications the broker refused or did not deliver.", agg->publish_failed);
        sc_aggm_counter(p, "scadles_model_broadcasts_total",
                        "Compressed model broadcasts (deltas and keyframes).", agg->bcasts);
}

/* Shards, members, bytes, histograms. */
static void sc_aggm_shards(sc_aggregator_t *agg, sc_prom_t *p, int *finite)
{
        int held = 0, live = 0;
        char shard[16];
        sc_prom_family(p, "scadles_shard_model_version", "gauge",
                       "Version of each model shard this aggregator holds.");
        for (int s = 0; s < agg->nshards; s++) {
                if (!agg->shards[s].held)
                        continue;
                held++;
                *finite &= sc_server_is_finite(agg->shards[s].srv);
                snprintf(shard, sizeof(shard), "%d", s);
                const char *lbl[] = {"shard", shard, NULL};
                sc_prom_sample(p, NULL, lbl, (double)sc_server_version(agg->shards[s].srv));
        }
        for (int w = 0; w < agg->nworkers; w++)
                live += agg->live[w];
        sc_aggm_gauge(p, "scadles_shards_held", "Model shards (J.grad partitions) held.", held);
        sc_aggm_gauge(p, "scadles_workers_live",
                      "Workers the rounds wait for (heard from within job.session_timeout).", live);
        sc_prom_pair(p, "scadles_network_bytes_total", "counter",
                     "Bytes of updates read (direction=\"in\") and of the model published "
                     "(direction=\"out\").",
                     "direction", "in", (double)agg->bytes_in, "out",
                     (double)(agg->bytes_out + agg->bcast_bytes));
        sc_prom_family(p, "scadles_update_staleness_versions", "histogram",
                       "Versions a shard advanced between the model an applied update was "
                       "computed on and its application.");
        sc_prom_hist_write(p, &agg->h_stale, NULL);
        sc_prom_family(p, "scadles_round_duration_seconds", "histogram",
                       "Seconds between a shard's version advances (a round, or one step of an "
                       "asynchronous policy).");
        sc_prom_hist_write(p, &agg->h_round, NULL);
        sc_prom_family(
            p, "scadles_update_apply_seconds", "histogram",
            "Seconds one update took to apply to its shard (a closing round's server step "
            "included).");
        sc_prom_hist_write(p, &agg->h_apply, NULL);
}

void sc_agg_drift(sc_aggregator_t *agg, const sc_wire_control_t *c)
{
        double sample = NAN, acc = NAN;
        for (uint32_t i = 0; i < c->nfields && i < SC_WIRE_CTL_MAX_FIELDS; i++) {
                if (c->fields[i].key == SC_WIRE_F_PREQ_SAMPLE)
                        sample = c->fields[i].value;
                if (c->fields[i].key == SC_WIRE_F_ACCURACY)
                        acc = c->fields[i].value;
        }
        if (++agg->drift_reports > SC_AGG_STALE_LOGGED)
                return; /* counted (scadles_drift_reports_total), not logged */
        sc_agg_log(agg, 4,
                   "worker %u: drift: its prequential error rose at its sample %.0f (recent "
                   "accuracy %.4f)%s",
                   c->worker, sample, acc,
                   agg->drift_reports == SC_AGG_STALE_LOGGED ? "; further reports are counted, "
                                                               "not logged"
                                                             : "");
}

void sc_agg_metrics(sc_aggregator_t *agg, double now)
{
        if (!sc_monitor_due(agg->mon, now))
                return;
        int finite = 1;
        sc_prom_t *p = sc_monitor_begin(agg->mon, now);
        sc_monitor_reach(agg->mon, now, sc_kafka_reach_ok(&agg->reach));
        sc_aggm_updates(agg, p);
        sc_aggm_shards(agg, p, &finite);
        sc_monitor_publish(agg->mon, now, finite);
}
