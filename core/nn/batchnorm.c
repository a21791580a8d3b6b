/* batchnorm.c — batch normalization over channels: a dense output (n, 1, 1)
 * is normalized per feature, a conv output (C, H, W) per channel over the
 * batch and the H*W positions. Training normalizes with the batch's mean and
 * (biased) variance and moves the running statistics toward them
 * (r <- (1 - momentum) r + momentum * batch value, unbiased variance);
 * evaluation normalizes with the running statistics. gamma (the layer's
 * "weight", initialized to 1) and beta (its "bias", 0) are trainable
 * parameters; the running mean and variance (C each, initialized to 0 and
 * 1) are the layer's non-trainable state. Works on either layout. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "nn_impl.h"

#define SC_BN_MOMENTUM 0.1f
#define SC_BN_EPS 1e-5f

static sc_err_t bn_setup(sc_layer_t *l, char *errstr, size_t errstr_size)
{
        if (l->spec.momentum == 0.0f)
                l->spec.momentum = SC_BN_MOMENTUM;
        if (l->spec.eps == 0.0f)
                l->spec.eps = SC_BN_EPS;
        if (!(l->spec.momentum > 0.0f && l->spec.momentum <= 1.0f))
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size, "momentum %g must be in (0, 1]",
                               (double)l->spec.momentum);
        if (!(l->spec.eps > 0.0f && isfinite(l->spec.eps)))
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size, "eps %g must be > 0",
                               (double)l->spec.eps);
        l->out = l->in;
        l->nw = l->nb = (size_t)l->in.c;
        l->ns = 2 * (size_t)l->in.c;
        return SC_OK;
}

static void bn_init(sc_layer_t *l, sc_rng_t *rng, int he)
{
        (void)rng;
        (void)he;
        for (size_t c = 0; c < l->nw; c++)
                l->w[c] = 1.0f;
}

static void bn_reset_state(sc_layer_t *l)
{
        const size_t C = (size_t)l->in.c;
        for (size_t c = 0; c < C; c++) {
                l->state[c] = 0.0f;     /* running mean */
                l->state[C + c] = 1.0f; /* running variance */
        }
}

/* x_hat of the last training pass (B * numel), then 1 / sqrt(var + eps) per
 * channel (C). */
static size_t bn_workspace(const sc_layer_t *l, int B)
{
        return (size_t)B * sc_shape_numel(l->in) + (size_t)l->in.c;
}

/* Element (c, b, s) of a channel-c plane of hw floats lives at
 * c * cs + b * bs + s: feature-major (C, B, H, W) or batch-major (B, C, H, W). */
typedef struct bn_geom {
        size_t C, hw, cs, bs;
        int B;
} bn_geom_t;

static bn_geom_t bn_geom(const sc_layer_t *l, int B)
{
        bn_geom_t g = {.C = (size_t)l->in.c, .hw = (size_t)l->in.h * (size_t)l->in.w, .B = B};
        g.cs = l->in_fm ? (size_t)B * g.hw : g.hw;
        g.bs = l->in_fm ? g.hw : g.C * g.hw;
        return g;
}

static void bn_forward(sc_layer_t *l, const float *x, float *y, int B, int train, sc_rng_t *rng)
{
        const bn_geom_t g = bn_geom(l, B);
        const size_t N = (size_t)B * g.hw;
        const float eps = l->spec.eps, mom = l->spec.momentum;
        float *xhat = l->ws, *istd = l->ws + N * g.C;
        float *rmean = l->state, *rvar = l->state + g.C;

        (void)rng;
        for (size_t c = 0; c < g.C; c++) {
                double mean, var;
                if (train) {
                        double s = 0, ss = 0;
                        for (int b = 0; b < B; b++) {
                                const float *p = x + c * g.cs + (size_t)b * g.bs;
                                for (size_t k = 0; k < g.hw; k++)
                                        s += p[k];
                        }
                        mean = s / (double)N;
                        for (int b = 0; b < B; b++) {
                                const float *p = x + c * g.cs + (size_t)b * g.bs;
                                for (size_t k = 0; k < g.hw; k++)
                                        ss += (p[k] - mean) * (p[k] - mean);
                        }
                        var = ss / (double)N;
                        double unbiased = N > 1 ? ss / (double)(N - 1) : var;
                        rmean[c] = (1.0f - mom) * rmean[c] + mom * (float)mean;
                        rvar[c] = (1.0f - mom) * rvar[c] + mom * (float)unbiased;
                } else {
                        mean = rmean[c];
                        var = rvar[c];
                }
                const float is = (float)(1.0 / sqrt(var + eps)), gm = l->w[c], bt = l->b[c];
                const float m = (float)mean;
                if (train)
                        istd[c] = is;
                for (int b = 0; b < B; b++) {
                        const size_t o = c * g.cs + (size_t)b * g.bs;
                        float *q = xhat + c * N + (size_t)b * g.hw; /* (C, B*hw) */
                        for (size_t k = 0; k < g.hw; k++) {
                                float h = (x[o + k] - m) * is;
                                if (train)
                                        q[k] = h;
                                y[o + k] = gm * h + bt;
                        }
                }
        }
}

static void bn_backward(sc_layer_t *l, const float *x, const float *y, const float *dy, float *dx,
                        int B)
{
        const bn_geom_t g = bn_geom(l, B);
        const size_t N = (size_t)B * g.hw;
        const float *xhat = l->ws, *istd = l->ws + N * g.C;

        (void)x;
        (void)y;
        for (size_t c = 0; c < g.C; c++) {
                double sdy = 0, sdyh = 0;
                for (int b = 0; b < B; b++) {
                        const float *d = dy + c * g.cs + (size_t)b * g.bs;
                        const float *h = xhat + c * N + (size_t)b * g.hw;
                        for (size_t k = 0; k < g.hw; k++) {
                                sdy += d[k];
                                sdyh += (double)d[k] * h[k];
                        }
                }
                l->db[c] = (float)sdy;
                l->dw[c] = (float)sdyh;
                if (!dx)
                        continue;
                const float a = l->w[c] * istd[c], mdy = (float)(sdy / (double)N),
                            mdyh = (float)(sdyh / (double)N);
                for (int b = 0; b < B; b++) {
                        const size_t o = c * g.cs + (size_t)b * g.bs;
                        const float *h = xhat + c * N + (size_t)b * g.hw;
                        for (size_t k = 0; k < g.hw; k++)
                                dx[o + k] = a * (dy[o + k] - mdy - h[k] * mdyh);
                }
        }
}

static double bn_flops(const sc_layer_t *l)
{
        return (double)sc_shape_numel(l->in);
}

const sc_layer_ops_t sc_nn_batchnorm_ops = {
    .name = "batchnorm",
    .setup = bn_setup,
    .init = bn_init,
    .reset_state = bn_reset_state,
    .workspace = bn_workspace,
    .forward = bn_forward,
    .backward = bn_backward,
    .flops = bn_flops,
};
