/* sc_data.h — in-memory labelled data sets, batch gathering, normalization and
 * the synthetic generator. File loaders (IDX, Fashion-MNIST) live in
 * connectors/ (sc_idx.h). */
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
        float *x;   /* (n, numel(shape)), normalized; owned */
        int32_t *y; /* (n), in [0, n_classes); owned */
} sc_dataset_t;

/* Allocates x (n, numel(shape)) and y (n), both zeroed, and sets n, shape and
 * n_classes. ds must be zeroed or freed; on failure it stays zeroed. */
sc_err_t sc_dataset_alloc(sc_dataset_t *ds, size_t n, sc_shape_t shape, int n_classes, char *errstr,
                          size_t errstr_size);

/* Frees x and y and zeroes ds. Accepts NULL and a zeroed ds. */
void sc_dataset_free(sc_dataset_t *ds);

/* x <- (x - mean) / std over every feature; std must be > 0. */
sc_err_t sc_dataset_normalize(sc_dataset_t *ds, float mean, float std, char *errstr,
                              size_t errstr_size);

/* Copies the samples idx[0..count) into x (count, numel(shape)) and y (count).
 * Every idx[i] must be < ds->n (checked by assert only). */
void sc_dataset_gather(const sc_dataset_t *ds, const uint32_t *idx, size_t count, float *x,
                       int32_t *y);

typedef struct sc_synth_spec {
        size_t n;
        sc_shape_t shape;
        int n_classes;
        float noise;         /* sd of per-sample noise around each class prototype */
        uint64_t proto_seed; /* prototypes depend only on this, so a train and a
                                test set made with one proto_seed match */
} sc_synth_spec_t;

/* A learnable synthetic classification set: one random prototype per class
 * (standard normal entries, from proto_seed) plus Gaussian noise of sd
 * spec->noise (from rng); labels uniform from rng. Same inputs, same data.
 * ds must be zeroed or freed; on failure it stays zeroed. */
sc_err_t sc_synth_make(sc_dataset_t *ds, const sc_synth_spec_t *spec, sc_rng_t *rng, char *errstr,
                       size_t errstr_size);

#endif
