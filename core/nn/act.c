/* act.c — elementwise activations relu, tanh and sigmoid; each may run in
 * place and differentiates from its own output. */
#include <math.h>
#include <stddef.h>

#include "nn_impl.h"

SC_NN_SIMD void sc_nn_bias_act(float *r, size_t n, float b, int relu)
{
        if (relu) {
                for (size_t i = 0; i < n; i++) {
                        float v = r[i] + b;
                        r[i] = v > 0.0f ? v : 0.0f;
                }
        } else {
                for (size_t i = 0; i < n; i++)
                        r[i] += b;
        }
}

SC_NN_SIMD float sc_nn_sum(const float *r, size_t n)
{
        float acc[16] = {0};
        size_t i = 0;

        for (; i + 16 <= n; i += 16)
                for (int j = 0; j < 16; j++)
                        acc[j] += r[i + j];
        float s = 0.0f;
        for (; i < n; i++)
                s += r[i];
        for (int j = 0; j < 16; j++)
                s += acc[j];
        return s;
}

static sc_err_t act_setup(sc_layer_t *l, char *errstr, size_t errstr_size)
{
        l->out = l->in;
        return SC_OK;
}

SC_NN_SIMD static void relu_fwd(const float *x, float *y, size_t n)
{
        for (size_t i = 0; i < n; i++)
                y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

/* d *= (y > 0), in place; d and y are distinct buffers. */
SC_NN_SIMD static void relu_mask(float *restrict d, const float *restrict y, size_t n)
{
        for (size_t i = 0; i < n; i++)
                d[i] = y[i] > 0.0f ? d[i] : 0.0f;
}

SC_NN_SIMD static void relu_bwd(const float *restrict y, const float *restrict dy,
                                float *restrict dx, size_t n)
{
        for (size_t i = 0; i < n; i++)
                dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

static void relu_forward(sc_layer_t *l, const float *x, float *y, int B, int train, sc_rng_t *rng)
{
        relu_fwd(x, y, (size_t)B * sc_shape_numel(l->in));
}

static void relu_backward(sc_layer_t *l, const float *x, const float *y, const float *dy, float *dx,
                          int B)
{
        const size_t n = (size_t)B * sc_shape_numel(l->in);

        if (dx == dy)
                relu_mask(dx, y, n);
        else
                relu_bwd(y, dy, dx, n);
}

static void tanh_forward(sc_layer_t *l, const float *x, float *y, int B, int train, sc_rng_t *rng)
{
        const size_t n = (size_t)B * sc_shape_numel(l->in);

        for (size_t i = 0; i < n; i++)
                y[i] = tanhf(x[i]);
}

SC_NN_SIMD static void tanh_backward(sc_layer_t *l, const float *x, const float *y, const float *dy,
                                     float *dx, int B)
{
        const size_t n = (size_t)B * sc_shape_numel(l->in);

        for (size_t i = 0; i < n; i++)
                dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

static void sigmoid_forward(sc_layer_t *l, const float *x, float *y, int B, int train,
                            sc_rng_t *rng)
{
        const size_t n = (size_t)B * sc_shape_numel(l->in);

        for (size_t i = 0; i < n; i++) {
                /* Both branches keep expf's argument <= 0, so nothing overflows. */
                float v = x[i];
                if (v >= 0.0f) {
                        y[i] = 1.0f / (1.0f + expf(-v));
                } else {
                        float e = expf(v);
                        y[i] = e / (1.0f + e);
                }
        }
}

SC_NN_SIMD static void sigmoid_backward(sc_layer_t *l, const float *x, const float *y,
                                        const float *dy, float *dx, int B)
{
        const size_t n = (size_t)B * sc_shape_numel(l->in);

        for (size_t i = 0; i < n; i++)
                dx[i] = dy[i] * y[i] * (1.0f - y[i]);
}

const sc_layer_ops_t sc_nn_relu_ops = {
    .name = "relu",
    .setup = act_setup,
    .forward = relu_forward,
    .backward = relu_backward,
};

const sc_layer_ops_t sc_nn_tanh_ops = {
    .name = "tanh",
    .setup = act_setup,
    .forward = tanh_forward,
    .backward = tanh_backward,
};

const sc_layer_ops_t sc_nn_sigmoid_ops = {
    .name = "sigmoid",
    .setup = act_setup,
    .forward = sigmoid_forward,
    .backward = sigmoid_backward,
};
