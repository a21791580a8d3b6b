/* dropout.c — inverted dropout: in training each element is kept with
 * probability 1 - rate and scaled by 1 / (1 - rate); identity otherwise. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "nn_impl.h"

static sc_err_t dropout_setup(sc_layer_t *l, char *errstr, size_t errstr_size)
{
        float r = l->spec.rate;

        if (!(r >= 0.0f && r < 1.0f))
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size, "rate %g must be in [0, 1)",
                               (double)r);
        l->out = l->in;
        return SC_OK;
}

/* The per-element scale (0 or 1 / (1 - rate)) of the last training pass. */
static size_t dropout_workspace(const sc_layer_t *l, int B)
{
        return (size_t)B * sc_shape_numel(l->in);
}

static void dropout_forward(sc_layer_t *l, const float *x, float *y, int B, int train,
                            sc_rng_t *rng)
{
        const size_t n = (size_t)B * sc_shape_numel(l->in);
        const float rate = l->spec.rate, scale = 1.0f / (1.0f - rate);
        float *m = l->ws;

        if (!train || rate == 0.0f || !rng) {
                for (size_t i = 0; i < n; i++)
                        m[i] = 1.0f;
                if (y != x)
                        memcpy(y, x, sizeof(float) * n);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                m[i] = sc_rng_uniform(rng) >= rate ? scale : 0.0f;
                y[i] = x[i] * m[i];
        }
}

static void dropout_backward(sc_layer_t *l, const float *x, const float *y, const float *dy,
                             float *dx, int B)
{
        const size_t n = (size_t)B * sc_shape_numel(l->in);
        const float *m = l->ws;

        for (size_t i = 0; i < n; i++)
                dx[i] = dy[i] * m[i];
}

const sc_layer_ops_t sc_nn_dropout_ops = {
    .name = "dropout",
    .setup = dropout_setup,
    .workspace = dropout_workspace,
    .forward = dropout_forward,
    .backward = dropout_backward,
};
