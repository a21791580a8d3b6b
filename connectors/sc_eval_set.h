/* sc_eval_set.h — the held-out set of a configuration (section eval): a
 * file of CSV lines or JSON Lines, IDX files of any name, or a topic read
 * to its end offsets, every record decoded by the decoder of a stream; or,
 * without an eval section, Fashion-MNIST's t10k set normalized by data.*.
 * Used by train, eval, worker, the plugin, the demo and `model pull`. */
#ifndef SC_EVAL_SET_H
#define SC_EVAL_SET_H

#include <stddef.h>

#include "sc_conf.h"
#include "sc_data.h"
#include "sc_decode.h"
#include "sc_err.h"

/* 1 when conf's eval section names a held-out file or topic. */
int sc_eval_set_configured(const sc_conf_t *conf);

/* The decoder of held-out records: eval.decoder's source.topics element,
 * else eval.topic's, else streams.*. */
void sc_eval_set_decoder(const sc_conf_t *conf, size_t numel, int n_classes, sc_decode_spec_t *ds);

/* Loads the held-out set for a model of input shape conf->model.input and
 * n_classes outputs into ds (zeroed or freed; the caller frees it with
 * sc_dataset_free). A record that does not decode is an error naming the
 * file and line (or topic, partition and offset); a first CSV line that is
 * not numeric is a header and skipped. Without an eval section: the
 * Fashion-MNIST test set of data.dir, normalized by data.mean/data.std
 * (data.source must be fashion-mnist). SC_ERR_CONFIG, SC_ERR_IO,
 * SC_ERR_DECODE, SC_ERR_NOMEM. */
sc_err_t sc_eval_set_load(const sc_conf_t *conf, int n_classes, sc_dataset_t *ds, char *errstr,
                          size_t errstr_size);

#endif
