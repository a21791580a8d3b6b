/* data.c — labelled data sets in memory: allocation, normalization, batch
 * gathering and the synthetic class-prototype generator. */
#include "sc_data.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* Upper bound on features per sample and on samples, so sizes never overflow. */
#define SC_DATA_MAX_NUMEL ((size_t)1 << 24)
#define SC_DATA_MAX_N ((size_t)1 << 31)

sc_err_t sc_dataset_alloc(sc_dataset_t *ds, size_t n, sc_shape_t shape, int n_classes, char *errstr,
                          size_t errstr_size)
{
        memset(ds, 0, sizeof(*ds));
        if (shape.c < 1 || shape.h < 1 || shape.w < 1)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "data set sample shape (%d, %d, %d) must be positive", shape.c,
                               shape.h, shape.w);
        size_t numel = sc_shape_numel(shape);
        if (numel > SC_DATA_MAX_NUMEL)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "data set sample of %zu features exceeds the limit of %zu", numel,
                               SC_DATA_MAX_NUMEL);
        if (n < 1 || n > SC_DATA_MAX_N)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "data set size %zu outside [1, %zu]", n, SC_DATA_MAX_N);
        if (n_classes < 1)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "data set needs at least one class (got %d)", n_classes);
        ds->x = calloc(n * numel, sizeof(float));
        ds->y = calloc(n, sizeof(int32_t));
        if (!ds->x || !ds->y) {
                sc_dataset_free(ds);
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "cannot allocate a data set of %zu x %zu floats", n, numel);
        }
        ds->n = n;
        ds->shape = shape;
        ds->n_classes = n_classes;
        return SC_OK;
}

void sc_dataset_free(sc_dataset_t *ds)
{
        if (!ds)
                return;
        free(ds->x);
        free(ds->y);
        memset(ds, 0, sizeof(*ds));
}

sc_err_t sc_dataset_normalize(sc_dataset_t *ds, float mean, float std, char *errstr,
                              size_t errstr_size)
{
        if (!(std > 0.0f))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "normalization std must be > 0 (got %g)", (double)std);
        size_t total = ds->n * sc_shape_numel(ds->shape);
        float inv = 1.0f / std;
        for (size_t i = 0; i < total; i++)
                ds->x[i] = (ds->x[i] - mean) * inv;
        return SC_OK;
}

void sc_dataset_gather(const sc_dataset_t *ds, const uint32_t *idx, size_t count, float *x,
                       int32_t *y)
{
        size_t numel = sc_shape_numel(ds->shape);
        for (size_t i = 0; i < count; i++) {
                assert(idx[i] < ds->n);
                memcpy(x + i * numel, ds->x + (size_t)idx[i] * numel, numel * sizeof(float));
                if (y)
                        y[i] = ds->y[idx[i]];
        }
}

sc_err_t sc_synth_make(sc_dataset_t *ds, const sc_synth_spec_t *spec, sc_rng_t *rng, char *errstr,
                       size_t errstr_size)
{
        sc_err_t err;

        memset(ds, 0, sizeof(*ds));
        if (!(spec->noise >= 0.0f))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "synthetic noise must be >= 0 (got %g)", (double)spec->noise);
        if (spec->n_classes < 2)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "synthetic data needs at least 2 classes (got %d)", spec->n_classes);
        err = sc_dataset_alloc(ds, spec->n, spec->shape, spec->n_classes, errstr, errstr_size);
        if (err)
                return err;
        size_t numel = sc_shape_numel(spec->shape);
        float *protos = malloc((size_t)spec->n_classes * numel * sizeof(float));
        if (!protos) {
                sc_dataset_free(ds);
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "cannot allocate %d synthetic prototypes", spec->n_classes);
        }
        sc_rng_t prng;
        sc_rng_seed(&prng, spec->proto_seed);
        for (size_t i = 0; i < (size_t)spec->n_classes * numel; i++)
                protos[i] = sc_rng_normal(&prng);
        for (size_t i = 0; i < spec->n; i++) {
                int32_t c = (int32_t)sc_rng_below(rng, (uint32_t)spec->n_classes);
                const float *p = protos + (size_t)c * numel;
                float *x = ds->x + i * numel;
                ds->y[i] = c;
                for (size_t j = 0; j < numel; j++)
                        x[j] = p[j] + spec->noise * sc_rng_normal(rng);
        }
        free(protos);
        return SC_OK;
}
