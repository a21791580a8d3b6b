/* api_impl.h — internals shared by the public API files (api_conf.c,
 * scadles.c) and the interceptor plugin; never installed. */
#ifndef SC_API_IMPL_H
#define SC_API_IMPL_H

#include <stddef.h>

#include "sc_conf.h"
#include "sc_err.h"
#include "scadles.h"

struct scadles_conf_s {
        sc_conf_t sc; /* the training configuration */
        scadles_log_cb_t *log_cb;
        scadles_stats_cb_t *stats_cb;
        void *opaque;
        int stats_interval_ms; /* 0 = no periodic statistics */
        size_t queue_max;      /* records the push queue holds */
        int queue_drop;        /* 1 = drop at once when full, 0 = block up to block_ms */
        int block_ms;          /* -1 = block until there is room */
        int distributed, worker_id, eval;
};

/* The public code for an internal error. */
scadles_resp_err_t sc_api_err(sc_err_t err);
/* Writes msg into errstr and returns err. */
scadles_resp_err_t sc_api_errf(scadles_resp_err_t err, char *errstr, size_t errstr_size,
                               const char *msg);

#endif
