/* api_predict.c — scadles_predict(): inline scoring with a copy of the
 * worker's live model, thread-safe against the training thread.
 *
 * Two buffers: the training thread copies the live parameters (and
 * batchnorm state) into the published buffer under pub_lock, after a round
 * of training work and only when asked or due; callers, serialized by
 * use_lock, install the published buffer into their own model when it is
 * newer and score with that. The training thread never waits for a
 * caller's forward pass, only for a copy of the parameters. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"
#include "sc_decode.h"
#include "sc_nn.h"
#include "sc_worker.h"

struct sc_api_pred {
        size_t nparams, nstate, numel;
        int classes;
        int distributed; /* versions are J.model's, not the local steps */
        long publish_steps;

        pthread_mutex_t pub_lock; /* guards the published copy */
        float *pub_params, *pub_state;
        uint64_t pub_seq;                /* publications so far */
        uint64_t pub_version;            /* model version of the published copy */
        atomic_uint_fast64_t pub_stamp;  /* change stamp of the published copy */
        atomic_uint_fast64_t live_stamp; /* change stamp of the live model (training side) */
        atomic_int want;                 /* a caller found its copy older than the live model */
        uint64_t steps_published;        /* training side: steps at the last publication */

        pthread_mutex_t use_lock; /* guards the callers' model */
        sc_model_t *model;
        uint64_t seq_installed, version_installed;
        float *x, *out; /* (numel), (classes) */
};

/* A stamp that changes whenever the live parameters may have (steps and
 * J.model installs only grow) and the version reported to callers: the
 * local steps standalone, the J.model version held when distributed (0
 * before the first install), so that it never goes back. */
static void sc_api_pred_stamp(const sc_api_pred_t *p, struct sc_worker_s *sw, uint64_t *stamp,
                              uint64_t *version, uint64_t *steps)
{
        sc_worker_counters_t c;
        sc_worker_counters(sw, &c);
        *stamp = c.steps + c.model_version;
        *version = p->distributed ? c.model_version : c.steps;
        *steps = c.steps;
}

sc_err_t sc_api_pred_new(sc_api_pred_t **pp, struct sc_worker_s *sw, int distributed,
                         long publish_steps, char *errstr, size_t errstr_size)
{
        sc_model_t *live = sc_worker_model(sw);
        sc_err_t err;
        *pp = NULL;
        sc_api_pred_t *p = calloc(1, sizeof(*p));
        if (!p)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        pthread_mutex_init(&p->pub_lock, NULL);
        pthread_mutex_init(&p->use_lock, NULL);
        p->publish_steps = publish_steps;
        p->distributed = distributed;
        p->nparams = sc_model_nparams(live);
        p->nstate = sc_model_nstate(live);
        p->numel = sc_shape_numel(sc_model_spec(live)->input);
        p->classes = (int)sc_shape_numel(sc_model_output_shape(live));
        if ((err = sc_model_new(&p->model, sc_model_spec(live), errstr, errstr_size)))
                goto fail;
        if (!(p->pub_params = malloc(p->nparams * sizeof(float))) ||
            (p->nstate && !(p->pub_state = malloc(p->nstate * sizeof(float)))) ||
            !(p->x = malloc(p->numel * sizeof(float))) ||
            !(p->out = malloc((size_t)p->classes * sizeof(float)))) {
                err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
                goto fail;
        }
        atomic_init(&p->pub_stamp, 0);
        atomic_init(&p->live_stamp, 0);
        atomic_init(&p->want, 0);
        sc_api_pred_publish(p, sw, 1);
        *pp = p;
        return SC_OK;
fail:
        sc_api_pred_destroy(p);
        return err;
}

void sc_api_pred_destroy(sc_api_pred_t *p)
{
        if (!p)
                return;
        sc_model_destroy(p->model);
        free(p->pub_params);
        free(p->pub_state);
        free(p->x);
        free(p->out);
        pthread_mutex_destroy(&p->pub_lock);
        pthread_mutex_destroy(&p->use_lock);
        free(p);
}

void sc_api_pred_publish(sc_api_pred_t *p, struct sc_worker_s *sw, int force)
{
        uint64_t stamp, version, steps;
        sc_api_pred_stamp(p, sw, &stamp, &version, &steps);
        atomic_store(&p->live_stamp, stamp);
        int due = p->publish_steps > 0 && steps - p->steps_published >= (uint64_t)p->publish_steps;
        if (p->pub_seq && stamp == atomic_load(&p->pub_stamp))
                return; /* the published copy is the live model */
        if (!force && !due && !atomic_load(&p->want))
                return;
        sc_model_t *live = sc_worker_model(sw);
        pthread_mutex_lock(&p->pub_lock);
        memcpy(p->pub_params, sc_model_params(live), p->nparams * sizeof(float));
        if (p->nstate)
                memcpy(p->pub_state, sc_model_state(live), p->nstate * sizeof(float));
        p->pub_seq++;
        p->pub_version = version;
        atomic_store(&p->pub_stamp, stamp);
        pthread_mutex_unlock(&p->pub_lock);
        atomic_store(&p->want, 0);
        p->steps_published = steps;
}

scadles_resp_err_t sc_api_decode(const sc_decode_spec_t *ds, const char *topic, const void *key,
                                 size_t key_len, const void *value, size_t value_len,
                                 const scadles_header_t *headers, size_t header_cnt, float *x,
                                 char *errstr, size_t errstr_size)
{
        sc_decode_header_t hdrs[SC_DECODE_MAX_HEADERS + 1];
        char why[512];
        int32_t ignored;
        if (header_cnt > SC_DECODE_MAX_HEADERS + 1)
                header_cnt = SC_DECODE_MAX_HEADERS + 1; /* enough to be refused as malformed */
        for (size_t i = 0; i < header_cnt; i++)
                hdrs[i] = (sc_decode_header_t){headers[i].name, headers[i].value, headers[i].size};
        sc_record_t rec = {key, key_len, value, value_len, hdrs, header_cnt};
        sc_decode_fault_t f = sc_decode_record(ds, &rec, x, &ignored, why, sizeof(why));
        if (f != SC_DECODE_OK) {
                sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: malformed record (%s): %s", topic,
                        sc_decode_fault_name(f), why);
                return SCADLES_ERR_IO;
        }
        return SCADLES_OK;
}

scadles_resp_err_t sc_api_eval(sc_model_t *model, const float *x, float *out, int classes,
                               float *probs, int32_t *label, char *errstr, size_t errstr_size)
{
        float l = sc_model_eval_batch(model, x, NULL, NULL, 1, NULL, out);
        if (isnan(l)) {
                sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "predict: out of memory");
                return SCADLES_ERR_NOMEM;
        }
        int32_t arg = sc_nn_softmax(out, classes, probs);
        if (label)
                *label = arg;
        return SCADLES_OK;
}

scadles_resp_err_t sc_api_pred_run(sc_api_pred_t *p, const struct sc_worker_s *sw,
                                   const char *topic, const void *key, size_t key_len,
                                   const void *value, size_t value_len,
                                   const scadles_header_t *headers, size_t header_cnt, float *probs,
                                   size_t n_probs, int32_t *label, uint64_t *version, char *errstr,
                                   size_t errstr_size)
{
        sc_decode_spec_t ds;
        if (probs && n_probs < (size_t)p->classes) {
                sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                        "scadles_predict: the model has %d classes, probabilities has room for %zu",
                        p->classes, n_probs);
                return SCADLES_ERR_INVALID_ARG;
        }
        sc_worker_decode_spec(sw, topic, &ds);

        pthread_mutex_lock(&p->use_lock);
        scadles_resp_err_t r = sc_api_decode(&ds, topic, key, key_len, value, value_len, headers,
                                             header_cnt, p->x, errstr, errstr_size);
        if (r != SCADLES_OK) {
                pthread_mutex_unlock(&p->use_lock);
                return r;
        }
        if (atomic_load(&p->live_stamp) != atomic_load(&p->pub_stamp))
                atomic_store(&p->want, 1);
        pthread_mutex_lock(&p->pub_lock);
        if (p->pub_seq != p->seq_installed) {
                memcpy(sc_model_params(p->model), p->pub_params, p->nparams * sizeof(float));
                if (p->nstate)
                        memcpy(sc_model_state(p->model), p->pub_state, p->nstate * sizeof(float));
                p->seq_installed = p->pub_seq;
                p->version_installed = p->pub_version;
        }
        pthread_mutex_unlock(&p->pub_lock);
        r = sc_api_eval(p->model, p->x, p->out, p->classes, probs, label, errstr, errstr_size);
        if (r == SCADLES_OK && version)
                *version = p->version_installed;
        pthread_mutex_unlock(&p->use_lock);
        if (r == SCADLES_OK && errstr && errstr_size)
                errstr[0] = '\0';
        return r;
}
