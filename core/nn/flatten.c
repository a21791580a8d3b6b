/* flatten.c — views (C, H, W) as a flat vector of C*H*W features; moves a
 * feature-major (C, B, H, W) batch to batch-major (B, C*H*W) so the feature
 * order is the caller's (c, h, w) order. */
#include <stddef.h>
#include <string.h>

#include "nn_impl.h"

static sc_err_t flatten_setup(sc_layer_t *l, char *errstr, size_t errstr_size)
{
        l->out = (sc_shape_t){(int)sc_shape_numel(l->in), 1, 1};
        return SC_OK;
}

/* Only called when the layout changes; otherwise the model aliases y to x. */
static void flatten_forward(sc_layer_t *l, const float *x, float *y, int B, int train,
                            sc_rng_t *rng)
{
        const int C = l->in.c;
        const size_t hw = (size_t)l->in.h * l->in.w;

        if (y == x)
                return;
        for (int c = 0; c < C; c++)
                for (int b = 0; b < B; b++)
                        memcpy(y + ((size_t)b * C + c) * hw, x + ((size_t)c * B + b) * hw,
                               sizeof(float) * hw);
}

static void flatten_backward(sc_layer_t *l, const float *x, const float *y, const float *dy,
                             float *dx, int B)
{
        const int C = l->in.c;
        const size_t hw = (size_t)l->in.h * l->in.w;

        if (dx == dy)
                return;
        for (int c = 0; c < C; c++)
                for (int b = 0; b < B; b++)
                        memcpy(dx + ((size_t)c * B + b) * hw, dy + ((size_t)b * C + c) * hw,
                               sizeof(float) * hw);
}

const sc_layer_ops_t sc_nn_flatten_ops = {
    .name = "flatten",
    .setup = flatten_setup,
    .forward = flatten_forward,
    .backward = flatten_backward,
};
