/* scadles.c — ScaDLES: rate-proportional batches b_i, aggregation weighted by
 * the actual samples r_i = b_i / sum_j b_j, and the LR scaled linearly by
 * sum_j b_j / B (the schedule acts on the unscaled LR). */
#include <math.h>

#include "sync_impl.h"

int sc_sync_scadles_batch(double rate, double window, int b_min, int b_max)
{
        double b = rate * window;
        if (!(b >= b_min)) /* also NaN */
                return b_min;
        if (b >= b_max)
                return b_max;
        return (int)lround(b) < b_min ? b_min : (int)lround(b);
}

double sc_sync_scadles_window(double base_batch, double sum_rate)
{
        if (!(sum_rate > 0) || !(base_batch > 0)) /* also NaN */
                return 0.0;
        double w = base_batch / sum_rate;
        return w < 1e6 ? w : 1e6;
}

double sc_sync_scadles_weight(double b_i, double sum_b)
{
        return sum_b > 0 ? b_i / sum_b : 0.0;
}

double sc_sync_scadles_lr(double lr, double sum_b, double base_batch, double scale_max)
{
        if (scale_max > 0 && base_batch > 0 && sum_b > scale_max * base_batch)
                sum_b = scale_max * base_batch;
        return sc_lr_scale_linear(lr, sum_b, base_batch);
}

static int sc_scadles_batch(const sc_sync_worker_t *w)
{
        return sc_sync_scadles_batch(w->rate, sc_sync_worker_window(w), w->spec.b_min,
                                     w->spec.b_max);
}

static void sc_scadles_resume(sc_sync_worker_t *w, double now)
{
        (void)now;
        w->local_steps = 0;
}

static double sc_scadles_weight(const sc_update_t *u)
{
        return (double)u->samples;
}

/* acc holds sum_i b_i g_i, acc_weight sum_i b_i: g = sum_i r_i g_i. */
static void sc_scadles_finish(sc_server_t *srv)
{
        float inv = (float)(1.0 / srv->acc_weight);
        double lr = sc_sync_scadles_lr(sc_server_lr(srv), srv->acc_weight,
                                       srv->spec.sync.base_batch, srv->spec.sync.lr_scale_max);
        for (size_t i = 0; i < srv->n; i++)
                srv->acc[i] *= inv;
        sc_sgd_step(&srv->sgd, srv->params, srv->acc, (float)lr);
}

const sc_sync_policy_t sc_sync_scadles = {
    .kind = SC_SYNC_SCADLES,
    .name = "scadles",
    .sends_gradients = 1,
    .round_based = 1,
    .batch = sc_scadles_batch,
    .after_compute = sc_sync_after_compute_send,
    .wait_done = sc_sync_wait_next_version,
    .resume = sc_scadles_resume,
    .round_weight = sc_scadles_weight,
    .round_finish = sc_scadles_finish,
};
