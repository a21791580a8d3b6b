/* server.c — one model shard's aggregator: exactly-once application of worker
 * updates per sync policy, optimizer state, version, membership, and byte
 * snapshots that a successor restores before replaying later updates. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_codec.h"
#include "sc_crc32c.h"
#include "sc_le.h"
#include "sc_server.h"
#include "sc_wire.h"
#include "sync/sync_impl.h"

#define SC_SNAP_MAGIC 0x56535353u /* "SSSV" */
#define SC_SNAP_VERSION 3u        /* 1: no robust rows; 2: rows without weights */

sc_err_t sc_server_new(sc_server_t **srvp, const sc_server_spec_t *spec, const float *init,
                       char *errstr, size_t errstr_size)
{
        sc_server_t *srv;
        size_t n, nw;
        sc_err_t err;

        *srvp = NULL;
        if (spec->end <= spec->begin)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "shard %u: empty range [%zu, %zu)", spec->shard, spec->begin,
                               spec->end);
        if (!(srv = calloc(1, sizeof(*srv))))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "server: out of memory");
        srv->spec = *spec;
        if ((err = sc_sync_spec_check(&srv->spec.sync, errstr, errstr_size)))
                goto out_free;
        srv->pol = sc_sync_policy(srv->spec.sync.kind);
        n = srv->n = spec->end - spec->begin;
        nw = (size_t)srv->spec.sync.n_workers;
        err = SC_ERR_NOMEM;
        if (!(srv->params = calloc(n, sizeof(float))) ||
            !(srv->scratch = calloc(n, sizeof(float))) || !(srv->got = calloc(nw, 1)) ||
            !(srv->live = calloc(nw, 1)) || !(srv->seq = calloc(nw, sizeof(*srv->seq))) ||
            !(srv->clock = calloc(nw, sizeof(*srv->clock))))
                goto out_nomem;
        if (srv->pol->round_based && !(srv->acc = calloc(n, sizeof(float))))
                goto out_nomem;
        if (srv->pol->kind == SC_SYNC_ADSP && srv->spec.sync.adsp_mu > 0 &&
            !(srv->mom = calloc(n, sizeof(float))))
                goto out_nomem;
        if (srv->pol->kind == SC_SYNC_ADACOMP &&
            (err = sc_adacomp_new(&srv->ada, n, srv->spec.sync.ada_window)))
                goto out_nomem;
        if ((err = sc_sgd_init(&srv->sgd, &srv->spec.sgd, n))) {
                sc_errf(err, errstr, errstr_size, "shard %u: optimizer: %s", spec->shard,
                        sc_err2str(err));
                goto out_free;
        }
        if (!(srv->backup = calloc(3 * n, sizeof(float))) ||
            !(srv->clipped = calloc(n, sizeof(float))))
                goto out_nomem;
        if (!srv->pol->round_based)
                srv->spec.limits.robust = SC_ROBUST_NONE; /* rounds only */
        if (srv->pol->kind == SC_SYNC_SCADLES && srv->spec.limits.samples_factor > 0 &&
            !(srv->claims = calloc(nw, sizeof(*srv->claims))))
                goto out_nomem;
        if (srv->spec.limits.robust &&
            (!(srv->rows = calloc(nw * n, sizeof(float))) ||
             !(srv->col = calloc(nw, sizeof(float))) || !(srv->row_w = calloc(nw, sizeof(double)))))
                goto out_nomem;
        for (size_t w = 0; w < nw; w++) {
                srv->live[w] = 1;
                srv->seq[w].base = 1;
        }
        if (init)
                memcpy(srv->params, init, n * sizeof(float));
        *srvp = srv;
        return SC_OK;

out_nomem:
        sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "shard %u: out of memory (%zu parameters)",
                spec->shard, spec->end - spec->begin);
        err = SC_ERR_NOMEM;
out_free:
        sc_server_destroy(srv);
        return err;
}

void sc_server_destroy(sc_server_t *srv)
{
        if (!srv)
                return;
        sc_sgd_free(&srv->sgd);
        sc_adacomp_destroy(srv->ada);
        free(srv->params);
        free(srv->scratch);
        free(srv->acc);
        free(srv->mom);
        free(srv->backup);
        free(srv->clipped);
        free(srv->rows);
        free(srv->col);
        free(srv->row_w);
        free(srv->claims);
        free(srv->got);
        free(srv->live);
        free(srv->seq);
        free(srv->clock);
        free(srv);
}

const float *sc_server_densify(sc_server_t *srv, const sc_update_t *u)
{
        if (!u->indices)
                return u->values;
        memset(srv->scratch, 0, srv->n * sizeof(float));
        for (size_t k = 0; k < u->count; k++)
                srv->scratch[u->indices[k]] += u->values[k];
        return srv->scratch;
}

double sc_server_lr(const sc_server_t *srv)
{
        return sc_sched_lr(&srv->spec.sched, (long)srv->version);
}

/* ---- exactly-once bookkeeping ------------------------------------------ */

static int sc_seqwin_has(const sc_seqwin_t *sw, uint64_t seq)
{
        if (seq < sw->base)
                return 1;
        if (seq - sw->base >= 64)
                return 0;
        return (int)((sw->mask >> (seq - sw->base)) & 1);
}

/* Marks seq applied; returns how many seqs were given up as lost to fit it.
 * Constant time however far ahead seq is. */
static uint64_t sc_seqwin_mark(sc_seqwin_t *sw, uint64_t seq)
{
        uint64_t lost = 0;
        if (seq - sw->base >= 128) { /* jump: everything missing below is lost */
                uint64_t shift = seq - sw->base - 63;
                lost = 64 - (uint64_t)__builtin_popcountll(sw->mask) + (shift - 64);
                sw->mask = 0;
                sw->base += shift;
        }
        while (seq - sw->base >= 64) { /* slide: the oldest missing seq is lost */
                if (!(sw->mask & 1))
                        lost++;
                sw->mask >>= 1;
                sw->base++;
        }
        sw->mask |= (uint64_t)1 << (seq - sw->base);
        while (sw->mask & 1) {
                sw->mask >>= 1;
                sw->base++;
        }
        return lost;
}

/* Missing seqs below seq (seq not yet marked, seq >= base). */
static uint64_t sc_seqwin_gap(const sc_seqwin_t *sw, uint64_t seq)
{
        uint64_t d = seq - sw->base;
        uint64_t below = d >= 64 ? sw->mask : sw->mask & (((uint64_t)1 << d) - 1);
        return d - (uint64_t)__builtin_popcountll(below);
}

/* ---- rounds -------------------------------------------------------------- */

/* Every live worker had its turn (a round with no live worker is complete
 * once anyone contributed: round_close checks that). */
static int sc_server_round_complete(const sc_server_t *srv)
{
        for (int w = 0; w < srv->spec.sync.n_workers; w++)
                if (srv->live[w] && !srv->got[w])
                        return 0;
        return 1;
}

int sc_server_round_turns(const sc_server_t *srv)
{
        int turns = 0;
        for (int w = 0; w < srv->spec.sync.n_workers; w++)
                turns += srv->got[w] != 0;
        return turns;
}

/* Closes the round once every live worker had its turn (or at once with
 * force, when anyone had). The step is undone when it would leave the
 * shard non-finite (*rolled_back); a round whose every update was refused
 * closes without a step. */
static int sc_server_round_close_if(sc_server_t *srv, int force, int *rolled_back)
{
        if (sc_server_round_turns(srv) == 0 || (!force && !sc_server_round_complete(srv)))
                return 0;
        if (srv->n_got > 0 || srv->acc_weight > 0) { /* turns, or late updates */
                sc_server_save(srv);
                if (srv->rows)
                        sc_server_robust_acc(srv);
                srv->pol->round_finish(srv);
                if (!sc_server_state_ok(srv)) {
                        sc_server_rollback(srv);
                        srv->stats.rolled_back++;
                        if (rolled_back)
                                *rolled_back = 1;
                }
        }
        memset(srv->acc, 0, srv->n * sizeof(float));
        memset(srv->got, 0, (size_t)srv->spec.sync.n_workers);
        srv->acc_weight = 0;
        srv->n_got = 0;
        srv->version++;
        srv->stats.steps++;
        return 1;
}

static int sc_server_round_close(sc_server_t *srv, int *rolled_back)
{
        return sc_server_round_close_if(srv, 0, rolled_back);
}

int sc_server_round_close_now(sc_server_t *srv, uint32_t *missing, int max, int *nmissing,
                              sc_apply_result_t *res)
{
        sc_apply_result_t r = {0};
        int n = 0;
        if (srv->pol->round_based && sc_server_round_turns(srv) > 0)
                for (int w = 0; w < srv->spec.sync.n_workers; w++)
                        if (srv->live[w] && !srv->got[w] && n++ < max)
                                missing[n - 1] = (uint32_t)w;
        if (n > 0)
                r.stepped = sc_server_round_close_if(srv, 1, &r.rolled_back);
        if (nmissing)
                *nmissing = n;
        if (res)
                *res = r;
        return r.stepped;
}

int sc_server_refused_turn(sc_server_t *srv, uint32_t worker, sc_apply_result_t *res)
{
        sc_apply_result_t r = {0};
        if (srv->pol->round_based && worker < (uint32_t)srv->spec.sync.n_workers &&
            !srv->got[worker]) {
                srv->got[worker] = SC_GOT_REFUSED;
                srv->live[worker] = 1;
                r.stepped = sc_server_round_close(srv, &r.rolled_back);
        }
        if (res)
                *res = r;
        return r.stepped;
}

/* Adds u to the round sum; 0 (nothing changed) if the sum would not stay
 * finite. As the worker's turn (turn != 0), or beside it (a late update:
 * the worker's own update for this round is still to come, and the round
 * waits for it). acc_weight counts both; got and n_got only turns. */
static int sc_server_round_add(sc_server_t *srv, const sc_update_t *u, int turn)
{
        float wgt = (float)srv->pol->round_weight(u);
        if (!sc_server_round_add_ok(srv, u, wgt))
                return 0;
        if (u->indices) {
                for (size_t k = 0; k < u->count; k++)
                        srv->acc[u->indices[k]] += wgt * u->values[k];
        } else {
                for (size_t i = 0; i < srv->n; i++)
                        srv->acc[i] += wgt * u->values[i];
        }
        srv->acc_weight += wgt;
        if (!turn)
                return 1;
        if (srv->rows)
                sc_server_robust_add(srv, u, wgt);
        srv->got[u->worker] = SC_GOT_CONTRIBUTED;
        srv->n_got++;
        return 1;
}

/* ---- applying ------------------------------------------------------------ */

/* One asynchronous step, never leaving the shard non-finite: *refused (errstr
 * filled, nothing changed) for a step that would. AdaComp's step
 * only moves the update's coordinates, each by at most lr x value, so it is
 * checked before (O(count)); the other policies are saved, stepped and
 * checked, and undone when needed. */
static sc_err_t sc_server_async_step(sc_server_t *srv, const sc_update_t *u, int *refused,
                                     char *errstr, size_t errstr_size)
{
        int sparse_ok = srv->pol->kind == SC_SYNC_ADACOMP;
        sc_err_t err;

        if (sparse_ok && !sc_server_bounded_step_ok(srv, u, (float)sc_server_lr(srv)))
                goto refuse;
        if (sc_server_plain_sgd(srv) &&
            sc_server_sgd_step_bounded(srv, u, (float)sc_server_lr(srv)))
                return srv->pol->apply(srv, u, errstr, errstr_size); /* cannot overflow */
        srv->bounds_ok = 0; /* the step below is not bounded: rescan next time */
        if (!sparse_ok)
                sc_server_save(srv);
        if ((err = srv->pol->apply(srv, u, errstr, errstr_size)))
                return err;
        if (sparse_ok || sc_server_state_ok(srv))
                return SC_OK;
        sc_server_rollback(srv);
refuse:
        *refused = 1;
        return sc_errf(SC_OK, errstr, errstr_size,
                       "shard %u: worker %u seq %llu would leave a parameter non-finite or over "
                       "job.limits.model_max_abs: step %s",
                       srv->spec.shard, u->worker, (unsigned long long)u->seq,
                       sparse_ok ? "refused" : "undone");
}

static sc_err_t sc_server_check(const sc_server_t *srv, const sc_update_t *u, char *errstr,
                                size_t errstr_size)
{
        const sc_sync_spec_t *sp = &srv->spec.sync;
        sc_update_kind_t want = srv->pol->sends_gradients ? SC_UPDATE_GRAD
                                : sp->send_models         ? SC_UPDATE_MODEL
                                                          : SC_UPDATE_DELTA;

        if (u->worker >= (uint32_t)sp->n_workers)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "shard %u: update from unknown worker %u (%d workers)",
                               srv->spec.shard, u->worker, sp->n_workers);
        if (u->seq == 0)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "shard %u: worker %u sent seq 0 (seqs start at 1)", srv->spec.shard,
                               u->worker);
        if (u->n != srv->n)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "shard %u: worker %u seq %llu has length %zu, shard has %zu",
                               srv->spec.shard, u->worker, (unsigned long long)u->seq, u->n,
                               srv->n);
        if (u->kind != want)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "shard %u: worker %u seq %llu: policy %s takes %s updates",
                               srv->spec.shard, u->worker, (unsigned long long)u->seq,
                               srv->pol->name,
                               want == SC_UPDATE_GRAD    ? "gradient"
                               : want == SC_UPDATE_DELTA ? "delta"
                                                         : "model");
        if (!u->values || (u->indices && u->count > srv->n))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "shard %u: worker %u seq %llu: no values or too many entries",
                               srv->spec.shard, u->worker, (unsigned long long)u->seq);
        if (u->indices)
                for (size_t k = 0; k < u->count; k++)
                        if (u->indices[k] >= srv->n)
                                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                                               "shard %u: worker %u seq %llu: index %u out of "
                                               "range [0, %zu)",
                                               srv->spec.shard, u->worker,
                                               (unsigned long long)u->seq, u->indices[k], srv->n);
        if (srv->pol->kind == SC_SYNC_SCADLES && u->samples == 0)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "shard %u: worker %u seq %llu: scadles updates need samples >= 1",
                               srv->spec.shard, u->worker, (unsigned long long)u->seq);
        if (srv->pol->round_based && u->t_read > srv->version)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "shard %u: worker %u seq %llu read version %llu, shard is at %llu",
                               srv->spec.shard, u->worker, (unsigned long long)u->seq,
                               (unsigned long long)u->t_read, (unsigned long long)srv->version);
        return SC_OK;
}

sc_err_t sc_server_update_decode(const sc_wire_update_t *wu, size_t n, uint32_t *idx, float *val,
                                 float *dense, sc_update_t *u, char *errstr, size_t errstr_size)
{
        sc_codec_info_t info;
        size_t nnz = 0;
        sc_err_t err;
        if ((err = sc_codec_payload_info(wu->payload, wu->payload_len, &info, errstr, errstr_size)))
                return err;
        if (info.n != n)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "payload of %u floats, shard has %zu", info.n, n);
        *u = (sc_update_t){.worker = wu->worker,
                           .seq = wu->seq,
                           .t_read = wu->t_read,
                           .samples = wu->samples,
                           .kind = (sc_update_kind_t)wu->kind,
                           .n = n};
        if (info.format == SC_CODEC_FMT_SPARSE) {
                err = sc_codec_decode_sparse(wu->payload, wu->payload_len, idx, val, n, &nnz,
                                             errstr, errstr_size);
                u->indices = idx;
                u->values = val;
                u->count = nnz;
                return err;
        }
        memset(dense, 0, n * sizeof(float));
        u->values = dense;
        return sc_codec_decode_add(wu->payload, wu->payload_len, dense, n, 1.0f, errstr,
                                   errstr_size);
}

/* An update's seq against its worker's window: SC_APPLY_DUPLICATE (already
 * applied), SC_APPLY_AHEAD (beyond the window; errstr says why) or
 * SC_APPLY_APPLIED (admitted). */
static sc_apply_status_t sc_server_admit(sc_server_t *srv, const sc_update_t *u, char *errstr,
                                         size_t errstr_size)
{
        const sc_seqwin_t *sw = &srv->seq[u->worker];
        uint64_t window = srv->spec.limits.seq_window;
        if (sc_seqwin_has(sw, u->seq)) {
                srv->stats.duplicates++;
                return SC_APPLY_DUPLICATE;
        }
        if (window && u->seq - sw->base >= window) {
                sc_errf(SC_OK, errstr, errstr_size,
                        "shard %u: worker %u seq %llu is %llu ahead of its next seq %llu (window "
                        "%llu): refused",
                        srv->spec.shard, u->worker, (unsigned long long)u->seq,
                        (unsigned long long)(u->seq - sw->base), (unsigned long long)sw->base,
                        (unsigned long long)window);
                srv->stats.ahead++;
                return SC_APPLY_AHEAD;
        }
        return SC_APPLY_APPLIED;
}

/* 1 if a round policy refuses the update as stale: computed more than
 * sync.late_rounds versions behind, or its worker's second update of the
 * round (errstr says which, stats.stale counts it). */
static int sc_server_stale(sc_server_t *srv, const sc_update_t *u, uint64_t behind, int late,
                           char *errstr, size_t errstr_size)
{
        if (!srv->pol->round_based || !((behind > 0 && !late) || srv->got[u->worker]))
                return 0;
        srv->stats.stale++;
        if (srv->got[u->worker])
                sc_errf(SC_OK, errstr, errstr_size,
                        "shard %u: worker %u seq %llu is its second update of the round at v%llu",
                        srv->spec.shard, u->worker, (unsigned long long)u->seq,
                        (unsigned long long)srv->version);
        else
                sc_errf(SC_OK, errstr, errstr_size,
                        "shard %u: worker %u seq %llu was computed on v%llu, %llu versions behind "
                        "v%llu (sync.late_rounds %d)",
                        srv->spec.shard, u->worker, (unsigned long long)u->seq,
                        (unsigned long long)u->t_read, (unsigned long long)behind,
                        (unsigned long long)srv->version, srv->spec.sync.late_rounds);
        return 1;
}

sc_err_t sc_server_apply(sc_server_t *srv, const sc_update_t *u, sc_apply_result_t *res,
                         char *errstr, size_t errstr_size)
{
        sc_apply_result_t r = {0};
        const sc_update_t *u0 = u;
        sc_update_t lu;
        sc_seqwin_t *sw;
        sc_err_t err;

        if ((err = sc_server_check(srv, u, errstr, errstr_size)))
                return err;
        sw = &srv->seq[u->worker];
        if ((r.status = sc_server_admit(srv, u, errstr, errstr_size)) != SC_APPLY_APPLIED)
                goto out;
        r.gap = sc_seqwin_gap(sw, u->seq);
        /* A round update computed on an older version comes from a worker the
         * rounds since did not wait for (a rejoiner whose join crossed a
         * round's close): up to sync.late_rounds versions behind it is added
         * to the current round beside the worker's own update for it, which
         * the worker sends once it sees this round's version (robust rounds,
         * which keep one row per turn, take it as the worker's turn). */
        uint64_t behind =
            srv->pol->round_based && u->t_read < srv->version ? srv->version - u->t_read : 0;
        int late = behind > 0 && behind <= (uint64_t)srv->spec.sync.late_rounds;
        int turn = !late || srv->rows; /* a late update takes no turn (above) */
        if (sc_server_stale(srv, u, behind, late, errstr, errstr_size)) {
                r.status = SC_APPLY_STALE;
        } else if (sc_server_limit(srv, u0, &lu, &r.clipped, errstr, errstr_size)) {
                r.status = SC_APPLY_REJECTED;
        } else if (srv->pol->round_based) {
                u = &lu;
                if (!sc_server_round_add(srv, u, turn)) {
                        sc_errf(SC_OK, errstr, errstr_size,
                                "shard %u: worker %u seq %llu would make the round sum "
                                "non-finite",
                                srv->spec.shard, u->worker, (unsigned long long)u->seq);
                        r.status = SC_APPLY_REJECTED;
                        if (turn)
                                srv->got[u->worker] = SC_GOT_REFUSED;
                }
                srv->live[u->worker] = 1;
                r.late = late;
                r.stepped = sc_server_round_close(srv, &r.rolled_back);
        } else {
                u = &lu;
                int refused = 0;
                if ((err = sc_server_async_step(srv, u, &refused, errstr, errstr_size)))
                        return err;
                if (refused) {
                        r.status = SC_APPLY_REJECTED;
                } else {
                        srv->live[u->worker] = 1;
                        srv->version++;
                        srv->stats.steps++;
                        r.stepped = 1;
                }
        }
        if (r.status == SC_APPLY_REJECTED) {
                srv->stats.rejected++;
                sc_apply_result_t t;
                if (turn && !r.stepped && sc_server_refused_turn(srv, u->worker, &t)) {
                        r.stepped = 1;
                        r.rolled_back |= t.rolled_back;
                }
        }
        srv->stats.clipped += (uint64_t)r.clipped;
        if (r.status == SC_APPLY_APPLIED) {
                srv->stats.applied++;
                srv->clock[u->worker]++;
        }
        if (r.gap)
                srv->stats.gaps++;
        r.lost = sc_seqwin_mark(sw, u->seq);
        srv->stats.lost += r.lost;
out:
        if (res)
                *res = r;
        return SC_OK;
}

sc_err_t sc_server_set_live(sc_server_t *srv, uint32_t worker, int live, sc_apply_result_t *res)
{
        sc_apply_result_t r = {0};

        if (worker >= (uint32_t)srv->spec.sync.n_workers)
                return SC_ERR_INVAL;
        srv->live[worker] = live ? 1 : 0;
        if (srv->pol->round_based)
                r.stepped = sc_server_round_close(srv, &r.rolled_back);
        if (res)
                *res = r;
        return SC_OK;
}

size_t sc_server_len(const sc_server_t *srv)
{
        return srv->n;
}

const float *sc_server_params(const sc_server_t *srv)
{
        return srv->params;
}

uint64_t sc_server_version(const sc_server_t *srv)
{
        return srv->version;
}

int sc_server_live(const sc_server_t *srv, uint32_t worker)
{
        return worker < (uint32_t)srv->spec.sync.n_workers && srv->live[worker];
}

uint64_t sc_server_applied_seq(const sc_server_t *srv, uint32_t worker)
{
        if (worker >= (uint32_t)srv->spec.sync.n_workers)
                return 0;
        return srv->seq[worker].base - 1;
}

uint64_t sc_server_min_clock(const sc_server_t *srv)
{
        uint64_t m = UINT64_MAX;
        for (int w = 0; w < srv->spec.sync.n_workers; w++)
                if (srv->live[w] && srv->clock[w] < m)
                        m = srv->clock[w];
        return m == UINT64_MAX ? 0 : m;
}

void sc_server_model_info(const sc_server_t *srv, uint32_t worker, sc_sync_model_info_t *info)
{
        info->version = srv->version;
        info->applied_seq = sc_server_applied_seq(srv, worker);
        info->min_clock = sc_server_min_clock(srv);
}

void sc_server_stats(const sc_server_t *srv, sc_server_stats_t *stats)
{
        *stats = srv->stats;
}

const sc_server_spec_t *sc_server_spec(const sc_server_t *srv)
{
        return &srv->spec;
}

/* ---- snapshots ----------------------------------------------------------- */

/* Layout (little-endian): magic u32, format u32, kind u32, shard u32,
 * begin u64, end u64, n_workers u32, version u64, stats 6 x u64,
 * acc_weight f64, n_got u32, per worker {live u8, got u8, base u64, mask u64,
 * clock u64} (got: 0, 1 or 2 = refused), params, velocity (n, or 0 floats),
 * acc (n or 0), mom (n or 0), robust row count u32 (format 2 on) and the
 * rows of the round's contributors (got 1) in worker order (n floats each;
 * none outside a robust round), their weights in the same order (f64 each,
 * format 3; a snapshot that keeps no row is written as format 2, the same
 * bytes), adacomp length u64 + bytes, crc32c u32 of everything before.
 * Formats 1 (no row count, no rows) and 2 (rows, weights taken as equal
 * shares of acc_weight) are read too. */

typedef struct sc_rbuf {
        const uint8_t *p, *end;
        int bad;
} sc_rbuf_t;

static uint64_t sc_get(sc_rbuf_t *b, int bytes)
{
        uint64_t v;
        if (b->end - b->p < bytes) {
                b->bad = 1;
                return 0;
        }
        v = bytes == 8 ? sc_le_get64(b->p) : bytes == 4 ? sc_le_get32(b->p) : *b->p;
        b->p += bytes;
        return v;
}

static void sc_get_f32s(sc_rbuf_t *b, float *f, size_t n)
{
        if ((size_t)(b->end - b->p) / 4 < n) {
                b->bad = 1;
                return;
        }
        sc_le_getf32s(f, b->p, n);
        b->p += 4 * n;
}

size_t sc_server_vel_len(const sc_server_t *srv)
{
        return srv->sgd.velocity ? srv->n : 0;
}

/* Robust rounds: rows of the round's contributors kept (got == 1). */
static uint32_t sc_server_rows_kept(const sc_server_t *srv)
{
        return srv->rows ? srv->n_got : 0;
}

sc_err_t sc_server_snapshot(const sc_server_t *srv, uint8_t **bufp, size_t *lenp)
{
        size_t nw = (size_t)srv->spec.sync.n_workers,
               ada = srv->ada ? sc_adacomp_save_size(srv->ada) : 0;
        size_t nf = srv->n + sc_server_vel_len(srv) + (srv->acc ? srv->n : 0) +
                    (srv->mom ? srv->n : 0) + (size_t)sc_server_rows_kept(srv) * srv->n;
        size_t len = 4 * 4 + 8 * 2 + 4 + 8 + 6 * 8 + 8 + 4 + nw * 26 + 4 * nf + 4 +
                     8 * (size_t)sc_server_rows_kept(srv) + 8 + ada + 4;
        sc_le_w_t b;
        uint8_t *buf;

        *bufp = NULL;
        *lenp = 0;
        if (!(buf = malloc(len)))
                return SC_ERR_NOMEM;
        b.p = buf;
        sc_lew_u32(&b, (uint32_t)SC_SNAP_MAGIC);
        /* format 2 when no robust row is kept: the same bytes, and older
         * readers take it */
        sc_lew_u32(&b, sc_server_rows_kept(srv) ? (uint32_t)SC_SNAP_VERSION : 2u);
        sc_lew_u32(&b, (uint32_t)srv->pol->kind);
        sc_lew_u32(&b, (uint32_t)srv->spec.shard);
        sc_lew_u64(&b, srv->spec.begin);
        sc_lew_u64(&b, srv->spec.end);
        sc_lew_u32(&b, (uint32_t)nw);
        sc_lew_u64(&b, srv->version);
        sc_lew_u64(&b, srv->stats.applied);
        sc_lew_u64(&b, srv->stats.duplicates);
        sc_lew_u64(&b, srv->stats.stale);
        sc_lew_u64(&b, srv->stats.gaps);
        sc_lew_u64(&b, srv->stats.lost);
        sc_lew_u64(&b, srv->stats.steps);
        sc_lew_u64(&b, sc_f64_bits(srv->acc_weight));
        sc_lew_u32(&b, (uint32_t)srv->n_got);
        for (size_t w = 0; w < nw; w++) {
                sc_lew_u8(&b, (uint8_t)srv->live[w]);
                sc_lew_u8(&b, (uint8_t)srv->got[w]);
                sc_lew_u64(&b, srv->seq[w].base);
                sc_lew_u64(&b, srv->seq[w].mask);
                sc_lew_u64(&b, srv->clock[w]);
        }
        sc_lew_f32s(&b, srv->params, srv->n);
        sc_lew_f32s(&b, srv->sgd.velocity, sc_server_vel_len(srv));
        if (srv->acc)
                sc_lew_f32s(&b, srv->acc, srv->n);
        if (srv->mom)
                sc_lew_f32s(&b, srv->mom, srv->n);
        sc_lew_u32(&b, (uint32_t)sc_server_rows_kept(srv));
        for (size_t w = 0; srv->rows && w < nw; w++)
                if (srv->got[w] == SC_GOT_CONTRIBUTED)
                        sc_lew_f32s(&b, srv->rows + w * srv->n, srv->n);
        for (size_t w = 0; srv->rows && w < nw; w++)
                if (srv->got[w] == SC_GOT_CONTRIBUTED)
                        sc_lew_u64(&b, sc_f64_bits(srv->row_w[w]));
        sc_lew_u64(&b, ada);
        if (srv->ada) {
                sc_adacomp_save(srv->ada, b.p);
                b.p += ada;
        }
        sc_lew_u32(&b, (uint32_t)sc_crc32c(0, buf, (size_t)(b.p - buf)));
        *bufp = buf;
        *lenp = len;
        return SC_OK;
}

/* A snapshot's frame and header: CRC32C, magic, format, policy, shard range
 * and worker count. On success b is past the header (its end before the
 * CRC) and *fmtp holds the format. */
static sc_err_t sc_snap_header(const sc_server_t *srv, sc_rbuf_t *b, const uint8_t *buf, size_t len,
                               uint32_t *fmtp, char *errstr, size_t errstr_size)
{
        size_t nw = (size_t)srv->spec.sync.n_workers;
        uint32_t fmt, shard;
        if (len < 8)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "shard snapshot: %zu bytes is too short", len);
        if (sc_le_get32(buf + len - 4) != sc_crc32c(0, buf, len - 4))
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "shard snapshot: CRC32C mismatch");
        b->end = buf + len - 4;
        if (sc_get(b, 4) != SC_SNAP_MAGIC)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size, "shard snapshot: bad magic");
        if ((fmt = (uint32_t)sc_get(b, 4)) < 1 || fmt > SC_SNAP_VERSION)
                return sc_errf(SC_ERR_VERSION, errstr, errstr_size,
                               "shard snapshot: format %u, this build reads 1 to %u", fmt,
                               SC_SNAP_VERSION);
        if (sc_get(b, 4) != (uint64_t)srv->pol->kind)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "shard snapshot: written by another sync policy (not %s)",
                               srv->pol->name);
        shard = (uint32_t)sc_get(b, 4);
        if (sc_get(b, 8) != srv->spec.begin || sc_get(b, 8) != srv->spec.end || sc_get(b, 4) != nw)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "shard snapshot of shard %u does not match shard %u's range "
                               "[%zu, %zu) or worker count %zu",
                               shard, srv->spec.shard, srv->spec.begin, srv->spec.end, nw);
        *fmtp = fmt;
        return SC_OK;
}

/* The robust rows of a round against this shard: present exactly when its
 * rounds are robust and some worker contributed, one per contribution. */
static sc_err_t sc_snap_rows_check(const sc_server_t *srv, uint32_t nrows, uint32_t n_got,
                                   char *errstr, size_t errstr_size)
{
        if (nrows && !srv->rows)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "shard snapshot: %u robust rows, and this shard's rounds are not "
                               "robust (job.limits.robust)",
                               nrows);
        if (nrows && nrows != n_got)
                return sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                               "shard snapshot: %u robust rows for %u contributions", nrows, n_got);
        if (srv->rows && n_got && !nrows)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "shard snapshot: a round of %u contributions without their rows "
                               "(written without job.limits.robust)",
                               n_got);
        return SC_OK;
}

/* Membership bytes are 0/1, got 0..2, the round count matches the
 * contributions and the accumulated weight is a finite number >= 0. */
static int sc_snap_round_ok(const sc_server_t *srv, const uint8_t *wb, size_t nw, uint32_t n_got,
                            uint64_t accw)
{
        uint32_t got = 0;
        double w = sc_f64_from_bits(accw);
        for (size_t k = 0; k < nw; k++) {
                if (wb[k * 26] > 1 || wb[k * 26 + 1] > SC_GOT_REFUSED)
                        return 0;
                got += wb[k * 26 + 1] == SC_GOT_CONTRIBUTED;
        }
        return got == n_got && (srv->acc || !n_got) && w >= 0 && isfinite(w);
}

/* Robust rows' weights: each a sample count (scadles) or 1, so in
 * [1, 2^32); NaN fails too. */
static int sc_snap_weights_ok(const double *w, uint32_t n)
{
        for (uint32_t r = 0; r < n; r++)
                if (!(w[r] >= 1.0 && w[r] < 4294967296.0))
                        return 0;
        return 1;
}

/* A decoded snapshot, checked; sc_snap_commit makes it the shard's state. */
typedef struct sc_snap {
        uint64_t version, stats[6], accw;
        uint32_t n_got, nrows;
        const uint8_t *wb;   /* (nw * 26): live, got, seq base and mask, clock */
        const float *fl;     /* params, velocity, accumulator, momentum */
        const float *rows;   /* (nrows, n) */
        const double *row_w; /* (nrows) */
} sc_snap_t;

static void sc_snap_commit(sc_server_t *srv, const sc_snap_t *sn, size_t nvel, size_t nacc,
                           size_t nmom)
{
        size_t n = srv->n, nw = (size_t)srv->spec.sync.n_workers;
        srv->version = sn->version;
        srv->bounds_ok = 0;
        srv->stats.applied = sn->stats[0];
        srv->stats.duplicates = sn->stats[1];
        srv->stats.stale = sn->stats[2];
        srv->stats.gaps = sn->stats[3];
        srv->stats.lost = sn->stats[4];
        srv->stats.steps = sn->stats[5];
        srv->acc_weight = sc_f64_from_bits(sn->accw);
        srv->n_got = sn->n_got;
        for (size_t w = 0; w < nw; w++) {
                sc_rbuf_t wr = {sn->wb + w * 26, sn->wb + (w + 1) * 26, 0};
                srv->live[w] = (uint8_t)sc_get(&wr, 1);
                srv->got[w] = (uint8_t)sc_get(&wr, 1);
                srv->seq[w].base = sc_get(&wr, 8);
                srv->seq[w].mask = sc_get(&wr, 8);
                srv->clock[w] = sc_get(&wr, 8);
        }
        memcpy(srv->params, sn->fl, n * sizeof(float));
        if (nvel)
                memcpy(srv->sgd.velocity, sn->fl + n, nvel * sizeof(float));
        if (nacc)
                memcpy(srv->acc, sn->fl + n + nvel, nacc * sizeof(float));
        if (nmom)
                memcpy(srv->mom, sn->fl + n + nvel + nacc, nmom * sizeof(float));
        for (size_t w = 0, r = 0; sn->nrows && w < nw; w++)
                if (srv->got[w] == SC_GOT_CONTRIBUTED) {
                        srv->row_w[w] = sn->row_w[r];
                        memcpy(srv->rows + w * n, sn->rows + n * r++, n * sizeof(float));
                }
}

sc_err_t sc_server_restore(sc_server_t *srv, const uint8_t *buf, size_t len, char *errstr,
                           size_t errstr_size)
{
        sc_rbuf_t b = {buf, buf + len, 0};
        size_t n = srv->n, nw = (size_t)srv->spec.sync.n_workers, adalen;
        uint32_t fmt = 0;
        float *fl = NULL, *rows = NULL;
        double *row_w = NULL;
        uint8_t *wb = NULL;
        size_t nvel = sc_server_vel_len(srv), nacc = srv->acc ? n : 0, nmom = srv->mom ? n : 0;
        sc_snap_t sn = {0};
        sc_err_t err;

        if ((err = sc_snap_header(srv, &b, buf, len, &fmt, errstr, errstr_size)))
                return err;
        sn.version = sc_get(&b, 8);
        for (int i = 0; i < 6; i++)
                sn.stats[i] = sc_get(&b, 8);
        sn.accw = sc_get(&b, 8);
        sn.n_got = (uint32_t)sc_get(&b, 4);
        /* Decode into temporaries; commit only when everything checked out. */
        if (!(fl = malloc((n + nvel + nacc + nmom + 1) * sizeof(float))) ||
            !(wb = malloc(nw * 26 + 1))) {
                err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "shard snapshot: out of memory");
                goto out;
        }
        if ((size_t)(b.end - b.p) < nw * 26) {
                b.bad = 1;
        } else {
                memcpy(wb, b.p, nw * 26);
                b.p += nw * 26;
        }
        sc_get_f32s(&b, fl, n + nvel + nacc + nmom);
        if (fmt >= 2)
                sn.nrows = (uint32_t)sc_get(&b, 4);
        if ((err = sc_snap_rows_check(srv, sn.nrows, sn.n_got, errstr, errstr_size)))
                goto out;
        if (sn.nrows && (size_t)(b.end - b.p) / 4 / n < sn.nrows) {
                b.bad = 1;
        } else if (sn.nrows) {
                if (!(rows = malloc((size_t)sn.nrows * n * sizeof(float))) ||
                    !(row_w = malloc(sn.nrows * sizeof(double)))) {
                        err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                                      "shard snapshot: out of memory");
                        goto out;
                }
                sc_get_f32s(&b, rows, (size_t)sn.nrows * n);
                for (uint32_t r = 0; r < sn.nrows; r++) /* format 2: equal shares */
                        row_w[r] = fmt >= 3 ? sc_f64_from_bits(sc_get(&b, 8))
                                            : sc_f64_from_bits(sn.accw) / sn.nrows;
        }
        adalen = (size_t)sc_get(&b, 8);
        if (b.bad || adalen != (size_t)(b.end - b.p) || (!srv->ada && adalen))
                err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                              "shard snapshot: truncated or wrong length");
        else if (!sc_snap_round_ok(srv, wb, nw, sn.n_got, sn.accw))
                err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                              "shard snapshot: inconsistent round state");
        else if (!sc_server_floats_finite(fl, n + nvel + nacc + nmom) ||
                 (sn.nrows && !sc_server_floats_finite(rows, (size_t)sn.nrows * n)) ||
                 !sc_snap_weights_ok(row_w, sn.nrows))
                err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                              "shard snapshot: a parameter or optimizer value is not finite");
        else if (srv->ada && sc_adacomp_load(srv->ada, b.p, adalen))
                err = sc_errf(SC_ERR_CORRUPT, errstr, errstr_size,
                              "shard snapshot: bad adacomp history");
        if (!err) {
                sn.wb = wb;
                sn.fl = fl;
                sn.rows = rows;
                sn.row_w = row_w;
                sc_snap_commit(srv, &sn, nvel, nacc, nmom);
        }
out:
        free(rows);
        free(row_w);
        free(fl);
        free(wb);
        return err;
}
