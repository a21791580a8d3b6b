/* adsp.c — ADSP: workers train without waiting for each other and commit
 * their accumulated update U_i = w_local - w_at_last_sync every
 * B_i = max(B_min, Gamma / DeltaC - O_i) seconds; the server adds U_i / M, or
 * with momentum v = mu v + eta U_i, w += v. */
#include "sync_impl.h"

static void sc_adsp_start(sc_sync_worker_t *w, double now)
{
        w->next_commit =
            now + sc_sync_adsp_interval(w->spec.gamma, w->commit_rate, 0.0, w->spec.commit_min);
}

static sc_sync_phase_t sc_adsp_after_compute(sc_sync_worker_t *w, double now)
{
        return now >= w->next_commit ? SC_PH_SEND : SC_PH_COMPUTE;
}

/* The commit is done when a model including it arrived. */
static int sc_adsp_wait_done(sc_sync_worker_t *w, sc_sync_act_t *act)
{
        act->wait = SC_WAIT_APPLIED;
        act->seq = w->clock;
        return w->applied_seq >= w->clock;
}

static void sc_adsp_resume(sc_sync_worker_t *w, double now)
{
        w->overhead = now - w->send_time;
        w->next_commit = now + sc_sync_adsp_interval(w->spec.gamma, w->commit_rate, w->overhead,
                                                     w->spec.commit_min);
        w->local_steps = 0;
}

static sc_err_t sc_adsp_apply(sc_server_t *srv, const sc_update_t *u, char *errstr,
                              size_t errstr_size)
{
        const float *d = sc_server_densify(srv, u);
        (void)errstr;
        (void)errstr_size;
        if (srv->mom) {
                float mu = (float)srv->spec.sync.adsp_mu, eta = (float)srv->spec.sync.adsp_eta;
                for (size_t i = 0; i < srv->n; i++) {
                        srv->mom[i] = mu * srv->mom[i] + eta * d[i];
                        srv->params[i] += srv->mom[i];
                }
        } else {
                float inv = 1.0f / (float)srv->spec.sync.n_workers;
                for (size_t i = 0; i < srv->n; i++)
                        srv->params[i] += d[i] * inv;
        }
        return SC_OK;
}

const sc_sync_policy_t sc_sync_adsp = {
    .kind = SC_SYNC_ADSP,
    .name = "adsp",
    .sends_gradients = 0,
    .start = sc_adsp_start,
    .batch = sc_sync_batch_fixed,
    .after_compute = sc_adsp_after_compute,
    .wait_done = sc_adsp_wait_done,
    .resume = sc_adsp_resume,
    .apply = sc_adsp_apply,
};
