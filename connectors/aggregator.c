/* aggregator.c — the aggregator runtime: drives one sc_server per assigned
 * J.grad partition (= shard), restores shards from J.model on assignment,
 * publishes them back, follows worker membership on J.ctl, and counts every
 * record it cannot use. */
#include "agg_state.h"
#include "sc_clock.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "sc_codec.h"
#include "sc_job_auth.h"
#include "sc_kafka_admin.h"
#include "sc_kafka_model.h"
#include "sc_kafka_util.h"
#include "sc_server.h"
#include "sc_wire.h"

/* Reads of a shard's J.model partition when the aggregator takes it: one,
 * then more while they time out (a leader being elected after a broker died:
 * Kafka's broker.session.timeout.ms is 9 s by default). */
#define SC_AGG_TAKE_TRIES 3

/* ---- clients ------------------------------------------------------------- */

typedef void (*sc_agg_rebalance_fn)(rd_kafka_t *rk, rd_kafka_resp_err_t rerr,
                                    rd_kafka_topic_partition_list_t *parts, void *opaque);

static int sc_agg_on_stats(rd_kafka_t *rk, char *json, size_t json_len, void *opaque)
{
        sc_aggregator_t *agg = opaque;
        (void)rk;
        int level;
        const char *say = sc_kafka_reach_event(&agg->reach, json, json_len, &level);
        if (say)
                sc_agg_log(agg, level, "%s", say);
        return 0; /* librdkafka frees json */
}

/* A client of the aggregator with kv set; rebalance (consumers that join
 * the group; may be NULL) gets the assignments. */
static sc_err_t sc_agg_client(sc_aggregator_t *agg, rd_kafka_type_t type, const char *const *kv,
                              sc_agg_rebalance_fn rebalance, rd_kafka_t **rkp, char *errstr,
                              size_t errstr_size)
{
        rd_kafka_conf_t *kc;
        char why[512];
        sc_err_t err;

        if ((err = sc_kafka_client_conf(&kc, agg->conf, type, NULL, errstr, errstr_size)))
                return err;
        for (; kv && kv[0]; kv += 2)
                if ((err = sc_kafka_conf_set(kc, kv[0], kv[1], kv[0], errstr, errstr_size))) {
                        rd_kafka_conf_destroy(kc);
                        return err;
                }
        if (type == RD_KAFKA_PRODUCER)
                sc_kafka_conf_delivery(kc);
        if (rebalance)
                rd_kafka_conf_set_rebalance_cb(kc, rebalance);
        /* The group consumer's statistics say whether a broker answers: an
         * outage does not count as idle time. */
        if (rebalance && (err = sc_kafka_reach_conf(&agg->reach, kc, agg->conf, sc_agg_on_stats,
                                                    errstr, errstr_size))) {
                rd_kafka_conf_destroy(kc);
                return err;
        }
        rd_kafka_conf_set_opaque(kc, agg);
        if (!(*rkp = rd_kafka_new(type, kc, why, sizeof(why)))) {
                rd_kafka_conf_destroy(kc);
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "kafka client: %s", why);
        }
        return SC_OK;
}

/* ---- shards -------------------------------------------------------------- */

typedef struct sc_agg_restore {
        sc_aggregator_t *agg;
        sc_server_t *srv;
} sc_agg_restore_t;

static int sc_agg_accept(void *opaque, const sc_wire_model_view_t *m, char *why, size_t why_size)
{
        sc_agg_restore_t *r = opaque;
        return sc_job_server_restore(r->agg->job, r->srv, m, why, why_size);
}

static void sc_agg_model_reject(void *opaque, const char *topic, int32_t partition, int64_t offset,
                                sc_err_t kind, const char *why)
{
        sc_agg_restore_t *r = opaque;
        (void)kind;
        sc_agg_reject(r->agg, SC_REJ_MODEL, topic, partition, offset, why);
}

/* 1 if shard s's rounds wait for worker w at now (sc_job_members_live_on). */
static int sc_agg_live_on(sc_aggregator_t *agg, const sc_agg_shard_t *s, int w, double now)
{
        return sc_job_members_live_on(agg->job, w, sc_server_applied_seq(s->srv, (uint32_t)w), now);
}

static void sc_agg_apply_live(sc_aggregator_t *agg, sc_agg_shard_t *s)
{
        double now = sc_clock_mono();
        for (int w = 0; w < agg->nworkers; w++)
                sc_server_set_live(s->srv, (uint32_t)w, sc_agg_live_on(agg, s, w, now), NULL);
}

/* Counts a tracker's failed deliveries (a broadcast's or a snapshot's). */
static void sc_agg_dv_account(sc_aggregator_t *agg, sc_agg_dv_t *t)
{
        if (!t->dv.dv_failed)
                return;
        if (t->snapshots)
                agg->publish_failed += (uint64_t)t->dv.dv_failed;
        else
                agg->bcast_failed += (uint64_t)t->dv.dv_failed;
        sc_agg_log(agg, 3, "shard %d: %lld %s not delivered: %s", t->shard,
                   (long long)t->dv.dv_failed, t->snapshots ? "snapshot(s)" : "broadcast(s)",
                   rd_kafka_err2str(t->dv.dv_first_err));
        t->dv.dv_failed = 0;
}

/* Ends a holding's tracker: freed when no report is due any more, else
 * kept on the retired list until its reports are in (sc_agg_dv_reap). */
static void sc_agg_dv_retire(sc_aggregator_t *agg, sc_agg_dv_t **tp)
{
        sc_agg_dv_t *t = *tp;
        *tp = NULL;
        if (!t)
                return;
        if (t->dv.dv_pending > 0) {
                t->next = agg->retired;
                agg->retired = t;
                return;
        }
        sc_agg_dv_account(agg, t);
        free(t);
}

/* The retired trackers whose reports came in: counted and freed. */
static void sc_agg_dv_reap(sc_aggregator_t *agg)
{
        for (sc_agg_dv_t **tp = &agg->retired; *tp;) {
                sc_agg_dv_t *t = *tp;
                sc_agg_dv_account(agg, t);
                if (t->dv.dv_pending > 0) {
                        tp = &t->next;
                        continue;
                }
                *tp = t->next;
                free(t);
        }
}

static sc_agg_dv_t *sc_agg_dv_new(int p, int snapshots)
{
        sc_agg_dv_t *t = calloc(1, sizeof(*t));
        if (t) {
                sc_kafka_delivery_init(&t->dv);
                t->snapshots = snapshots;
                t->shard = p;
        }
        return t;
}

/* Takes shard p: restores the latest usable J.model record or starts from
 * the seeded initial model; returns the J.grad offset to start at. */
static sc_err_t sc_agg_shard_take(sc_aggregator_t *agg, int p, int64_t *startp, char *errstr,
                                  size_t errstr_size)
{
        sc_agg_shard_t *s = &agg->shards[p];
        sc_kafka_model_rec_t rec;
        sc_agg_restore_t r = {.agg = agg};
        int64_t lo = 0, hi = 0;
        int found = 0, resume;
        sc_err_t err;

        if ((err = sc_job_server_new(agg->job, p, &s->srv, errstr, errstr_size)))
                return err;
        r.srv = s->srv;
        /* A broker that died leaves the partition without a leader until
         * the cluster elects one: a read that timed out is tried again. */
        for (int tries = 1;; tries++) {
                err = sc_kafka_model_read_latest(agg->reader, agg->topics[SC_JOB_MODEL].name, p,
                                                 agg->spec.model_timeout_ms, &agg->auth,
                                                 sc_agg_accept, sc_agg_model_reject, &r, &rec,
                                                 &found, errstr, errstr_size);
                /* This owner's broadcast generation: the J.bcast end offset
                 * now, above every earlier owner's (docs/DISTRIBUTED.md). */
                if (!err && (err = sc_kafka_end_offsets(agg->reader, agg->topics[SC_JOB_BCAST].name,
                                                        p, agg->spec.model_timeout_ms, &lo, &hi,
                                                        errstr, errstr_size))) {
                        sc_kafka_model_rec_free(&rec);
                        found = 0;
                }
                if (err != SC_ERR_IO || tries == SC_AGG_TAKE_TRIES)
                        break;
                sc_agg_log(agg, 4, "shard %d: %s; reading again (%d of %d)", p, errstr, tries + 1,
                           SC_AGG_TAKE_TRIES);
        }
        if (err) {
                sc_server_destroy(s->srv);
                s->srv = NULL;
                return err;
        }
        resume = found && rec.mr_model.grad_offset >= 0;
        s->next = resume ? rec.mr_model.grad_offset : 0;
        if (found) {
                agg->restored++;
                sc_agg_log(agg, 6,
                           "shard %d: restored version %llu from %s offset %lld; %s from offset "
                           "%lld",
                           p, (unsigned long long)rec.mr_model.version,
                           agg->topics[SC_JOB_MODEL].name, (long long)rec.mr_offset,
                           agg->topics[SC_JOB_GRAD].name, (long long)s->next);
        } else {
                agg->initialized++;
                sc_agg_log(agg, 6, "shard %d: no snapshot on %s, starting from the seeded model", p,
                           agg->topics[SC_JOB_MODEL].name);
        }
        sc_kafka_model_rec_free(&rec);
        /* The workers' view of this owner starts unknown: a keyframe first. */
        if ((err = sc_job_bcast_new(agg->job, p, &s->bpub, errstr, errstr_size))) {
                sc_server_destroy(s->srv);
                s->srv = NULL;
                return err;
        }
        sc_bcast_pub_generation(s->bpub, hi > 0 ? (uint64_t)hi : 0);
        /* This holding's own delivery trackers: reports of an earlier one
         * still due go to the earlier one's (retired at its release). */
        if (!(s->bdv = sc_agg_dv_new(p, 0)) || !(s->sdv = sc_agg_dv_new(p, 1))) {
                free(s->bdv);
                s->bdv = NULL;
                sc_bcast_pub_destroy(s->bpub);
                s->bpub = NULL;
                sc_server_destroy(s->srv);
                s->srv = NULL;
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "shard %d: out of memory", p);
        }
        s->key_pending = 0;
        s->bcast_time = 0;
        sc_agg_apply_live(agg, s);
        sc_kafka_gap_init(&s->gap, s->next);
        s->held = s->seen = 1;
        s->t_step = sc_clock_mono();
        /* a round restored in progress waits round_timeout from the take */
        s->t_round = sc_server_round_turns(s->srv) > 0 ? s->t_step : 0;
        s->parked = 0;
        s->pub_next = found ? s->next : -1;
        s->pub_version = sc_server_version(s->srv);
        s->pub_time = sc_clock_mono();
        s->version = sc_server_version(s->srv);
        s->offset = s->next;
        *startp = resume ? s->next : RD_KAFKA_OFFSET_BEGINNING;
        return SC_OK;
}

static sc_err_t sc_agg_publish(sc_aggregator_t *agg, int p, char *errstr, size_t errstr_size)
{
        sc_agg_shard_t *s = &agg->shards[p];
        sc_err_t err;

        agg->buf.len = 0;
        if (!sc_server_is_finite(s->srv))
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "shard %d: not published: a parameter is not finite", p);
        if ((err = sc_job_record_encode(&agg->buf, s->srv, s->next, errstr, errstr_size)) ||
            (err = sc_auth_sign(&agg->auth, &agg->buf, 0, SC_AUTH_AGGREGATOR, errstr, errstr_size)))
                return err;
        if ((err = sc_kafka_model_publish(agg->producer, agg->topics[SC_JOB_MODEL].name,
                                          (uint32_t)p, agg->buf.data, agg->buf.len, &s->sdv->dv,
                                          errstr, errstr_size)))
                return err;
        agg->publishes++;
        agg->bytes_out += agg->buf.len;
        s->pub_next = s->next;
        s->pub_version = sc_server_version(s->srv);
        s->pub_time = sc_clock_mono();
        return SC_OK;
}

/* Broadcasts shard p's version to the workers (J.bcast): a keyframe when
 * one is due and nothing of the shard awaits its report, else a delta once
 * the keyframe's offset is known (its delivery report), at most two in
 * flight (newer versions coalesce). A failed delivery forgets the view, so
 * a keyframe follows. Returns 1 if the version still waits. */
static int sc_agg_bcast(sc_aggregator_t *agg, int p)
{
        sc_agg_shard_t *s = &agg->shards[p];
        sc_wire_bcast_kind_t kind;
        char why[512];
        sc_err_t err;

        if (!s->held || !s->bpub)
                return 0;
        if (s->bdv->dv.dv_failed) { /* counted, and a keyframe follows */
                sc_agg_dv_account(agg, s->bdv);
                s->key_pending = 0;
                sc_bcast_pub_reset(s->bpub);
        }
        if (s->key_pending) {
                if (s->bdv->dv.dv_pending > 0)
                        return 1;
                sc_bcast_pub_keyed(s->bpub, s->bdv->dv.dv_last_offset);
                s->key_pending = 0;
        }
        if (sc_bcast_pub_current(s->bpub, sc_server_version(s->srv)))
                return 0;
        if (s->bdv->dv.dv_pending >= (sc_bcast_pub_key_due(s->bpub) ? 1 : 2))
                return 1;
        if (!sc_server_is_finite(s->srv))
                return 0; /* never happens: a non-finite step is undone */
        agg->buf.len = 0;
        /* the live workers' announced rates, for their auto batch window */
        sc_bcast_pub_rate_sum(s->bpub, sc_job_members_rate_sum(agg->job, sc_clock_mono()));
        err = sc_job_bcast_encode(agg->job, s->bpub, s->srv, &agg->buf, &kind, why, sizeof(why));
        if (!err)
                err = sc_auth_sign(&agg->auth, &agg->buf, 0, SC_AUTH_AGGREGATOR, why, sizeof(why));
        if (!err)
                err = sc_kafka_model_publish(agg->producer, agg->topics[SC_JOB_BCAST].name,
                                             (uint32_t)p, agg->buf.data, agg->buf.len, &s->bdv->dv,
                                             why, sizeof(why));
        if (err) {
                sc_bcast_pub_reset(s->bpub);
                if (!agg->fatal) {
                        agg->fatal = err;
                        snprintf(agg->fatal_str, sizeof(agg->fatal_str), "shard %d: broadcast: %s",
                                 p, why);
                }
                return 0;
        }
        s->key_pending = kind == SC_WIRE_BCAST_KEY;
        s->bcast_time = sc_clock_mono();
        agg->bcasts++;
        agg->bcast_keys += kind == SC_WIRE_BCAST_KEY;
        agg->bcast_bytes += agg->buf.len;
        agg->bytes_out += agg->buf.len;
        return 0;
}

static int sc_agg_changed(const sc_agg_shard_t *s)
{
        return s->held && (s->next != s->pub_next || sc_server_version(s->srv) != s->pub_version);
}

/* job.publish every: a new version is broadcast as soon as it exists, or,
 * while the shard's broadcasts await their delivery reports, the newest one
 * when they are in (sc_agg_bcast_due), so under a backlog versions coalesce
 * instead of queueing. Returns 1 if a version still waits. */
static int sc_agg_bcast_due(sc_aggregator_t *agg)
{
        int waiting = 0;
        for (int p = 0; agg->publish_every && p < agg->nshards; p++)
                waiting |= sc_agg_bcast(agg, p);
        return waiting;
}

/* Publishes a final snapshot (when anything changed), waits for it and
 * releases the shard. */
static void sc_agg_shard_release(sc_aggregator_t *agg, int p, int lost)
{
        sc_agg_shard_t *s = &agg->shards[p];
        char errstr[512];
        sc_err_t err = SC_OK;

        if (!s->held)
                return;
        if (lost) {
                /* The group gave the shard away already (session lost): a
                 * final snapshot now could overwrite the new owner's. */
                sc_agg_log(agg, 4,
                           "shard %d: assignment lost at version %llu; dropped without a final "
                           "snapshot (the new owner replays from the last one)",
                           p, (unsigned long long)sc_server_version(s->srv));
                agg->lost_assignments++;
        } else {
                char why[512];
                if (sc_agg_changed(s))
                        err = sc_agg_publish(agg, p, errstr, sizeof(errstr));
                /* the workers' view ends exact: a keyframe of the final
                 * parameters, unless the view is one already */
                if (s->bpub && !sc_bcast_pub_exact(s->bpub, sc_server_version(s->srv))) {
                        sc_kafka_delivery_wait(agg->producer, &s->bdv->dv, 30000, why, sizeof(why));
                        s->key_pending = 0;
                        sc_agg_dv_account(agg, s->bdv);
                        sc_bcast_pub_reset(s->bpub);
                        sc_agg_bcast(agg, p);
                }
                if (sc_kafka_delivery_wait(agg->producer, &s->bdv->dv, 30000, why, sizeof(why)))
                        sc_agg_log(agg, 4, "shard %d: final broadcast: %s", p, why);
        }
        /* A released shard's snapshots are delivered before the new owner
         * reads them (this holding's only: another shard's still in flight
         * are not waited for). A lost shard's new owner replays from what was
         * delivered already: its pending ones are neither waited for nor a
         * failure (a broker restart can leave one pending for longer than
         * the wait, and the loop would stop for nothing). */
        if (!err && !lost)
                err = sc_kafka_delivery_wait(agg->producer, &s->sdv->dv, 30000, errstr,
                                             sizeof(errstr));
        if (err && !agg->fatal) {
                agg->fatal = err;
                snprintf(agg->fatal_str, sizeof(agg->fatal_str),
                         "shard %d: final snapshot not delivered: %s", p, errstr);
        }
        s->version = sc_server_version(s->srv);
        s->offset = s->next;
        sc_agg_log(agg, 6, "shard %d: released at version %llu, %s offset %lld", p,
                   (unsigned long long)s->version, agg->topics[SC_JOB_GRAD].name,
                   (long long)s->next);
        sc_server_destroy(s->srv);
        s->srv = NULL;
        sc_bcast_pub_destroy(s->bpub);
        s->bpub = NULL;
        sc_agg_dv_retire(agg, &s->bdv);
        sc_agg_dv_retire(agg, &s->sdv);
        s->held = 0;
}

static void sc_agg_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t rerr,
                             rd_kafka_topic_partition_list_t *parts, void *opaque)
{
        sc_aggregator_t *agg = opaque;
        int coop = sc_kafka_cooperative(rk);
        char errstr[512];

        if (rerr == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
                for (int i = 0; i < parts->cnt; i++) {
                        rd_kafka_topic_partition_t *tp = &parts->elems[i];
                        int64_t start = RD_KAFKA_OFFSET_BEGINNING;
                        sc_err_t err;
                        if (tp->partition < 0 || tp->partition >= agg->nshards) {
                                tp->offset = RD_KAFKA_OFFSET_END; /* not a shard of this job */
                                continue;
                        }
                        if (agg->shards[tp->partition].held)
                                sc_agg_shard_release(agg, tp->partition, 0);
                        if ((err = sc_agg_shard_take(agg, tp->partition, &start, errstr,
                                                     sizeof(errstr)))) {
                                if (!agg->fatal) {
                                        agg->fatal = err;
                                        snprintf(agg->fatal_str, sizeof(agg->fatal_str),
                                                 "shard %d: %s", tp->partition, errstr);
                                }
                                start = RD_KAFKA_OFFSET_END;
                        }
                        tp->offset = start;
                        agg->assigned++;
                }
                if (agg->first_assign == 0)
                        agg->first_assign = sc_clock_mono();
                agg->last_record = sc_clock_mono();
                if (coop)
                        rd_kafka_error_destroy(rd_kafka_incremental_assign(rk, parts));
                else
                        rd_kafka_assign(rk, parts);
                rd_kafka_resume_partitions(rk, parts); /* no park survives a new assignment */
                return;
        }
        for (int i = 0; i < parts->cnt; i++)
                if (parts->elems[i].partition >= 0 && parts->elems[i].partition < agg->nshards &&
                    agg->shards[parts->elems[i].partition].held) {
                        sc_agg_shard_release(agg, parts->elems[i].partition,
                                             rd_kafka_assignment_lost(rk));
                        agg->revoked++;
                }
        if (coop)
                rd_kafka_error_destroy(rd_kafka_incremental_unassign(rk, parts));
        else
                rd_kafka_assign(rk, NULL);
}

/* ---- membership ---------------------------------------------------------- */

/* Worker w's membership on every held shard: live while it has not left
 * and was heard within the session timeout, and after a leave until the
 * shard has the updates the worker sent before it (they travel on J.grad,
 * the leave on J.ctl). Logged when the worker's standing changes. */
static void sc_agg_set_live(sc_aggregator_t *agg, int w, double now)
{
        int any = sc_job_members_live(agg->job, w, now);
        for (int p = 0; p < agg->nshards; p++) {
                sc_agg_shard_t *s = &agg->shards[p];
                sc_apply_result_t res = {0};
                if (!s->held)
                        continue;
                int live = sc_agg_live_on(agg, s, w, now);
                any |= live;
                if (live == sc_server_live(s->srv, (uint32_t)w))
                        continue;
                sc_server_set_live(s->srv, (uint32_t)w, live, &res);
                /* A round closed by a leave goes out now, not at the next tick. */
                if (res.stepped && agg->publish_every)
                        sc_agg_bcast(agg, p);
        }
        if (agg->live[w] == any)
                return;
        agg->live[w] = (uint8_t)any;
        sc_agg_log(agg, 6, "worker %d %s", w,
                   any ? "is live" : "left the barriers (silent or leaving)");
}

static void sc_agg_on_ctl(sc_aggregator_t *agg, const rd_kafka_message_t *msg, double now)
{
        const char *topic = agg->topics[SC_JOB_CTL].name;
        char why[256];
        sc_wire_msg_t wm;
        sc_err_t err;
        struct timespec wall;
        rd_kafka_timestamp_type_t tst;
        int64_t ts = rd_kafka_message_timestamp(msg, &tst);
        double age = 0;

        agg->ctl_records++;
        if ((err =
                 sc_auth_decode(&agg->auth, msg->payload, msg->len, &wm, NULL, why, sizeof(why))) ||
            wm.type != SC_WIRE_CONTROL) {
                if (!err)
                        snprintf(why, sizeof(why), "a %s message on the control topic",
                                 sc_wire_type_name(wm.type));
                sc_agg_reject(agg, err == SC_ERR_AUTH ? SC_REJ_AUTH : SC_REJ_CTL, topic,
                              msg->partition, msg->offset, why);
                return;
        }
        clock_gettime(CLOCK_REALTIME, &wall);
        if (ts > 0)
                age = ((double)wall.tv_sec * 1e3 + (double)wall.tv_nsec * 1e-6 - (double)ts) / 1e3;
        if (age < 0)
                age = 0;
        if (sc_job_members_control(agg->job, &wm.u.control, agg->auth.on, now - age, why,
                                   sizeof(why))) {
                sc_agg_reject(agg, SC_REJ_CTL, topic, msg->partition, msg->offset, why);
                return;
        }
        if (wm.u.control.kind == SC_WIRE_CTL_JOIN)
                sc_agg_log(agg, 6, "worker %u joined", wm.u.control.worker);
        if (wm.u.control.kind == SC_WIRE_CTL_DRIFT) {
                sc_agg_drift(agg, &wm.u.control);
                return; /* a report, not a sign of life */
        }
        /* At once, not at the next tick: an update read right after a join
         * must find the round waiting for the joiner. */
        sc_agg_set_live(agg, (int)wm.u.control.worker, now);
}

static void sc_agg_membership(sc_aggregator_t *agg, double now)
{
        for (int w = 0; w < agg->nworkers; w++)
                sc_agg_set_live(agg, w, now);
}

/* ---- parking --------------------------------------------------------- */

/* Stops reading partition p at offset (a round update from a version the
 * shard has not reached): the record is re-read once the version moves. */
static void sc_agg_park(sc_aggregator_t *agg, int p, int64_t offset, const char *why)
{
        sc_agg_shard_t *s = &agg->shards[p];
        rd_kafka_topic_partition_list_t *tl = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(tl, agg->topics[SC_JOB_GRAD].name, p)->offset = offset;
        rd_kafka_pause_partitions(agg->consumer, tl);
        rd_kafka_error_t *e = rd_kafka_seek_partitions(agg->consumer, tl, 5000);
        if (e) {
                sc_agg_log(agg, 3, "shard %d: seek back to %lld: %s", p, (long long)offset,
                           rd_kafka_error_string(e));
                rd_kafka_error_destroy(e);
        }
        rd_kafka_topic_partition_list_destroy(tl);
        s->next = offset;
        s->parked = 1;
        s->parked_version = sc_server_version(s->srv);
        s->parked_since = sc_clock_mono();
        if (agg->parks++ == 0)
                sc_agg_log(agg, 6,
                           "shard %d: update at offset %lld waits for its round (%s); reading "
                           "of the partition resumes when the version moves",
                           p, (long long)offset, why);
}

/* Resumes a parked partition once the shard's version moved, or gives the
 * parked record up as rejected after a session timeout (so a round that
 * never closes cannot stop the partition for good). */
static void sc_agg_unpark(sc_aggregator_t *agg, int p, double now)
{
        sc_agg_shard_t *s = &agg->shards[p];
        rd_kafka_topic_partition_list_t *tl;
        int give_up;
        if (!s->parked)
                return;
        give_up = now - s->parked_since > agg->conf->job.session_timeout;
        if (sc_server_version(s->srv) == s->parked_version && !give_up)
                return;
        tl = rd_kafka_topic_partition_list_new(1);
        if (give_up && sc_server_version(s->srv) == s->parked_version) {
                sc_agg_reject(agg, SC_REJ_FUTURE, agg->topics[SC_JOB_GRAD].name, p, s->next,
                              "a round update that waited a session timeout for its round");
                s->next++;
                rd_kafka_topic_partition_list_add(tl, agg->topics[SC_JOB_GRAD].name, p)->offset =
                    s->next;
                rd_kafka_error_t *e = rd_kafka_seek_partitions(agg->consumer, tl, 5000);
                if (e)
                        rd_kafka_error_destroy(e);
        } else {
                rd_kafka_topic_partition_list_add(tl, agg->topics[SC_JOB_GRAD].name, p);
        }
        rd_kafka_resume_partitions(agg->consumer, tl);
        rd_kafka_topic_partition_list_destroy(tl);
        s->parked = 0;
}

/* ---- updates ------------------------------------------------------------- */

/* After an update or a turn of shard p: the open round's start, and after a
 * version advance (res->stepped) the round's duration and the broadcast
 * when it goes out at once. Rolled-back rounds are counted by the caller. */
static void sc_agg_stepped(sc_aggregator_t *agg, int p, const sc_apply_result_t *res, double now)
{
        sc_agg_shard_t *s = &agg->shards[p];
        if (!s->t_round && sc_server_round_turns(s->srv) > 0)
                s->t_round = now;
        if (!res->stepped)
                return;
        agg->steps++;
        sc_prom_hist_add(&agg->h_round, now - s->t_step);
        s->t_step = now;
        s->t_round = sc_server_round_turns(s->srv) > 0 ? now : 0;
        if (agg->publish_every)
                sc_agg_bcast(agg, p);
}

/* job.sync.round_timeout: a round open that long with a turn taken closes
 * with the turns it has, naming the live workers it did not wait for. */
static void sc_agg_round_timeout(sc_aggregator_t *agg, int p, double now)
{
        sc_agg_shard_t *s = &agg->shards[p];
        double limit = agg->conf->job.round_timeout;
        uint32_t miss[8];
        char names[128] = "";
        int n = 0;
        if (!agg->round_based || limit <= 0 || !s->t_round || now - s->t_round < limit)
                return;
        uint64_t v = sc_server_version(s->srv);
        sc_apply_result_t res;
        if (!sc_server_round_close_now(s->srv, miss, 8, &n, &res)) {
                s->t_round = 0;
                return;
        }
        for (int i = 0, off = 0; i < n && i < 8 && off < (int)sizeof(names) - 16; i++)
                off += snprintf(names + off, sizeof(names) - (size_t)off, "%s%u", i ? ", " : "",
                                miss[i]);
        agg->rounds_timed_out++;
        if (agg->rounds_timed_out <= SC_AGG_STALE_LOGGED)
                sc_agg_log(agg, 4,
                           "shard %d: round at v%llu closed after %.1f s without worker(s) %s%s "
                           "(job.sync.round_timeout %g s)%s",
                           p, (unsigned long long)v, now - s->t_round, names, n > 8 ? ", ..." : "",
                           limit,
                           agg->rounds_timed_out == SC_AGG_STALE_LOGGED
                               ? "; further ones are counted, not logged"
                               : "");
        agg->rolled_back += (uint64_t)res.rolled_back;
        sc_agg_stepped(agg, p, &res, now);
}

static void sc_agg_on_grad(sc_aggregator_t *agg, const rd_kafka_message_t *msg, double now)
{
        const char *topic = agg->topics[SC_JOB_GRAD].name;
        int p = msg->partition;
        sc_agg_shard_t *s;
        char why[512];
        sc_wire_msg_t wm;
        sc_apply_result_t res;
        sc_err_t err;

        if (p < 0 || p >= agg->nshards || !(s = &agg->shards[p])->held || msg->offset < s->next ||
            s->parked)
                return; /* a fetch that raced a revoke or a park, or a re-delivery */
        agg->lost += (uint64_t)sc_kafka_gap_observe(&s->gap, msg->offset);
        agg->records++;
        agg->bytes_in += msg->len;
        agg->last_record = now;
        s->next = msg->offset + 1;
        if ((err =
                 sc_auth_decode(&agg->auth, msg->payload, msg->len, &wm, NULL, why, sizeof(why)))) {
                sc_agg_reject(agg, sc_agg_rej_of(err), topic, p, msg->offset, why);
                return;
        }
        if (wm.type != SC_WIRE_UPDATE) {
                snprintf(why, sizeof(why), "a %s message, not an update",
                         sc_wire_type_name(wm.type));
                sc_agg_reject(agg, SC_REJ_FOREIGN, topic, p, msg->offset, why);
                return;
        }
        const sc_wire_update_t *wu = &wm.u.update;
        if (wu->shard != (uint32_t)p) {
                snprintf(why, sizeof(why), "update for shard %u in partition %d", wu->shard, p);
                sc_agg_reject(agg, SC_REJ_SHARD, topic, p, msg->offset, why);
                return;
        }
        sc_update_t u;
        if ((err = sc_job_update_decode(agg->job, s->srv, wu, &u, why, sizeof(why)))) {
                sc_agg_reject(agg, SC_REJ_PAYLOAD, topic, p, msg->offset, why);
                return;
        }
        uint64_t v_before = sc_server_version(s->srv);
        double t_apply = sc_clock_mono();
        err = sc_server_apply(s->srv, &u, &res, why, sizeof(why));
        sc_prom_hist_add(&agg->h_apply, sc_clock_mono() - t_apply);
        /* a round update from a version to come waits for it, unless it
         * claims one job.limits.model_jump or more ahead (no owner lags so far) */
        if (err == SC_ERR_STATE && agg->round_based &&
            u.t_read - v_before < agg->conf->job.model_jump) {
                sc_agg_park(agg, p, msg->offset, why);
                agg->records--;
                agg->bytes_in -= msg->len;
                return;
        }
        if (err) {
                sc_agg_reject(agg, err == SC_ERR_STATE ? SC_REJ_FUTURE : SC_REJ_UPDATE, topic, p,
                              msg->offset, why);
                /* the worker's (it decoded as its update): its turn in the round */
                sc_server_refused_turn(s->srv, wu->worker, &res);
                agg->rolled_back += (uint64_t)res.rolled_back;
                sc_agg_stepped(agg, p, &res, now);
                return;
        }
        sc_agg_limits(agg, p, msg->offset, wu->worker, &res, why);
        if (res.status == SC_APPLY_AHEAD) {
                /* no sign of life (its seqs did not move), but its turn is taken */
                sc_server_refused_turn(s->srv, wu->worker, &res);
                agg->rolled_back += (uint64_t)res.rolled_back;
                sc_agg_stepped(agg, p, &res, now);
                return;
        }
        if (res.status == SC_APPLY_APPLIED) {
                sc_prom_hist_add(&agg->h_stale,
                                 v_before > u.t_read ? (double)(v_before - u.t_read) : 0.0);
                agg->late += (uint64_t)res.late;
                if (!agg->applied++)
                        agg->first_update = now;
                agg->last_update = now;
        } else if (res.status == SC_APPLY_DUPLICATE)
                agg->duplicates++;
        else if (res.status == SC_APPLY_STALE)
                agg->stale++;
        sc_job_members_heard(agg->job, (int)wu->worker, wu->seq, now);
        sc_agg_set_live(agg, (int)wu->worker, now);
        sc_agg_stepped(agg, p, &res, now);
}

/* ---- life cycle ---------------------------------------------------------- */

sc_err_t sc_aggregator_new(sc_aggregator_t **aggp, const sc_aggregator_spec_t *spec, char *errstr,
                           size_t errstr_size)
{
        const sc_conf_t *conf = spec->conf;
        const sc_conf_job_t *job = &conf->job;
        sc_aggregator_t *agg;
        sc_err_t err;

        *aggp = NULL;
        if (!(agg = calloc(1, sizeof(*agg))))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        agg->spec = *spec;
        if (agg->spec.model_timeout_ms <= 0)
                agg->spec.model_timeout_ms = 10000;
        agg->conf = conf;
        agg->nshards = job->shards;
        agg->nworkers = job->sync.n_workers;
        agg->round_based = sc_sync_is_round_based(job->sync.kind);
        agg->publish_every =
            job->publish != SC_CONF_PUBLISH_INTERVAL || job->snapshot_interval <= 0;
        if ((err = sc_kafka_admin_job_topics(job->name, job->shards, job->replication, agg->topics,
                                             errstr, errstr_size)))
                goto out;
        snprintf(agg->group, sizeof(agg->group), "%s.aggregators", job->name);
        snprintf(agg->reader_group, sizeof(agg->reader_group), "%s.readers", agg->group);
        sc_job_spec_t jspec;
        sc_job_spec_conf(&jspec, conf);
        if ((err = sc_job_new(&agg->job, &jspec, conf, errstr, errstr_size)) ||
            (err = sc_job_auth_load(&agg->auth, conf, errstr, errstr_size)))
                goto out;
        agg->n = sc_job_nparams(agg->job);
        err = SC_ERR_NOMEM;
        if (!(agg->shards = calloc((size_t)agg->nshards, sizeof(*agg->shards))) ||
            !(agg->live = calloc((size_t)agg->nworkers, 1)) ||
            !(agg->ahead_logged = calloc((size_t)agg->nworkers, 1))) {
                sc_errf(err, errstr, errstr_size, "out of memory");
                goto out;
        }
        {
                const char *const prod_kv[] = {"enable.idempotence", "true", NULL};
                const char *const cons_kv[] = {"group.id",
                                               agg->group,
                                               "enable.auto.commit",
                                               "false",
                                               "auto.offset.reset",
                                               "earliest",
                                               "enable.partition.eof",
                                               "false",
                                               NULL};
                /* assign() needs a group id; these handles never join it */
                const char *const read_kv[] = {"group.id",
                                               agg->reader_group,
                                               "enable.partition.eof",
                                               "true",
                                               "enable.auto.commit",
                                               "false",
                                               "auto.offset.reset",
                                               "earliest",
                                               NULL};
                if ((err = sc_agg_client(agg, RD_KAFKA_PRODUCER, prod_kv, NULL, &agg->producer,
                                         errstr, errstr_size)) ||
                    (err = sc_agg_client(agg, RD_KAFKA_CONSUMER, read_kv, NULL, &agg->reader,
                                         errstr, errstr_size)) ||
                    (err = sc_agg_client(agg, RD_KAFKA_CONSUMER, read_kv, NULL, &agg->ctl, errstr,
                                         errstr_size)) ||
                    (err = sc_agg_client(agg, RD_KAFKA_CONSUMER, cons_kv, sc_agg_rebalance,
                                         &agg->consumer, errstr, errstr_size)))
                        goto out;
                rd_kafka_poll_set_consumer(agg->consumer);
        }
        if (spec->create_topics &&
            (err = sc_kafka_admin_ensure(agg->producer, agg->topics, SC_JOB__NTOPICS, 10000, NULL,
                                         errstr, errstr_size)))
                goto out;
        sc_agg_metrics_init(agg);
        if ((err = sc_monitor_new(&agg->mon, conf, "aggregator", spec->log, spec->opaque, errstr,
                                  errstr_size)))
                goto out;
        *aggp = agg;
        return SC_OK;
out:
        sc_aggregator_destroy(agg);
        return sc_kafka_fatal_or(err, errstr, errstr_size);
}

static sc_err_t sc_agg_start(sc_aggregator_t *agg, char *errstr, size_t errstr_size)
{
        rd_kafka_topic_partition_list_t *tl = rd_kafka_topic_partition_list_new(1);
        rd_kafka_resp_err_t rerr;
        int nctl = 0;
        sc_err_t err;

        rd_kafka_topic_partition_list_add(tl, agg->topics[SC_JOB_GRAD].name, RD_KAFKA_PARTITION_UA);
        rerr = rd_kafka_subscribe(agg->consumer, tl);
        rd_kafka_topic_partition_list_destroy(tl);
        if (rerr)
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "subscribe %s: %s",
                               agg->topics[SC_JOB_GRAD].name, rd_kafka_err2str(rerr));
        if ((err = sc_kafka_admin_partitions(agg->ctl, agg->topics[SC_JOB_CTL].name, 10000, &nctl,
                                             errstr, errstr_size)))
                return err;
        if (nctl > 0) {
                tl = rd_kafka_topic_partition_list_new(nctl);
                for (int i = 0; i < nctl; i++)
                        rd_kafka_topic_partition_list_add(tl, agg->topics[SC_JOB_CTL].name, i)
                            ->offset = RD_KAFKA_OFFSET_BEGINNING;
                rd_kafka_assign(agg->ctl, tl);
                rd_kafka_topic_partition_list_destroy(tl);
        } else {
                sc_agg_log(agg, 4, "%s does not exist: membership from updates only",
                           agg->topics[SC_JOB_CTL].name);
        }
        return SC_OK;
}

/* Server momentum on gradients computed against much older versions
 * overshoots: measured on the tabular example (one worker, momentum 0.9,
 * a backlog), asp without a bound on a worker's own updates in flight
 * (job.sync.max_inflight 0) ended at 0.48 test accuracy, ssp 0.42; with the
 * default bound 4, 0.90 and 0.89 (tests/integration/policies_one_worker.sh). */
static void sc_agg_warn_momentum(sc_aggregator_t *agg)
{
        sc_sync_kind_t k = agg->conf->job.sync.kind;
        if (agg->conf->optim.momentum > 0 && sc_sync_sends_gradients(k) &&
            !sc_sync_is_round_based(k) && agg->conf->job.sync.max_inflight == 0)
                sc_agg_log(agg, 4,
                           "$.optim.momentum %g with job.sync.policy %s and "
                           "job.sync.max_inflight 0: the server applies every gradient with "
                           "momentum, and a worker that outruns its own updates computes its "
                           "gradients on much older versions, which makes it overshoot (it may "
                           "learn little or diverge); a bound (the default 4) or "
                           "optim.momentum 0 is safer",
                           agg->conf->optim.momentum, sc_sync_kind_name(k));
}

/* An asynchronous worker waits for its own updates (job.sync.max_inflight):
 * broadcast by interval, it sees them once per snapshot_interval. */
static void sc_agg_warn_pacing(sc_aggregator_t *agg)
{
        const sc_conf_job_t *job = &agg->conf->job;
        sc_sync_kind_t k = job->sync.kind;
        if (!agg->publish_every && sc_sync_sends_gradients(k) && !sc_sync_is_round_based(k) &&
            job->sync.max_inflight > 0)
                sc_agg_log(agg, 4,
                           "job.publish interval with job.sync.policy %s and "
                           "job.sync.max_inflight %d: a worker sees its own updates once per "
                           "job.snapshot_interval (%g s), so it takes at most %d steps in one; "
                           "job.publish every (or auto) keeps it at the broker's pace",
                           sc_sync_kind_name(k), job->sync.max_inflight, job->snapshot_interval,
                           job->sync.max_inflight);
}

/* Serves the clients once: one J.grad record (waiting up to timeout_ms),
 * up to 64 J.ctl records, the producer's reports. */
static void sc_agg_serve(sc_aggregator_t *agg, int timeout_ms)
{
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(agg->consumer, timeout_ms);
        double now = sc_clock_mono();
        if (msg) {
                if (!msg->err)
                        sc_agg_on_grad(agg, msg, now);
                else if (msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                        sc_agg_log(agg, 4, "%s: %s", agg->topics[SC_JOB_GRAD].name,
                                   rd_kafka_message_errstr(msg));
                rd_kafka_message_destroy(msg);
        }
        for (int i = 0; i < 64; i++) {
                rd_kafka_message_t *cm = rd_kafka_consumer_poll(agg->ctl, 0);
                if (!cm)
                        break;
                if (!cm->err)
                        sc_agg_on_ctl(agg, cm, now);
                rd_kafka_message_destroy(cm);
        }
        rd_kafka_poll(agg->producer, 0);
        for (int p = 0; p < agg->nshards; p++)
                if (agg->shards[p].sdv)
                        sc_agg_dv_account(agg, agg->shards[p].sdv);
        sc_agg_dv_reap(agg);
}

/* The 0.1 s tick: fatal client errors, membership, and per shard held
 * rounds, broadcasts by interval and the J.model failover snapshot.
 * Returns 1 if a broadcast is still due. */
static int sc_agg_tick(sc_aggregator_t *agg, double now)
{
        const sc_conf_job_t *job = &agg->conf->job;
        char why[512];
        sc_err_t err;
        int waiting = 0;
        if (!agg->fatal && (err = sc_kafka_fatal_check(why, sizeof(why)))) {
                agg->fatal = err;
                snprintf(agg->fatal_str, sizeof(agg->fatal_str), "%s", why);
                return 0;
        }
        sc_agg_membership(agg, now);
        for (int p = 0; p < agg->nshards; p++) {
                sc_agg_shard_t *s = &agg->shards[p];
                if (s->held) {
                        sc_agg_unpark(agg, p, now);
                        sc_agg_round_timeout(agg, p, now);
                }
                if (s->held && !agg->publish_every && now - s->bcast_time >= job->snapshot_interval)
                        waiting |= sc_agg_bcast(agg, p);
                if (!sc_agg_changed(s))
                        continue;
                s->version = sc_server_version(s->srv);
                s->offset = s->next;
                /* J.model: the failover snapshot, by interval */
                if (now - s->pub_time >= job->snapshot_interval &&
                    (err = sc_agg_publish(agg, p, why, sizeof(why))) && !agg->fatal) {
                        agg->fatal = err;
                        snprintf(agg->fatal_str, sizeof(agg->fatal_str), "shard %d: %s", p, why);
                }
        }
        return waiting;
}

/* 1 once the run should end: its duration passed, or it was idle (no
 * record while a broker answered) for idle_exit seconds after its first
 * assignment. */
static int sc_agg_done(sc_aggregator_t *agg, double now)
{
        if (agg->spec.duration > 0 && now - agg->t0 >= agg->spec.duration)
                return 1;
        if (!sc_kafka_reach_ok(&agg->reach))
                agg->t_unreach = now;
        return agg->spec.idle_exit > 0 && agg->first_assign > 0 &&
               now - fmax(agg->last_record, agg->t_unreach) >= agg->spec.idle_exit;
}

sc_err_t sc_aggregator_run(sc_aggregator_t *agg, volatile sig_atomic_t *stop, char *errstr,
                           size_t errstr_size)
{
        const sc_conf_job_t *job = &agg->conf->job;
        double now, last_tick = 0;
        sc_err_t err;

        agg->t0 = agg->last_progress = agg->last_record = now = sc_clock_mono();
        sc_agg_warn_momentum(agg);
        sc_agg_warn_pacing(agg);
        if (!agg->auth.on)
                sc_agg_log(agg, 4, "job %s: %s", agg->conf->job.name, SC_JOB_AUTH_OFF);
        sc_job_members_start(agg->job, now);
        for (int w = 0; w < agg->nworkers; w++)
                agg->live[w] = 1;
        if ((err = sc_agg_start(agg, errstr, errstr_size)))
                return sc_kafka_fatal_or(err, errstr, errstr_size);
        int waiting = 0;
        while (!(stop && *stop) && !agg->fatal) {
                sc_agg_serve(agg, waiting ? 1 : 20);
                now = sc_clock_mono();
                waiting = sc_agg_bcast_due(agg);
                if (now - last_tick >= 0.1) {
                        last_tick = now;
                        waiting |= sc_agg_tick(agg, now);
                        if (agg->fatal)
                                break;
                }
                if (job->progress_interval > 0 &&
                    now - agg->last_progress >= job->progress_interval)
                        sc_agg_progress(agg, now);
                sc_agg_ckpt_tick(agg, now);
                sc_agg_metrics(agg, now);
                sc_mem_give_back(&agg->trim, 0, now); /* once a minute (sc_mem.h) */
                if (sc_agg_done(agg, now))
                        break;
        }
        if (job->progress_interval > 0)
                sc_agg_progress(agg, sc_clock_mono());
        /* revokes: final snapshots */
        sc_kafka_consumer_leave(agg->consumer, SC_KAFKA_LEAVE_MS);
        for (int p = 0; p < agg->nshards; p++)
                sc_agg_shard_release(agg, p, 0);
        sc_agg_ckpt_final(agg);
        if (agg->fatal)
                return sc_errf(agg->fatal, errstr, errstr_size, "%s", agg->fatal_str);
        return SC_OK;
}

void sc_aggregator_destroy(sc_aggregator_t *agg)
{
        if (!agg)
                return;
        sc_monitor_destroy(agg->mon);
        for (int p = 0; agg->shards && p < agg->nshards; p++) {
                sc_server_destroy(agg->shards[p].srv);
                sc_bcast_pub_destroy(agg->shards[p].bpub);
        }
        if (agg->consumer)
                rd_kafka_destroy(agg->consumer);
        if (agg->reader)
                rd_kafka_destroy(agg->reader);
        if (agg->ctl)
                rd_kafka_destroy(agg->ctl);
        if (agg->producer) {
                rd_kafka_flush(agg->producer, 5000);
                rd_kafka_destroy(agg->producer);
        }
        /* no report comes after the producer is gone */
        for (int p = 0; agg->shards && p < agg->nshards; p++) {
                free(agg->shards[p].bdv);
                free(agg->shards[p].sdv);
        }
        while (agg->retired) {
                sc_agg_dv_t *t = agg->retired;
                agg->retired = t->next;
                free(t);
        }
        sc_agg_ckpt_free(agg);
        sc_job_destroy(agg->job);
        sc_buf_free(&agg->buf);
        free(agg->shards);
        free(agg->live);
        free(agg->ahead_logged);
        sc_auth_free(&agg->auth);
        free(agg);
}
