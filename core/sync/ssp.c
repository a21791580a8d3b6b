/* ssp.c — stale-synchronous SGD: updates apply on arrival; a worker at clock c
 * (updates sent) proceeds only while the slowest live worker's clock is at
 * least c - s, and (sync.max_inflight) its model holds its own updates up to
 * c - max_inflight. */
#include "sync_impl.h"

static int sc_ssp_wait_done(sc_sync_worker_t *w, sc_sync_act_t *act)
{
        uint64_t s = (uint64_t)w->spec.staleness;
        if (!sc_sync_wait_inflight(w, act))
                return 0;
        act->wait = SC_WAIT_CLOCK;
        act->clock = w->clock > s ? w->clock - s : 0;
        return w->min_clock >= act->clock;
}

const sc_sync_policy_t sc_sync_ssp = {
    .kind = SC_SYNC_SSP,
    .name = "ssp",
    .sends_gradients = 1,
    .batch = sc_sync_batch_fixed,
    .after_compute = sc_sync_after_compute_send,
    .wait_done = sc_ssp_wait_done,
    .apply = sc_sync_apply_sgd,
};
