/* api_model.c — records and predictions as structs that carry their size
 * (scadles_push_record, scadles_predict_record), and the serving handle
 * (scadles_model_open): a checkpoint's model scoring records without a
 * worker. */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api_impl.h"
#include "sc_ckpt.h"
#include "sc_file.h"
#include "sc_kafka_source.h"

/* The structs as version 0.1 declared them: the smallest size accepted. */
#define SC_API_RECORD_V01 (offsetof(scadles_record_t, timestamp) + sizeof(int64_t))
#define SC_API_PREDICTION_V01 (offsetof(scadles_prediction_t, model_version) + sizeof(uint64_t))

/* The caller's record over this version's defaults: only its first
 * in->size bytes are read. 0 if in is NULL or smaller than version 0.1's. */
static int sc_api_record_in(const scadles_record_t *in, scadles_record_t *out)
{
        static const scadles_record_t init = SCADLES_RECORD_INIT;
        *out = init;
        if (!in || in->size < SC_API_RECORD_V01)
                return 0;
        memcpy(out, in, in->size < sizeof(*out) ? in->size : sizeof(*out));
        return 1;
}

static int sc_api_pred_ok(const scadles_prediction_t *pred)
{
        return !pred || pred->size >= SC_API_PREDICTION_V01;
}

SCADLES_EXPORT scadles_resp_err_t scadles_push_record(scadles_worker_t *w,
                                                      const scadles_record_t *rec)
{
        scadles_record_t r;
        if (!sc_api_record_in(rec, &r))
                return SCADLES_ERR_INVALID_ARG;
        return scadles_push(w, r.topic, r.partition, r.offset, r.key, r.key_len, r.value,
                            r.value_len, r.headers, r.header_cnt, r.timestamp);
}

SCADLES_EXPORT scadles_resp_err_t scadles_predict_record(scadles_worker_t *w,
                                                         const scadles_record_t *rec,
                                                         scadles_prediction_t *pred, char *errstr,
                                                         size_t errstr_size)
{
        scadles_record_t r;
        if (!sc_api_record_in(rec, &r) || !sc_api_pred_ok(pred))
                return sc_api_errf(SCADLES_ERR_INVALID_ARG, errstr, errstr_size,
                                   "scadles_predict_record: NULL or too small record or "
                                   "prediction (set size: SCADLES_RECORD_INIT)");
        return scadles_predict(w, r.topic, r.key, r.key_len, r.value, r.value_len, r.headers,
                               r.header_cnt, pred ? pred->probabilities : NULL,
                               pred ? pred->n_probabilities : 0, pred ? &pred->label : NULL,
                               pred ? &pred->model_version : NULL, errstr, errstr_size);
}

struct scadles_model_s {
        scadles_conf_t *conf; /* a copy: model layout and decoders */
        sc_model_t *model;
        size_t numel;
        int classes;
        uint64_t step; /* the checkpoint's */
        pthread_mutex_t lock;
        float *x, *out; /* (numel), (classes) */
};

SCADLES_EXPORT void scadles_model_close(scadles_model_t *m)
{
        if (!m)
                return;
        sc_model_destroy(m->model);
        scadles_conf_destroy(m->conf);
        free(m->x);
        free(m->out);
        pthread_mutex_destroy(&m->lock);
        free(m);
}

SCADLES_EXPORT scadles_model_t *scadles_model_open(const scadles_conf_t *conf, const char *path,
                                                   char *errstr, size_t errstr_size)
{
        char why[768];
        sc_ckpt_meta_t meta;
        if (!conf || !path) {
                sc_api_errf(SCADLES_ERR_INVALID_ARG, errstr, errstr_size,
                            "scadles_model_open: NULL configuration or path");
                return NULL;
        }
        scadles_model_t *m = calloc(1, sizeof(*m));
        if (!m || !(m->conf = scadles_conf_dup(conf))) {
                free(m);
                sc_api_errf(SCADLES_ERR_NOMEM, errstr, errstr_size, "out of memory");
                return NULL;
        }
        pthread_mutex_init(&m->lock, NULL);
        if (sc_model_new(&m->model, &m->conf->sc.model, why, sizeof(why))) {
                sc_conf_model_error(&m->conf->sc, why, sizeof(why));
                sc_api_errf(SCADLES_ERR_CONFIG, errstr, errstr_size, why);
                goto fail;
        }
        if (sc_ckpt_load(path, m->model, NULL, &meta, NULL, why, sizeof(why))) {
                sc_api_errf(SCADLES_ERR_IO, errstr, errstr_size, why);
                goto fail;
        }
        m->step = meta.step;
        m->numel = sc_shape_numel(sc_model_spec(m->model)->input);
        m->classes = (int)sc_shape_numel(sc_model_output_shape(m->model));
        if (!(m->x = malloc(m->numel * sizeof(float))) ||
            !(m->out = malloc((size_t)m->classes * sizeof(float)))) {
                sc_api_errf(SCADLES_ERR_NOMEM, errstr, errstr_size, "out of memory");
                goto fail;
        }
        if (errstr && errstr_size)
                errstr[0] = '\0';
        return m;
fail:
        scadles_model_close(m);
        return NULL;
}

SCADLES_EXPORT scadles_resp_err_t scadles_model_predict(scadles_model_t *m,
                                                        const scadles_record_t *rec,
                                                        scadles_prediction_t *pred, char *errstr,
                                                        size_t errstr_size)
{
        scadles_record_t r;
        sc_decode_spec_t ds;
        if (!m || !sc_api_record_in(rec, &r) || !r.topic || (!r.key && r.key_len) ||
            (!r.value && r.value_len) || (!r.headers && r.header_cnt) || !sc_api_pred_ok(pred))
                return sc_api_errf(SCADLES_ERR_INVALID_ARG, errstr, errstr_size,
                                   "scadles_model_predict: NULL handle, topic or data, or a "
                                   "record or prediction without its size (SCADLES_RECORD_INIT)");
        float *probs = pred ? pred->probabilities : NULL;
        if (probs && pred->n_probabilities < (size_t)m->classes) {
                sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                        "scadles_model_predict: the model has %d classes, probabilities has room "
                        "for %zu",
                        m->classes, pred->n_probabilities);
                return SCADLES_ERR_INVALID_ARG;
        }
        const sc_conf_t *conf = &m->conf->sc;
        sc_ks_decode_spec(conf, r.topic, m->numel, m->classes, &ds);
        if (conf->source.unlabelled)
                sc_decode_spec_unlabelled(&ds);
        int32_t label = -1;
        pthread_mutex_lock(&m->lock);
        scadles_resp_err_t e = sc_api_decode(&ds, r.topic, r.key, r.key_len, r.value, r.value_len,
                                             r.headers, r.header_cnt, m->x, errstr, errstr_size);
        if (e == SCADLES_OK)
                e = sc_api_eval(m->model, m->x, m->out, m->classes, probs, &label, errstr,
                                errstr_size);
        pthread_mutex_unlock(&m->lock);
        if (e != SCADLES_OK)
                return e;
        if (pred) {
                pred->label = label;
                pred->model_version = m->step;
        }
        if (errstr && errstr_size)
                errstr[0] = '\0';
        return SCADLES_OK;
}
