/* sc_data.h — in-memory labelled data sets and the synthetic generator.
 * File loaders (IDX, Fashion-MNIST) live in connectors/ (sc_idx.h). */
#ifndef SC_DATA_H
#define SC_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "sc_err.h"
#include "sc_nn.h"
#include "sc_rng.h"

typedef struct sc_dataset {
        size_t n;         /* samples */
        sc_shape_t shape; /* per sample, e.g. (1, 28, 28) */
        int n_classes;
        float *x;   /* (n, numel(shape)), normalized */
        int32_t *y; /* (n), in [0, n_classes) */
} sc_dataset_t;

/* Frees x and y and zeroes ds. Accepts NULL and a zeroed ds. */
void sc_dataset_free(sc_dataset_t *ds);

typedef struct sc_synth_spec {
        size_t n;
        sc_shape_t shape;
        int n_classes;
        float noise;         /* sd of per-sample noise around each class prototype */
        uint64_t proto_seed; /* prototypes depend only on this, so a train and a
                                test set made with one proto_seed match */
} sc_synth_spec_t;

/* A learnable synthetic classification set: one random prototype per class
 * (from proto_seed) plus Gaussian noise (from rng). Same inputs, same data. */
sc_err_t sc_synth_make(sc_dataset_t *ds, const sc_synth_spec_t *spec, sc_rng_t *rng,
                       char *errstr, size_t errstr_size);

#endif
