/* dense.c — fully connected layer: y = W x + b as one sgemm over the batch,
 * with bias and an optional fused relu in the epilogue. */
#include <stddef.h>

#include "nn_impl.h"

/* A transposed copy of the input when the skinny gemm wants one, (in * B). */
static size_t dense_workspace(const sc_layer_t *l, int B)
{
        return (size_t)l->in.c * (size_t)B;
}

/* dst (cols, rows) = src (rows, cols)^T over source columns [c_lo, c_hi). */
static void transpose_cols(const float *src, int rows, int cols, float *dst, int c_lo, int c_hi)
{
        for (int r0 = 0; r0 < rows; r0 += 16)
                for (int c0 = c_lo; c0 < c_hi; c0 += 16)
                        for (int r = r0; r < rows && r < r0 + 16; r++)
                                for (int c = c0; c < c_hi && c < c0 + 16; c++)
                                        dst[(size_t)c * rows + r] = src[(size_t)r * cols + c];
}

typedef struct transpose_job {
        const float *src;
        float *dst;
        int rows, cols, step;
} transpose_job_t;

static void transpose_part(void *arg, int i)
{
        const transpose_job_t *t = arg;
        int lo = i * t->step, hi = lo + t->step < t->cols ? lo + t->step : t->cols;
        transpose_cols(t->src, t->rows, t->cols, t->dst, lo, hi);
}

/* Large copies are split by source columns across the model's threads. */
#define SC_DENSE_SPLIT_FLOATS (1 << 14)

/* dst (cols, rows) = src (rows, cols)^T. */
static void transpose(const float *src, int rows, int cols, float *dst)
{
        const int threads = sc_nn_parallel_threads();

        if (threads > 1 && (size_t)rows * cols >= SC_DENSE_SPLIT_FLOATS && cols >= 32) {
                transpose_job_t t = {src, dst, rows, cols, 0};
                int parts = threads < cols / 16 ? threads : cols / 16;
                t.step = (cols + parts - 1) / parts;
                t.step = (t.step + 15) / 16 * 16;
                sc_nn_parallel((cols + t.step - 1) / t.step, transpose_part, &t);
                return;
        }
        transpose_cols(src, rows, cols, dst, 0, cols);
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

/* Below this batch a dense layer runs on the calling thread: split across
 * threads, its weights and their gradients would move between the cores'
 * caches every step for little arithmetic (16 multiply-adds per weight at
 * batch 16), which costs more than the split saves. */
#ifndef SC_DENSE_SPLIT_BATCH
#define SC_DENSE_SPLIT_BATCH 32
#endif

static void dense_forward_(sc_layer_t *l, const float *x, float *y, int B)
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

/* x is (in, B) when in_fm, else (B, in); y is (out, B). */
static void dense_forward(sc_layer_t *l, const float *x, float *y, int B, int train, sc_rng_t *rng)
{
        if (B < SC_DENSE_SPLIT_BATCH) {
                sc_nn_pool_t *prev = sc_nn_pool_enter(NULL);
                dense_forward_(l, x, y, B);
                sc_nn_pool_enter(prev);
        } else {
                dense_forward_(l, x, y, B);
        }
}

static void dense_backward_(sc_layer_t *l, const float *x, const float *dy, float *dx, int B)
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

static void dense_backward(sc_layer_t *l, const float *x, const float *y, const float *dy,
                           float *dx, int B)
{
        if (B < SC_DENSE_SPLIT_BATCH) {
                sc_nn_pool_t *prev = sc_nn_pool_enter(NULL);
                dense_backward_(l, x, dy, dx, B);
                sc_nn_pool_enter(prev);
        } else {
                dense_backward_(l, x, dy, dx, B);
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
