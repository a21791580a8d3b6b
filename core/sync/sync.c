/* sync.c — the policy table, policy parameters, the formulas shared with the
 * drivers, and the generic worker state machine the policies plug into. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sync_impl.h"

static const sc_sync_policy_t *const sc_sync_policies[SC_SYNC__END] = {
    [SC_SYNC_BSP] = &sc_sync_bsp,           [SC_SYNC_SCADLES] = &sc_sync_scadles,
    [SC_SYNC_ASP] = &sc_sync_asp,           [SC_SYNC_SSP] = &sc_sync_ssp,
    [SC_SYNC_ADACOMP] = &sc_sync_adacomp,   [SC_SYNC_ADSP] = &sc_sync_adsp,
    [SC_SYNC_LOCALSGD] = &sc_sync_localsgd,
};

const sc_sync_policy_t *sc_sync_policy(sc_sync_kind_t kind)
{
        if ((int)kind < 0 || kind >= SC_SYNC__END)
                return NULL;
        return sc_sync_policies[kind];
}

const char *sc_sync_kind_name(sc_sync_kind_t kind)
{
        const sc_sync_policy_t *pol = sc_sync_policy(kind);
        return pol ? pol->name : "unknown";
}

sc_err_t sc_sync_kind_parse(const char *name, sc_sync_kind_t *kind, char *errstr,
                            size_t errstr_size)
{
        for (int k = 0; k < SC_SYNC__END; k++) {
                if (name && !strcmp(name, sc_sync_policies[k]->name)) {
                        *kind = (sc_sync_kind_t)k;
                        return SC_OK;
                }
        }
        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                       "unknown sync policy '%s' (expected bsp, scadles, asp, ssp, adacomp, "
                       "adsp or localsgd)",
                       name ? name : "(null)");
}

void sc_sync_spec_defaults(sc_sync_spec_t *spec, sc_sync_kind_t kind, int n_workers)
{
        memset(spec, 0, sizeof(*spec));
        spec->kind = kind;
        spec->n_workers = n_workers;
        spec->batch = SC_SYNC_DEF_BATCH;
        spec->b_min = SC_SYNC_DEF_B_MIN;
        spec->b_max = SC_SYNC_DEF_B_MAX;
        spec->window = SC_SYNC_DEF_WINDOW;
        spec->staleness = SC_SYNC_DEF_STALENESS;
        spec->max_inflight = SC_SYNC_DEF_MAX_INFLIGHT;
        spec->late_rounds = SC_SYNC_DEF_LATE_ROUNDS;
        spec->local_steps = SC_SYNC_DEF_LOCAL_STEPS;
        spec->ada_window = SC_SYNC_DEF_ADA_WINDOW;
        spec->gamma = SC_SYNC_DEF_GAMMA;
        spec->commit_min = SC_SYNC_DEF_COMMIT_MIN;
        spec->commit_rate = SC_SYNC_DEF_COMMIT_RATE;
}

sc_err_t sc_sync_spec_check(sc_sync_spec_t *spec, char *errstr, size_t errstr_size)
{
        sc_sync_spec_t d;

        if (!sc_sync_policy(spec->kind))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "sync.policy: unknown kind %d",
                               (int)spec->kind);
        if (spec->n_workers < 1)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "sync.workers: must be >= 1 (got %d)", spec->n_workers);
        sc_sync_spec_defaults(&d, spec->kind, spec->n_workers);
#define SC_SYNC_DEFAULT(f)                                                                         \
        do {                                                                                       \
                if (spec->f == 0)                                                                  \
                        spec->f = d.f;                                                             \
        } while (0)
        SC_SYNC_DEFAULT(batch);
        SC_SYNC_DEFAULT(b_min);
        SC_SYNC_DEFAULT(b_max);
        SC_SYNC_DEFAULT(window);
        SC_SYNC_DEFAULT(local_steps);
        SC_SYNC_DEFAULT(ada_window);
        SC_SYNC_DEFAULT(gamma);
        SC_SYNC_DEFAULT(commit_rate);
#undef SC_SYNC_DEFAULT
        if (spec->base_batch == 0)
                spec->base_batch = 64.0 * spec->n_workers;
        if (spec->adsp_eta == 0)
                spec->adsp_eta = 1.0 / spec->n_workers;
        if (spec->batch < 1)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "sync.batch: must be >= 1");
        if (spec->b_min < 1 || spec->b_max < spec->b_min)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "sync.b_min/b_max: need 1 <= b_min <= b_max (got %d, %d)",
                               spec->b_min, spec->b_max);
        if (!(spec->window > 0) || !(spec->base_batch > 0))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "sync.window / sync.base_batch: must be > 0");
        if (spec->window_auto != 0 && spec->window_auto != 1)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "sync.window: the auto flag must be 0 or 1 (got %d)",
                               spec->window_auto);
        if (!(spec->lr_scale_max >= 0 && spec->lr_scale_max <= 1e6)) /* not NaN */
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "sync.lr_scale_max: must be in [0, 1e6] (got %g)",
                               spec->lr_scale_max);
        if (spec->staleness < 0)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "sync.staleness: must be >= 0 (got %d)", spec->staleness);
        if (spec->max_inflight < 0)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "sync.max_inflight: must be >= 0 (got %d)", spec->max_inflight);
        if (spec->local_steps < 1)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "sync.local_steps: must be >= 1");
        if (!(spec->gamma > 0) || !(spec->commit_rate > 0) || spec->commit_min < 0)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "sync.gamma / sync.commit_rate: must be > 0, "
                               "sync.commit_min >= 0");
        if (spec->adsp_mu < 0 || spec->adsp_mu >= 1)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "sync.adsp_mu: must be in [0, 1) (got %g)", spec->adsp_mu);
        return SC_OK;
}

int sc_sync_sends_gradients(sc_sync_kind_t kind)
{
        const sc_sync_policy_t *pol = sc_sync_policy(kind);
        return pol && pol->sends_gradients;
}

int sc_sync_is_round_based(sc_sync_kind_t kind)
{
        const sc_sync_policy_t *pol = sc_sync_policy(kind);
        return pol && pol->round_based;
}

double sc_sync_adsp_interval(double gamma, double commit_rate, double overhead, double commit_min)
{
        double b = gamma / commit_rate - overhead;
        return b > commit_min ? b : commit_min;
}

/* ---- shared hooks ------------------------------------------------------- */

int sc_sync_batch_fixed(const sc_sync_worker_t *w)
{
        return w->spec.batch;
}

sc_sync_phase_t sc_sync_after_compute_send(sc_sync_worker_t *w, double now)
{
        (void)w;
        (void)now;
        return SC_PH_SEND;
}

int sc_sync_wait_next_version(sc_sync_worker_t *w, sc_sync_act_t *act)
{
        act->wait = SC_WAIT_VERSION;
        act->version = w->sent_t_read + 1;
        return w->version >= act->version;
}

int sc_sync_wait_inflight(sc_sync_worker_t *w, sc_sync_act_t *act)
{
        uint64_t m = (uint64_t)w->spec.max_inflight;
        if (!m)
                return sc_sync_wait_none(w, act);
        act->wait = SC_WAIT_APPLIED;
        act->seq = w->clock > m ? w->clock - m : 0;
        return w->applied_seq >= act->seq;
}

int sc_sync_wait_none(sc_sync_worker_t *w, sc_sync_act_t *act)
{
        (void)w;
        act->wait = SC_WAIT_NONE;
        return 1;
}

double sc_sync_weight_one(const sc_update_t *u)
{
        (void)u;
        return 1.0;
}

/* ---- the worker state machine ------------------------------------------- */

sc_err_t sc_sync_worker_new(sc_sync_worker_t **workerp, const sc_sync_spec_t *spec,
                            uint32_t worker_id, char *errstr, size_t errstr_size)
{
        sc_sync_worker_t *w;
        sc_sync_spec_t s = *spec;
        sc_err_t err;

        *workerp = NULL;
        if ((err = sc_sync_spec_check(&s, errstr, errstr_size)))
                return err;
        if (worker_id >= (uint32_t)s.n_workers)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "worker id %u out of range (%d workers)", worker_id, s.n_workers);
        if (!(w = calloc(1, sizeof(*w))))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "sync worker: out of memory");
        w->spec = s;
        w->pol = sc_sync_policy(s.kind);
        w->id = worker_id;
        w->phase = SC_PH_COMPUTE;
        w->rate = s.b_min / s.window;
        w->commit_rate = s.commit_rate;
        w->next_commit = -1;
        *workerp = w;
        return SC_OK;
}

void sc_sync_worker_destroy(sc_sync_worker_t *worker)
{
        free(worker);
}

void sc_sync_worker_next(sc_sync_worker_t *w, double now, sc_sync_act_t *act)
{
        memset(act, 0, sizeof(*act));
        if (!w->started) {
                w->started = 1;
                if (w->pol->start)
                        w->pol->start(w, now);
        }
        if (w->phase == SC_PH_WAIT) {
                if (!w->pol->wait_done(w, act)) {
                        if (!w->waiting) {
                                w->waiting = 1;
                                w->wait_since = now;
                        }
                        act->kind = SC_ACT_WAIT;
                        if (act->wait != SC_WAIT_APPLIED)
                                act->seq = w->clock;
                        return;
                }
                if (w->waiting) {
                        w->wait_total += now - w->wait_since;
                        w->waiting = 0;
                }
                if (w->pol->resume)
                        w->pol->resume(w, now);
                w->phase = SC_PH_COMPUTE;
                memset(act, 0, sizeof(*act));
        }
        if (w->phase == SC_PH_SEND) {
                act->kind = SC_ACT_SEND;
                act->update_kind = w->pol->sends_gradients ? SC_UPDATE_GRAD
                                   : w->spec.send_models   ? SC_UPDATE_MODEL
                                                           : SC_UPDATE_DELTA;
                act->seq = w->clock + 1;
                act->t_read = w->read_version;
                return;
        }
        act->kind = SC_ACT_COMPUTE;
        w->read_version = w->version; /* the model this compute starts from */
        act->batch = w->pol->batch(w);
        act->local_step = !w->pol->sends_gradients;
        act->t_read = w->version;
        act->commit_at = w->next_commit;
}

void sc_sync_worker_computed(sc_sync_worker_t *w, double now, int samples)
{
        (void)samples;
        if (w->phase != SC_PH_COMPUTE)
                return;
        w->local_steps++;
        w->phase = w->pol->after_compute(w, now);
}

void sc_sync_worker_sent(sc_sync_worker_t *w, double now)
{
        if (w->phase != SC_PH_SEND)
                return;
        w->clock++;
        w->sent_t_read = w->read_version;
        w->send_time = now;
        w->phase = SC_PH_WAIT;
}

int sc_sync_worker_commit_now(sc_sync_worker_t *w)
{
        if (w->pol->sends_gradients || w->phase != SC_PH_COMPUTE || w->local_steps == 0)
                return 0;
        w->phase = SC_PH_SEND;
        return 1;
}

void sc_sync_worker_model(sc_sync_worker_t *w, double now, const sc_sync_model_info_t *info)
{
        (void)now;
        if (info->version > w->version)
                w->version = info->version;
        if (info->applied_seq > w->applied_seq)
                w->applied_seq = info->applied_seq;
        if (info->min_clock > w->min_clock)
                w->min_clock = info->min_clock;
}

void sc_sync_worker_set_rate(sc_sync_worker_t *w, double rate)
{
        if (rate >= 0 && isfinite(rate))
                w->rate = rate;
}

void sc_sync_worker_set_rate_sum(sc_sync_worker_t *w, double sum)
{
        if (sum >= 0 && isfinite(sum))
                w->rate_sum = sum;
}

double sc_sync_worker_rate(const sc_sync_worker_t *w)
{
        return w->rate;
}

double sc_sync_worker_window(const sc_sync_worker_t *w)
{
        double a =
            w->spec.window_auto ? sc_sync_scadles_window(w->spec.base_batch, w->rate_sum) : 0.0;
        return a > 0 ? a : w->spec.window;
}

void sc_sync_worker_set_commit_rate(sc_sync_worker_t *w, double commit_rate)
{
        if (commit_rate > 0 && isfinite(commit_rate))
                w->commit_rate = commit_rate;
}

void sc_sync_worker_set_local_steps(sc_sync_worker_t *w, int tau)
{
        if (tau >= 1)
                w->spec.local_steps = tau;
}

uint64_t sc_sync_worker_clock(const sc_sync_worker_t *w)
{
        return w->clock;
}

uint64_t sc_sync_worker_version(const sc_sync_worker_t *w)
{
        return w->version;
}

int sc_sync_worker_local_steps(const sc_sync_worker_t *w)
{
        return w->local_steps;
}

double sc_sync_worker_wait_seconds(const sc_sync_worker_t *w)
{
        return w->wait_total;
}

double sc_sync_worker_overhead(const sc_sync_worker_t *w)
{
        return w->overhead;
}
