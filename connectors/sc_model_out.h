/* sc_model_out.h — the model out of a distributed job: the view of every
 * shard on J.bcast assembled (through sc_job_model, the reader the
 * workers follow the model with) into one model, batchnorm statistics
 * recomputed from the held-out set, written as a checkpoint
 * (docs/MODEL.md). Used by `scadles model pull`, the aggregator's
 * checkpoints and the demo's evaluator. */
#ifndef SC_MODEL_OUT_H
#define SC_MODEL_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "sc_conf.h"
#include "sc_data.h"
#include "sc_err.h"
#include "sc_job_model.h"
#include "sc_nn.h"

/* Samples of the held-out set a model with batchnorm is recalibrated on
 * (J.bcast carries parameters only; docs/DISTRIBUTED.md). */
#define SC_MODEL_OUT_CALIB_SAMPLES 5000

/* What a pull found. */
typedef struct sc_model_out_info {
        int shards;
        int unpublished;      /* shards with no usable J.bcast record (initial values kept) */
        uint64_t min_version; /* smallest shard version */
        uint64_t max_version;
} sc_model_out_info_t;

/* Copies jm's global parameters into model (whose spec is conf->model) and
 * fills info (may be NULL). */
void sc_model_out_assemble(sc_model_t *model, const sc_job_model_t *jm, sc_model_out_info_t *info);

/* Reads the view of every shard on conf's J.bcast (waiting up to
 * timeout_ms for it) and assembles them into model. SC_ERR_IO when the
 * reader fails or the records do not arrive in time. */
sc_err_t sc_model_out_pull(const sc_conf_t *conf, sc_model_t *model, int timeout_ms,
                           sc_model_out_info_t *info, char *errstr, size_t errstr_size);

/* For a model with batchnorm: recomputes its running statistics on the
 * first SC_MODEL_OUT_CALIB_SAMPLES samples of calib (batches of 500). A
 * model without state is left as it is; SC_ERR_STATE when it has state and
 * calib is empty. */
sc_err_t sc_model_out_recalibrate(sc_model_t *model, const sc_dataset_t *calib, char *errstr,
                                  size_t errstr_size);

#endif
