/* asp.c — asynchronous SGD: every gradient is applied on arrival with the
 * server optimizer at the scheduled LR; workers never wait for each other,
 * only (sync.max_inflight) for their own updates to come back. */
#include "sync_impl.h"

sc_err_t sc_sync_apply_sgd(sc_server_t *srv, const sc_update_t *u, char *errstr, size_t errstr_size)
{
        (void)errstr;
        (void)errstr_size;
        sc_sgd_step(&srv->sgd, srv->params, sc_server_densify(srv, u), (float)sc_server_lr(srv));
        return SC_OK;
}

const sc_sync_policy_t sc_sync_asp = {
    .kind = SC_SYNC_ASP,
    .name = "asp",
    .sends_gradients = 1,
    .batch = sc_sync_batch_fixed,
    .after_compute = sc_sync_after_compute_send,
    .wait_done = sc_sync_wait_inflight,
    .apply = sc_sync_apply_sgd,
};
