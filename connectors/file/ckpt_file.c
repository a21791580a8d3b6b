/* ckpt_file.c — checkpoint files: atomic save (sc_file_write_atomic) and
 * load of a model (parameters and non-trainable state) and its optimizer
 * velocity. */
#include "sc_ckpt.h"
#include "sc_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest checkpoint file read (bytes). */
#define SC_CKPT_FILE_MAX ((size_t)1 << 36)

sc_err_t sc_ckpt_save(const char *path, sc_model_t *model, const sc_sgd_t *sgd,
                      const sc_ckpt_meta_t *meta, char *errstr, size_t errstr_size)
{
        char msg[512];
        uint8_t *buf;
        size_t len;
        sc_err_t err;
        size_t n = sc_model_nparams(model);

        if (sgd && sgd->velocity && sgd->n != n)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "%s: optimizer holds %zu values, the model %zu parameters", path,
                               sgd->n, n);
        err = sc_ckpt_encode(sc_model_spec(model), meta, sc_model_params(model),
                             sgd ? sgd->velocity : NULL, n, sc_model_state(model),
                             sc_model_nstate(model), &buf, &len, msg, sizeof(msg));
        if (err)
                return sc_errf(err, errstr, errstr_size, "%s: %s", path, msg);
        err = sc_file_write_atomic(path, buf, len, errstr, errstr_size);
        free(buf);
        return err;
}

sc_err_t sc_ckpt_load(const char *path, sc_model_t *model, sc_sgd_t *sgd, sc_ckpt_meta_t *meta,
                      int *has_state, char *errstr, size_t errstr_size)
{
        return sc_ckpt_load_resume(path, model, sgd, meta, has_state, NULL, NULL, errstr,
                                   errstr_size);
}

sc_err_t sc_ckpt_load_resume(const char *path, sc_model_t *model, sc_sgd_t *sgd,
                             sc_ckpt_meta_t *meta, int *has_state, char **resume,
                             size_t *resume_len, char *errstr, size_t errstr_size)
{
        char msg[512];
        sc_err_t err = SC_OK;
        size_t n = sc_model_nparams(model);

        if (sgd && sgd->velocity && sgd->n != n)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "%s: optimizer holds %zu values, the model %zu parameters", path,
                               sgd->n, n);
        size_t got;
        char *text;
        if ((err = sc_file_read_all(path, SC_CKPT_FILE_MAX, &text, &got, errstr, errstr_size)))
                return err;
        uint8_t *buf = (uint8_t *)text;
        int hs = 0;
        sc_ckpt_meta_t m;
        if (resume)
                *resume = NULL;
        err = sc_ckpt_decode(buf, got, sc_model_spec(model), &m, sc_model_params(model),
                             sgd ? sgd->velocity : NULL, n, NULL, sc_model_state(model),
                             sc_model_nstate(model), &hs, msg, sizeof(msg));
        if (err) {
                sc_errf(err, errstr, errstr_size, "%s: %s", path, msg);
                goto out_free;
        }
        if (resume && m.resume) {
                if (!(*resume = malloc(m.resume_len + 1))) {
                        err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                                      "%s: cannot allocate %zu bytes", path, m.resume_len + 1);
                        goto out_free;
                }
                memcpy(*resume, m.resume, m.resume_len);
                (*resume)[m.resume_len] = 0;
                if (resume_len)
                        *resume_len = m.resume_len;
        }
        m.resume = NULL; /* it points into buf */
        m.resume_len = 0;
        if (meta)
                *meta = m;
        if (!hs)
                sc_model_reset_state(model);
        if (has_state)
                *has_state = hs;
out_free:
        free(buf);
        return err;
}
