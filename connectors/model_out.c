/* model_out.c — assembles a distributed job's model from its model broadcast (J.bcast) and
 * recalibrates its batchnorm statistics (sc_model_out.h). */
#include "sc_model_out.h"

#include <string.h>

#include "sc_job.h"
#include "sc_kafka_model.h"

void sc_model_out_assemble(sc_model_t *model, const sc_job_model_t *jm, sc_model_out_info_t *info)
{
        memcpy(sc_model_params(model), sc_job_model_params(jm),
               sc_model_nparams(model) * sizeof(float));
        if (!info)
                return;
        memset(info, 0, sizeof(*info));
        info->shards = sc_job_model_shards(jm);
        info->min_version = sc_job_model_min_version(jm);
        for (int s = 0; s < info->shards; s++) {
                uint64_t v = sc_job_model_version(jm, s);
                if (v > info->max_version)
                        info->max_version = v;
                info->unpublished += sc_job_model_stamp(jm, s) == 0;
        }
}

sc_err_t sc_model_out_pull(const sc_conf_t *conf, sc_model_t *model, int timeout_ms,
                           sc_model_out_info_t *info, char *errstr, size_t errstr_size)
{
        sc_model_t *init = NULL;
        sc_job_model_t *jm = NULL;
        sc_err_t err;
        /* Shards never published keep the job's seeded initial values. */
        if ((err = sc_job_initial(conf, &init, errstr, errstr_size)))
                return err;
        err = sc_job_model_new(&jm, conf, sc_model_params(init), sc_model_nparams(init), errstr,
                               errstr_size);
        sc_model_destroy(init);
        if (err)
                return err;
        for (int waited = 0; !sc_job_model_ready(jm); waited += 50) {
                if (waited >= timeout_ms) {
                        err = sc_errf(SC_ERR_IO, errstr, errstr_size,
                                      "%s.model: the newest shard records did not arrive in %d ms",
                                      conf->job.name, timeout_ms);
                        goto out;
                }
                if ((err = sc_job_model_poll(jm, 50, NULL, errstr, errstr_size)))
                        goto out;
        }
        sc_model_out_assemble(model, jm, info);
out:
        sc_job_model_destroy(jm);
        return err;
}

sc_err_t sc_model_out_recalibrate(sc_model_t *model, const sc_dataset_t *calib, char *errstr,
                                  size_t errstr_size)
{
        if (!sc_model_nstate(model))
                return SC_OK;
        if (!calib || !calib->n)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size,
                               "the model has batchnorm: its statistics are recomputed from the "
                               "held-out set, which is empty");
        size_t n = calib->n < SC_MODEL_OUT_CALIB_SAMPLES ? calib->n : SC_MODEL_OUT_CALIB_SAMPLES;
        sc_err_t err = sc_model_recalibrate(model, calib->x, n, 500);
        if (err)
                return sc_errf(err, errstr, errstr_size, "batchnorm recalibration: %s",
                               sc_err2str(err));
        return SC_OK;
}
