/* localsgd.c — local SGD: every worker takes tau local steps, then sends its
 * delta (or model); the server averages one per live worker per round. Also
 * ADACOMM's rule for adapting tau to the loss. */
#include <math.h>

#include "sync_impl.h"

int sc_sync_adacomm_tau(int tau0, double f, double f0)
{
        double tau;
        if (!(f > 0) || !(f0 > 0) || !isfinite(f) || !isfinite(f0))
                return tau0;
        tau = ceil(sqrt(f / f0) * tau0);
        return tau < 1 ? 1 : tau > 1e9 ? 1000000000 : (int)tau;
}

static sc_sync_phase_t sc_localsgd_after_compute(sc_sync_worker_t *w, double now)
{
        (void)now;
        return w->local_steps >= w->spec.local_steps ? SC_PH_SEND : SC_PH_COMPUTE;
}

static void sc_localsgd_resume(sc_sync_worker_t *w, double now)
{
        (void)now;
        w->local_steps = 0;
}

/* acc holds the sum of acc_weight deltas (w += mean) or models (w = mean):
 * one per worker's turn, and the late ones. */
static void sc_localsgd_finish(sc_server_t *srv)
{
        float inv = (float)(1.0 / srv->acc_weight);
        if (srv->spec.sync.send_models) {
                for (size_t i = 0; i < srv->n; i++)
                        srv->params[i] = srv->acc[i] * inv;
        } else {
                for (size_t i = 0; i < srv->n; i++)
                        srv->params[i] += srv->acc[i] * inv;
        }
}

const sc_sync_policy_t sc_sync_localsgd = {
    .kind = SC_SYNC_LOCALSGD,
    .name = "localsgd",
    .sends_gradients = 0,
    .round_based = 1,
    .batch = sc_sync_batch_fixed,
    .after_compute = sc_localsgd_after_compute,
    .wait_done = sc_sync_wait_next_version,
    .resume = sc_localsgd_resume,
    .round_weight = sc_sync_weight_one,
    .round_finish = sc_localsgd_finish,
};
