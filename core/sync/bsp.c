/* bsp.c — bulk-synchronous SGD: a fixed batch per worker, one gradient from
 * each live worker per round averaged with equal weights, then one optimizer
 * step; workers wait for the new model. */
#include "sync_impl.h"

static void sc_bsp_resume(sc_sync_worker_t *w, double now)
{
        (void)now;
        w->local_steps = 0;
}

/* acc holds sum_i g_i over the round's updates (acc_weight of them: one per
 * worker's turn, and the late ones): step with their mean. */
static void sc_bsp_finish(sc_server_t *srv)
{
        float inv = (float)(1.0 / srv->acc_weight);
        for (size_t i = 0; i < srv->n; i++)
                srv->acc[i] *= inv;
        sc_sgd_step(&srv->sgd, srv->params, srv->acc, (float)sc_server_lr(srv));
}

const sc_sync_policy_t sc_sync_bsp = {
    .kind = SC_SYNC_BSP,
    .name = "bsp",
    .sends_gradients = 1,
    .round_based = 1,
    .batch = sc_sync_batch_fixed,
    .after_compute = sc_sync_after_compute_send,
    .wait_done = sc_sync_wait_next_version,
    .resume = sc_bsp_resume,
    .round_weight = sc_sync_weight_one,
    .round_finish = sc_bsp_finish,
};
