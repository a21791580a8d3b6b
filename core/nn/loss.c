/* loss.c — softmax cross-entropy (log-sum-exp stabilized) and mean squared
 * error, each with its gradient with respect to the network output; the
 * softmax itself for class probabilities. */
#include <math.h>
#include <stddef.h>

#include "nn_impl.h"

float sc_nn_xent(const float *logits, int fm, int n, int B, const int32_t *labels, float *d,
                 int *correct)
{
        /* Element j of sample b sits at b * sb + j * sj. */
        const size_t sb = fm ? 1 : (size_t)n, sj = fm ? (size_t)B : 1;
        const float inv_b = 1.0f / (float)B;
        double total = 0.0;
        int hits = 0;

        for (int b = 0; b < B; b++) {
                const float *z = logits + b * sb;
                const int32_t y = labels[b];
                if (y < 0 || y >= n)
                        return NAN;
                float m = z[0];
                int arg = 0;
                for (int j = 1; j < n; j++) {
                        if (z[j * sj] > m) {
                                m = z[j * sj];
                                arg = j;
                        }
                }
                hits += arg == y;
                double s = 0.0;
                for (int j = 0; j < n; j++)
                        s += exp((double)(z[j * sj] - m));
                total += log(s) + m - z[y * sj];
                if (d) {
                        float *g = d + b * sb;
                        const float inv_s = (float)(1.0 / s);
                        for (int j = 0; j < n; j++)
                                g[j * sj] = expf(z[j * sj] - m) * inv_s * inv_b;
                        g[y * sj] -= inv_b;
                }
        }
        if (correct)
                *correct = hits;
        return (float)(total / B);
}

int sc_nn_softmax(const float *z, int n, float *p)
{
        float m = z[0];
        double s = 0.0;
        int arg = 0;
        for (int j = 1; j < n; j++)
                if (z[j] > m) {
                        m = z[j];
                        arg = j;
                }
        if (!p)
                return arg;
        for (int j = 0; j < n; j++)
                s += exp((double)(z[j] - m));
        for (int j = 0; j < n; j++)
                p[j] = (float)(exp((double)(z[j] - m)) / s);
        return arg;
}

float sc_nn_mse(const float *out, int fm, sc_shape_t shape, int B, const float *targets, float *d)
{
        const size_t n = sc_shape_numel(shape), hw = (size_t)shape.h * shape.w;
        const float inv_b = 1.0f / (float)B;
        double total = 0.0;

        for (int b = 0; b < B; b++) {
                const float *t = targets + (size_t)b * n;
                for (size_t j = 0; j < n; j++) {
                        /* Feature j = (c, p) of sample b. */
                        size_t at = fm ? ((j / hw) * B + b) * hw + j % hw : b * n + j;
                        float e = out[at] - t[j];
                        total += 0.5 * (double)e * e;
                        if (d)
                                d[at] = e * inv_b;
                }
        }
        return (float)(total / B);
}
