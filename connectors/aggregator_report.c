/* aggregator_report.c — what the aggregator tells: log lines, rejected
 * records counted by kind (the first of each logged with its place),
 * progress lines and the JSON summary. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "agg_state.h"
#include "sc_clock.h"

const char *const sc_agg_rej_names[SC_REJ__END] = {
    "corrupt", "version", "decode", "foreign", "shard", "payload", "update",
    "future",  "model",   "ctl",    "auth",    "limit", "ahead"};

sc_agg_rej_t sc_agg_rej_of(sc_err_t err)
{
        switch (err) {
        case SC_ERR_CORRUPT:
                return SC_REJ_CORRUPT;
        case SC_ERR_VERSION:
        case SC_ERR_UNSUPPORTED:
                return SC_REJ_VERSION;
        case SC_ERR_AUTH:
                return SC_REJ_AUTH;
        default:
                return SC_REJ_DECODE;
        }
}

void sc_agg_reject(sc_aggregator_t *agg, sc_agg_rej_t kind, const char *topic, int32_t partition,
                   int64_t offset, const char *why)
{
        if (agg->rej[kind]++ == 0)
                sc_agg_log(agg, 4,
                           "rejected %s record at %s [%d] offset %lld: %s (further %s records "
                           "are counted, not logged)",
                           sc_agg_rej_names[kind], topic, (int)partition, (long long)offset, why,
                           sc_agg_rej_names[kind]);
}

void sc_agg_limits(sc_aggregator_t *agg, int p, int64_t offset, uint32_t worker,
                   const sc_apply_result_t *res, const char *why)
{
        const char *topic = agg->topics[SC_JOB_GRAD].name;
        agg->clipped += (uint64_t)res->clipped;
        if (res->rolled_back && agg->rolled_back++ < SC_AGG_STALE_LOGGED)
                sc_agg_log(agg, 4,
                           "shard %d: the step closed by %s offset %lld would have left a "
                           "parameter non-finite or over job.limits.model_max_abs: step undone, "
                           "parameters kept%s",
                           p, topic, (long long)offset,
                           agg->rolled_back == SC_AGG_STALE_LOGGED
                               ? " (further ones are counted, not logged)"
                               : "");
        if (res->status == SC_APPLY_REJECTED) {
                sc_agg_reject(agg, SC_REJ_LIMIT, topic, p, offset, why);
        } else if (res->status == SC_APPLY_STALE) {
                if (agg->stale < SC_AGG_STALE_LOGGED)
                        sc_agg_log(agg, 5, "stale update at %s [%d] offset %lld: %s%s", topic, p,
                                   (long long)offset, why,
                                   agg->stale + 1 == SC_AGG_STALE_LOGGED
                                       ? " (further stale updates are counted, not logged)"
                                       : "");
        } else if (res->status == SC_APPLY_AHEAD) {
                agg->rej[SC_REJ_AHEAD]++;
                if (worker < (uint32_t)agg->nworkers && !agg->ahead_logged[worker]) {
                        agg->ahead_logged[worker] = 1;
                        sc_agg_log(agg, 4,
                                   "rejected ahead record at %s [%d] offset %lld: %s (further "
                                   "ones of worker %u are counted, not logged)",
                                   topic, p, (long long)offset, why, worker);
                }
        }
}

void sc_agg_progress(sc_aggregator_t *agg, double now)
{
        char shards[512] = "";
        size_t off = 0;
        uint64_t rej = 0;
        int live = 0;
        double dt = now - agg->last_progress;

        for (int p = 0; p < agg->nshards && off < sizeof(shards) - 40; p++)
                if (agg->shards[p].held)
                        off += (size_t)snprintf(
                            shards + off, sizeof(shards) - off, "%s%d:v%llu@%lld", off ? "," : "",
                            p, (unsigned long long)sc_server_version(agg->shards[p].srv),
                            (long long)agg->shards[p].next);
        for (int i = 0; i < SC_REJ__END; i++)
                rej += agg->rej[i];
        for (int w = 0; w < agg->nworkers; w++)
                live += agg->live[w];
        sc_agg_log(agg, 6,
                   "progress: t=%.1fs applied=%llu (%.1f/s) shards=[%s] in=%.2fMB out=%.2fMB "
                   "published=%llu rejected=%llu dup=%llu stale=%llu late=%llu live=%d/%d",
                   now - agg->t0, (unsigned long long)agg->applied,
                   dt > 0 ? (double)(agg->applied - agg->progress_applied) / dt : 0.0, shards,
                   (double)agg->bytes_in / 1e6, (double)agg->bytes_out / 1e6,
                   (unsigned long long)agg->publishes, (unsigned long long)rej,
                   (unsigned long long)agg->duplicates, (unsigned long long)agg->stale,
                   (unsigned long long)agg->late, live, agg->nworkers);
        agg->last_progress = now;
        agg->progress_applied = agg->applied;
}

char *sc_aggregator_summary(const sc_aggregator_t *agg)
{
        json_t *o = json_object(), *rej = json_object(), *sh = json_array();
        double el = sc_clock_mono() - agg->t0;
        uint64_t rtot = 0;
        char *s;

        for (int i = 0; i < SC_REJ__END; i++) {
                json_object_set_new(rej, sc_agg_rej_names[i],
                                    json_integer((json_int_t)agg->rej[i]));
                rtot += agg->rej[i];
        }
        for (int p = 0; p < agg->nshards; p++) {
                const sc_agg_shard_t *x = &agg->shards[p];
                if (!x->seen)
                        continue;
                json_array_append_new(sh, json_pack("{s:i, s:I, s:I}", "shard", p, "version",
                                                    (json_int_t)x->version, "offset",
                                                    (json_int_t)x->offset));
        }
        json_object_set_new(o, "job", json_string(agg->conf->job.name));
        json_object_set_new(o, "policy", json_string(sc_sync_kind_name(agg->conf->job.sync.kind)));
        json_object_set_new(o, "elapsed_s", json_real(round(el * 1000) / 1000));
        json_object_set_new(o, "records", json_integer((json_int_t)agg->records));
        json_object_set_new(o, "applied", json_integer((json_int_t)agg->applied));
        json_object_set_new(o, "updates_per_s",
                            json_real(el > 0 ? round((double)agg->applied / el * 10) / 10 : 0));
        {
                /* the rate while updates were flowing: first to last applied */
                double busy = agg->last_update - agg->first_update;
                json_object_set_new(o, "busy_s", json_real(round(busy * 1000) / 1000));
                json_object_set_new(
                    o, "busy_updates_per_s",
                    json_real(busy > 0 ? round((double)(agg->applied - 1) / busy) : 0));
        }
        json_object_set_new(o, "duplicates", json_integer((json_int_t)agg->duplicates));
        json_object_set_new(o, "stale", json_integer((json_int_t)agg->stale));
        json_object_set_new(o, "late", json_integer((json_int_t)agg->late));
        json_object_set_new(o, "parked", json_integer((json_int_t)agg->parks));
        json_object_set_new(o, "steps", json_integer((json_int_t)agg->steps));
        json_object_set_new(o, "rejected_total", json_integer((json_int_t)rtot));
        json_object_set_new(o, "rejected", rej);
        json_object_set_new(o, "lost", json_integer((json_int_t)agg->lost));
        json_object_set_new(o, "clipped", json_integer((json_int_t)agg->clipped));
        json_object_set_new(o, "rolled_back", json_integer((json_int_t)agg->rolled_back));
        json_object_set_new(o, "rounds_timed_out", json_integer((json_int_t)agg->rounds_timed_out));
        json_object_set_new(o, "authenticated", json_boolean(agg->auth.on));
        json_object_set_new(o, "ctl_records", json_integer((json_int_t)agg->ctl_records));
        json_object_set_new(o, "drift_reports", json_integer((json_int_t)agg->drift_reports));
        json_object_set_new(o, "published", json_integer((json_int_t)agg->publishes));
        json_object_set_new(o, "publish_failed", json_integer((json_int_t)agg->publish_failed));
        json_object_set_new(o, "broadcasts", json_integer((json_int_t)agg->bcasts));
        json_object_set_new(o, "keyframes", json_integer((json_int_t)agg->bcast_keys));
        json_object_set_new(o, "bytes_bcast", json_integer((json_int_t)agg->bcast_bytes));
        json_object_set_new(o, "bcast_failed", json_integer((json_int_t)agg->bcast_failed));
        json_object_set_new(o, "bytes_in", json_integer((json_int_t)agg->bytes_in));
        json_object_set_new(o, "bytes_out", json_integer((json_int_t)agg->bytes_out));
        json_object_set_new(o, "assigned", json_integer((json_int_t)agg->assigned));
        json_object_set_new(o, "revoked", json_integer((json_int_t)agg->revoked));
        json_object_set_new(o, "assignments_lost", json_integer((json_int_t)agg->lost_assignments));
        json_object_set_new(o, "restored", json_integer((json_int_t)agg->restored));
        json_object_set_new(o, "initialized", json_integer((json_int_t)agg->initialized));
        json_object_set_new(o, "shards", sh);
        s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
        json_decref(o);
        return s;
}
