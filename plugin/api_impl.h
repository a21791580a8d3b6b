/* api_impl.h — internals shared by the public API files (api_conf.c,
 * scadles.c) and the interceptor plugin; never installed. */
#ifndef SC_API_IMPL_H
#define SC_API_IMPL_H

#include <stddef.h>

#include "sc_conf.h"
#include "sc_decode.h"
#include "sc_nn.h"
#include "sc_err.h"
#include "scadles.h"

struct scadles_conf_s {
        sc_conf_t sc; /* the training configuration; sc.embed the embedding properties */
        scadles_log_cb_t *log_cb;
        scadles_stats_cb_t *stats_cb;
        void *opaque;
};

/* ---- api_predict.c: the model copy scadles_predict() scores with ---- */

struct sc_worker_s;
typedef struct sc_api_pred sc_api_pred_t;

/* A model like sw's (its parameters copied now); distributed: sw is a
 * member of a job (versions are J.model's). */
sc_err_t sc_api_pred_new(sc_api_pred_t **pp, struct sc_worker_s *sw, int distributed,
                         long publish_steps, char *errstr, size_t errstr_size);
/* Accepts NULL. */
void sc_api_pred_destroy(sc_api_pred_t *p);
/* The training side, after a round of training work, where no other call on
 * sw runs: publishes sw's model when it changed since the last publication
 * and a caller asked for it, publish_steps passed, or force. */
void sc_api_pred_publish(sc_api_pred_t *p, struct sc_worker_s *sw, int force);
/* Decodes one record with ds into x (numel floats). SCADLES_ERR_IO for a
 * malformed record: errstr names topic, the fault kind and why. */
scadles_resp_err_t sc_api_decode(const sc_decode_spec_t *ds, const char *topic, const void *key,
                                 size_t key_len, const void *value, size_t value_len,
                                 const scadles_header_t *headers, size_t header_cnt, float *x,
                                 char *errstr, size_t errstr_size);
/* Scores x with model (out: classes floats of scratch): the probabilities
 * into probs (if not NULL) and the most probable class into *label (if not
 * NULL). SCADLES_ERR_NOMEM if the forward pass cannot allocate. */
scadles_resp_err_t sc_api_eval(sc_model_t *model, const float *x, float *out, int classes,
                               float *probs, int32_t *label, char *errstr, size_t errstr_size);
/* scadles_predict() on p; sw only for its decoders (sc_worker_decode_spec). */
scadles_resp_err_t sc_api_pred_run(sc_api_pred_t *p, const struct sc_worker_s *sw,
                                   const char *topic, const void *key, size_t key_len,
                                   const void *value, size_t value_len,
                                   const scadles_header_t *headers, size_t header_cnt, float *probs,
                                   size_t n_probs, int32_t *label, uint64_t *version, char *errstr,
                                   size_t errstr_size);

/* The public code for an internal error. */
scadles_resp_err_t sc_api_err(sc_err_t err);
/* Writes msg into errstr and returns err. */
scadles_resp_err_t sc_api_errf(scadles_resp_err_t err, char *errstr, size_t errstr_size,
                               const char *msg);

#endif
