/* pool.c — 2-D max pooling over square windows; remembers each window's
 * argmax for the backward pass. Works on either layout: it only sees planes. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nn_impl.h"

static sc_err_t pool_setup(sc_layer_t *l, char *errstr, size_t errstr_size)
{
        const int k = l->spec.kernel, s = l->spec.stride;

        if (k < 1)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size, "kernel %d must be >= 1", k);
        if (s < 1)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size, "stride %d must be >= 1", s);
        if (k > l->in.h || k > l->in.w)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                               "kernel %d larger than input %dx%d", k, l->in.h, l->in.w);
        l->out.c = l->in.c;
        l->out.h = (l->in.h - k) / s + 1;
        l->out.w = (l->in.w - k) / s + 1;
        return SC_OK;
}

/* One int32 argmax (offset inside its input plane) per output element. */
static size_t pool_workspace(const sc_layer_t *l, int B)
{
        return (size_t)B * sc_shape_numel(l->out);
}

/* The common 2x2 / stride 2 window, branch-free so it vectorizes; ties go
 * to the first element in row-major order, as in the general loop. */
SC_NN_SIMD static void pool2_plane(const float *xp, int W, int OH, int OW, float *yp, int32_t *ap)
{
        for (int oy = 0; oy < OH; oy++) {
                const float *r0 = xp + (size_t)2 * oy * W, *r1 = r0 + W;
                const int base = 2 * oy * W;
                float *yr = yp + (size_t)oy * OW;
                int32_t *ar = ap + (size_t)oy * OW;
                for (int ox = 0; ox < OW; ox++) {
                        float a = r0[2 * ox], b = r0[2 * ox + 1];
                        float c = r1[2 * ox], d = r1[2 * ox + 1];
                        int32_t i = base + 2 * ox;
                        float m1 = b > a ? b : a, m2 = d > c ? d : c;
                        int32_t i1 = b > a ? i + 1 : i, i2 = d > c ? i + W + 1 : i + W;
                        yr[ox] = m2 > m1 ? m2 : m1;
                        ar[ox] = m2 > m1 ? i2 : i1;
                }
        }
}

static void pool_forward(sc_layer_t *l, const float *x, float *y, int B, int train, sc_rng_t *rng)
{
        const int H = l->in.h, W = l->in.w, OH = l->out.h, OW = l->out.w;
        const int k = l->spec.kernel, s = l->spec.stride;
        const size_t planes = (size_t)B * l->in.c, ihw = (size_t)H * W, ohw = (size_t)OH * OW;
        int32_t *arg = (int32_t *)l->ws;

        if (k == 2 && s == 2) {
                for (size_t p = 0; p < planes; p++)
                        pool2_plane(x + p * ihw, W, OH, OW, y + p * ohw, arg + p * ohw);
                return;
        }
        for (size_t p = 0; p < planes; p++) {
                const float *xp = x + p * ihw;
                float *yp = y + p * ohw;
                int32_t *ap = arg + p * ohw;
                for (int oy = 0; oy < OH; oy++) {
                        for (int ox = 0; ox < OW; ox++) {
                                int best = oy * s * W + ox * s;
                                float m = xp[best];
                                for (int i = 0; i < k; i++) {
                                        const int row = (oy * s + i) * W + ox * s;
                                        for (int j = 0; j < k; j++) {
                                                if (xp[row + j] > m) {
                                                        m = xp[row + j];
                                                        best = row + j;
                                                }
                                        }
                                }
                                yp[oy * OW + ox] = m;
                                ap[oy * OW + ox] = best;
                        }
                }
        }
}

static void pool_backward(sc_layer_t *l, const float *x, const float *y, const float *dy, float *dx,
                          int B)
{
        const size_t planes = (size_t)B * l->in.c;
        const size_t ihw = (size_t)l->in.h * l->in.w, ohw = (size_t)l->out.h * l->out.w;
        const int32_t *arg = (const int32_t *)l->ws;

        memset(dx, 0, sizeof(float) * planes * ihw);
        for (size_t p = 0; p < planes; p++) {
                float *dp = dx + p * ihw;
                const float *gp = dy + p * ohw;
                const int32_t *ap = arg + p * ohw;
                for (size_t i = 0; i < ohw; i++)
                        dp[ap[i]] += gp[i];
        }
}

const sc_layer_ops_t sc_nn_maxpool2d_ops = {
    .name = "maxpool2d",
    .setup = pool_setup,
    .workspace = pool_workspace,
    .forward = pool_forward,
    .backward = pool_backward,
};
