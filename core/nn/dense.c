/* dense.c — fully connected layer: y = W x + b as one sgemm over the batch,
 * with bias and an optional fused relu in the epilogue. */
#include <stddef.h>

#include "nn_impl.h"

/* A transposed copy of the input when the skinny gemm wants one, (in * B). */
static size_t dense_workspace(const sc_layer_t *l, int B)
{
        return (size_t)l->in.c * (size_t)B;
}

/* dst (cols, rows) = src (rows, cols)^T. */
static void transpose(const float *src, int rows, int cols, float *dst)
{
        for (int r0 = 0; r0 < rows; r0 += 16)
                for (int c0 = 0; c0 < cols; c0 += 16)
                        for (int r = r0; r < rows && r < r0 + 16; r++)
                                for (int c = c0; c < cols && c < c0 + 16; c++)
                                        dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

static sc_err_t dense_setup(sc_layer_t *l, char *errstr, size_t errstr_size)
{
        if (l->in.h != 1 || l->in.w != 1)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                               "input %dx%dx%d is not a flat vector (add a flatten layer)", l->in.c,
                               l->in.h, l->in.w);
        if (l->spec.units < 1)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size, "units %d must be >= 1",
                               l->spec.units);
        l->out = (sc_shape_t){l->spec.units, 1, 1};
        l->nw = (size_t)l->spec.units * (size_t)l->in.c;
        l->nb = (size_t)l->spec.units;
        return SC_OK;
}

static void dense_init(sc_layer_t *l, sc_rng_t *rng, int he)
{
        sc_nn_init_weights(l->w, l->nw, l->in.c, l->spec.units, he, rng);
}

/* x is (in, B) when in_fm, else (B, in); y is (out, B). */
static void dense_forward(sc_layer_t *l, const float *x, float *y, int B, int train, sc_rng_t *rng)
{
        const int in = l->in.c, out = l->out.c;

        if (l->in_fm) {
                sc_nn_gemm(0, 0, out, B, in, 1.0f, l->w, in, x, B, 0.0f, y, B);
        } else if (sc_nn_gemm_skinny(out, B, in)) {
                transpose(x, B, in, l->ws);
                sc_nn_gemm(0, 0, out, B, in, 1.0f, l->w, in, l->ws, B, 0.0f, y, B);
        } else {
                sc_nn_gemm(0, 1, out, B, in, 1.0f, l->w, in, x, in, 0.0f, y, B);
        }
        for (int o = 0; o < out; o++)
                sc_nn_bias_act(y + (size_t)o * B, (size_t)B, l->b[o], l->fuse_relu);
}

static void dense_backward(sc_layer_t *l, const float *x, const float *y, const float *dy,
                           float *dx, int B)
{
        const int in = l->in.c, out = l->out.c;

        for (int o = 0; o < out; o++)
                l->db[o] = sc_nn_sum(dy + (size_t)o * B, (size_t)B);
        l->bwd_macs = (double)l->nw * B * (dx ? 2 : 1);
        if (l->in_fm) {
                if (sc_nn_gemm_skinny(out, in, B)) {
                        transpose(x, in, B, l->ws);
                        sc_nn_gemm(0, 0, out, in, B, 1.0f, dy, B, l->ws, in, 0.0f, l->dw, in);
                } else {
                        sc_nn_gemm(0, 1, out, in, B, 1.0f, dy, B, x, B, 0.0f, l->dw, in);
                }
                if (dx)
                        sc_nn_gemm(1, 0, in, B, out, 1.0f, l->w, in, dy, B, 0.0f, dx, B);
        } else {
                sc_nn_gemm(0, 0, out, in, B, 1.0f, dy, B, x, in, 0.0f, l->dw, in);
                if (dx)
                        sc_nn_gemm(1, 0, B, in, out, 1.0f, dy, B, l->w, in, 0.0f, dx, in);
        }
}

static double dense_flops(const sc_layer_t *l)
{
        return (double)l->nw;
}

const sc_layer_ops_t sc_nn_dense_ops = {
    .name = "dense",
    .setup = dense_setup,
    .init = dense_init,
    .workspace = dense_workspace,
    .forward = dense_forward,
    .backward = dense_backward,
    .flops = dense_flops,
};
