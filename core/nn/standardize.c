/* standardize.c — per-feature standardization learned from the stream: a
 * dense input (n, 1, 1) per feature, a conv input (C, H, W) per channel.
 * While training, the first `warmup` samples' mean and (population)
 * variance are accumulated exactly (Chan's merge of each batch's) and each
 * batch is standardized with the statistics so far, itself included; then
 * the statistics are frozen, or with `decay` > 0 move toward each later
 * batch's by that weight. Evaluation standardizes with them:
 * y = (x - mean) / sqrt(var + eps), a feature that did not vary (var 0, to
 * float rounding) taking var 1: a one-hot slot or an indicator that the
 * warm-up never saw set keeps its scale. No trainable parameters; the state
 * (mean and variance per channel, then the samples counted) is saved in and
 * restored from checkpoints, and exported to ONNX as a BatchNormalization
 * with scale 1 and bias 0. */
#include <math.h>
#include <stddef.h>

#include "nn_impl.h"

#define SC_STD_EPS 1e-5f
#define SC_STD_WARMUP 10000
#define SC_STD_WARMUP_MAX 10000000 /* samples: the count is a float */

float sc_nn_standardize_var(float mean, float var)
{
        return var <= 1e-8f * fmaxf(1.0f, mean * mean) ? 1.0f : var;
}

static sc_err_t std_setup(sc_layer_t *l, char *errstr, size_t errstr_size)
{
        if (l->spec.eps == 0.0f)
                l->spec.eps = SC_STD_EPS;
        if (l->spec.warmup == 0)
                l->spec.warmup = SC_STD_WARMUP;
        if (!(l->spec.eps > 0.0f && isfinite(l->spec.eps)))
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size, "eps %g must be > 0",
                               (double)l->spec.eps);
        if (l->spec.warmup < 1 || l->spec.warmup > SC_STD_WARMUP_MAX)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size, "warmup %d must be in 1..%d",
                               l->spec.warmup, SC_STD_WARMUP_MAX);
        if (!(l->spec.decay >= 0.0f && l->spec.decay < 1.0f))
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size, "decay %g must be in [0, 1)",
                               (double)l->spec.decay);
        l->out = l->in;
        l->nw = l->nb = 0;
        l->ns = 2 * (size_t)l->in.c + 1;
        return SC_OK;
}

static void std_reset_state(sc_layer_t *l)
{
        const size_t C = (size_t)l->in.c;
        for (size_t c = 0; c < C; c++) {
                l->state[c] = 0.0f;     /* mean */
                l->state[C + c] = 1.0f; /* variance */
        }
        l->state[2 * C] = 0.0f; /* samples counted */
}

/* 1 / sqrt(var + eps) per channel (C). */
static size_t std_workspace(const sc_layer_t *l, int B)
{
        (void)B;
        return (size_t)l->in.c;
}

/* Element (c, b, s) lives at c * cs + b * bs + s (feature- or batch-major). */
static void std_geom(const sc_layer_t *l, int B, size_t *hw, size_t *cs, size_t *bs)
{
        *hw = (size_t)l->in.h * (size_t)l->in.w;
        *cs = l->in_fm ? (size_t)B * *hw : *hw;
        *bs = l->in_fm ? *hw : (size_t)l->in.c * *hw;
}

/* Folds channel c of the batch into the statistics: merged exactly during
 * the warm-up (n counted samples so far), moved by decay after it. */
static void std_update(sc_layer_t *l, const float *x, int B, size_t c, double n, int warm)
{
        size_t hw, cs, bs;
        std_geom(l, B, &hw, &cs, &bs);
        const size_t C = (size_t)l->in.c, N = (size_t)B * hw;
        double s = 0, ss = 0;
        for (int b = 0; b < B; b++)
                for (size_t k = 0; k < hw; k++)
                        s += x[c * cs + (size_t)b * bs + k];
        const double mb = s / (double)N;
        for (int b = 0; b < B; b++)
                for (size_t k = 0; k < hw; k++) {
                        double d = x[c * cs + (size_t)b * bs + k] - mb;
                        ss += d * d;
                }
        const double vb = ss / (double)N;
        double ma = l->state[c], va = l->state[C + c];
        if (warm) {
                const double na = n * (double)hw, nt = na + (double)N, d = mb - ma;
                const double m2 = va * na + ss + d * d * na * (double)N / nt;
                l->state[c] = (float)(ma + d * (double)N / nt);
                l->state[C + c] = (float)(m2 / nt);
        } else {
                const double a = l->spec.decay;
                l->state[c] = (float)((1 - a) * ma + a * mb);
                l->state[C + c] = (float)((1 - a) * va + a * vb);
        }
}

static void std_forward(sc_layer_t *l, const float *x, float *y, int B, int train, sc_rng_t *rng)
{
        size_t hw, cs, bs;
        std_geom(l, B, &hw, &cs, &bs);
        const size_t C = (size_t)l->in.c;
        float *istd = l->ws;
        (void)rng;
        if (train) {
                const double n = l->state[2 * C];
                const int warm = n < (double)l->spec.warmup;
                if (warm || l->spec.decay > 0.0f) {
                        for (size_t c = 0; c < C; c++)
                                std_update(l, x, B, c, n, warm);
                        if (warm)
                                l->state[2 * C] = (float)(n + B);
                }
        }
        for (size_t c = 0; c < C; c++) {
                const float m = l->state[c],
                            is = (float)(1.0 / sqrt((double)sc_nn_standardize_var(l->state[c],
                                                                                  l->state[C + c]) +
                                                    l->spec.eps));
                istd[c] = is;
                for (int b = 0; b < B; b++) {
                        const size_t o = c * cs + (size_t)b * bs;
                        for (size_t k = 0; k < hw; k++)
                                y[o + k] = (x[o + k] - m) * is;
                }
        }
}

static void std_backward(sc_layer_t *l, const float *x, const float *y, const float *dy, float *dx,
                         int B)
{
        size_t hw, cs, bs;
        std_geom(l, B, &hw, &cs, &bs);
        const float *istd = l->ws;
        (void)x;
        (void)y;
        if (!dx)
                return;
        for (size_t c = 0; c < (size_t)l->in.c; c++)
                for (int b = 0; b < B; b++) {
                        const size_t o = c * cs + (size_t)b * bs;
                        for (size_t k = 0; k < hw; k++)
                                dx[o + k] = dy[o + k] * istd[c];
                }
}

static double std_flops(const sc_layer_t *l)
{
        return (double)sc_shape_numel(l->in);
}

const sc_layer_ops_t sc_nn_standardize_ops = {
    .name = "standardize",
    .setup = std_setup,
    .reset_state = std_reset_state,
    .workspace = std_workspace,
    .forward = std_forward,
    .backward = std_backward,
    .flops = std_flops,
};
