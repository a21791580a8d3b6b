/* conv2d.c — 2-D convolution (square kernel, stride, zero padding) as im2col
 * plus one sgemm per chunk of samples, and a direct reference for tests. */
#include <string.h>

#include "nn_impl.h"

/* Target size of one im2col chunk in floats, per BLAS thread: big enough
 * for sgemm to run at speed and split across threads, small enough to stay
 * in cache. */
#define SC_CONV_CHUNK_FLOATS (1u << 17)

static sc_err_t conv_setup(sc_layer_t *l, char *errstr, size_t errstr_size)
{
        const sc_layer_spec_t *s = &l->spec;

        if (s->filters < 1)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size, "filters %d must be >= 1",
                               s->filters);
        if (s->kernel < 1)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size, "kernel %d must be >= 1",
                               s->kernel);
        if (s->stride < 1)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size, "stride %d must be >= 1",
                               s->stride);
        if (s->padding < 0)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size, "padding %d must be >= 0",
                               s->padding);
        int ph = l->in.h + 2 * s->padding, pw = l->in.w + 2 * s->padding;
        if (s->kernel > ph || s->kernel > pw)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                               "kernel %d larger than padded input %dx%d", s->kernel, ph, pw);
        l->out.c = s->filters;
        l->out.h = (ph - s->kernel) / s->stride + 1;
        l->out.w = (pw - s->kernel) / s->stride + 1;
        l->nw = (size_t)s->filters * (size_t)l->in.c * (size_t)s->kernel * (size_t)s->kernel;
        l->nb = (size_t)s->filters;
        /* Only the AVX-512 kernel of the sparse path is measured to win. */
        l->sparse_below = sc_nn_avx512() ? SC_NN_CONV_SPARSE_DENSITY : 0.0f;
        return SC_OK;
}

static void conv_init(sc_layer_t *l, sc_rng_t *rng, int he)
{
        int kk = l->spec.kernel * l->spec.kernel;
        sc_nn_init_weights(l->w, l->nw, l->in.c * kk, l->spec.filters * kk, he, rng);
}

/* Samples per im2col chunk for a batch of B. */
static int conv_chunk(const sc_layer_t *l, int B)
{
        size_t per = (size_t)l->in.c * l->spec.kernel * l->spec.kernel * l->out.h * l->out.w;
        size_t nb = (size_t)SC_CONV_CHUNK_FLOATS * (size_t)sc_nn_threads_get() / per;
        if (nb < 1)
                nb = 1;
        return nb < (size_t)B ? (int)nb : B;
}

/* col for the forward pass and the backward pass's dcol. */
/* Up to this many floats, the forward pass keeps every chunk's im2col for
 * the backward pass instead of recomputing it. */
#define SC_CONV_KEEP_FLOATS (1u << 20)

static int conv_keeps_cols(const sc_layer_t *l, int B)
{
        size_t per = (size_t)l->in.c * l->spec.kernel * l->spec.kernel * l->out.h * l->out.w;
        return per * (size_t)B <= SC_CONV_KEEP_FLOATS;
}

/* Whether the sparse backward path (sparse.c) suits the layer: a row of a
 * receptive field (kernel * channels floats) fills at least two vectors. */
static int conv_sparse_fits(const sc_layer_t *l)
{
        return l->in.c * l->spec.kernel >= 32;
}

int sc_nn_conv_use_sparse(const sc_layer_t *l, size_t nnz, size_t total)
{
        return conv_sparse_fits(l) &&
               (double)nnz < (double)l->sparse_below * (double)total / sc_nn_threads_get();
}

/* The im2col chunk (or the whole batch's columns when kept), then the
 * backward pass's dcol chunk, then the sparse path's scratch. */
static size_t conv_workspace(const sc_layer_t *l, int B)
{
        size_t per = (size_t)l->in.c * l->spec.kernel * l->spec.kernel * l->out.h * l->out.w;
        size_t chunk = per * (size_t)conv_chunk(l, B);
        size_t sparse = conv_sparse_fits(l) ? sc_nn_conv_sparse_scratch(l, conv_chunk(l, B)) : 0;
        return (conv_keeps_cols(l, B) ? per * (size_t)B : chunk) + chunk + sparse;
}

/* Channel and sample strides of an input of layout fm. */
static void conv_strides(const sc_layer_t *l, int B, size_t *cs, size_t *bs)
{
        size_t hw = (size_t)l->in.h * l->in.w;
        *cs = l->in_fm ? (size_t)B * hw : hw;
        *bs = l->in_fm ? hw : (size_t)l->in.c * hw;
}

/* "Same" convolutions (stride 1, OH == H, OW == W): row (c, ki, kj) of a
 * sample is its input plane shifted by ki - pad rows and kj - pad columns,
 * so whole planes move in one copy or one add; the column that wraps
 * around to the neighbouring row is fixed up per row. */
static int conv_same(int H, int W, int k, int stride, int pad, int OH, int OW)
{
        return stride == 1 && OH == H && OW == W && pad < W && k - 1 - pad < W;
}

static void im2col_same(const float *x, size_t cs, size_t bs, int b0, int nb, int C, int H, int W,
                        int k, int pad, float *col)
{
        const size_t hw = (size_t)H * W, rowlen = (size_t)nb * hw;

        for (int c = 0; c < C; c++) {
                for (int ki = 0; ki < k; ki++) {
                        const int oy0 = pad - ki > 0 ? pad - ki : 0;
                        const int oy1 = H + pad - ki < H ? H + pad - ki : H;
                        for (int kj = 0; kj < k; kj++) {
                                float *dst = col + ((size_t)(c * k + ki) * k + kj) * rowlen;
                                const int sh = kj - pad;
                                for (int bb = 0; bb < nb; bb++, dst += hw) {
                                        const float *src = x + c * cs + (size_t)(b0 + bb) * bs;
                                        memset(dst, 0, sizeof(float) * (size_t)oy0 * W);
                                        memset(dst + (size_t)oy1 * W, 0,
                                               sizeof(float) * (size_t)(H - oy1) * W);
                                        if (oy1 <= oy0)
                                                continue;
                                        float *d = dst + (size_t)oy0 * W;
                                        const float *s = src + (size_t)(oy0 - pad + ki) * W;
                                        const size_t n = (size_t)(oy1 - oy0) * W;
                                        if (sh == 0) {
                                                memcpy(d, s, sizeof(float) * n);
                                        } else if (sh < 0) {
                                                memcpy(d - sh, s, sizeof(float) * (n + sh));
                                                for (int r = 0; r < oy1 - oy0; r++)
                                                        memset(d + (size_t)r * W, 0,
                                                               sizeof(float) * -sh);
                                        } else {
                                                memcpy(d, s + sh, sizeof(float) * (n - sh));
                                                for (int r = 0; r < oy1 - oy0; r++)
                                                        memset(d + (size_t)r * W + W - sh, 0,
                                                               sizeof(float) * sh);
                                        }
                                }
                        }
                }
        }
}

SC_NN_SIMD static void add_to(float *restrict d, const float *restrict s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                d[i] += s[i];
}

/* Zeroes col's wrapped column in place, then adds whole planes. */
static void col2im_same(float *col, size_t cs, size_t bs, int b0, int nb, int C, int H, int W,
                        int k, int pad, float *x)
{
        const size_t hw = (size_t)H * W, rowlen = (size_t)nb * hw;

        for (int c = 0; c < C; c++) {
                for (int ki = 0; ki < k; ki++) {
                        const int oy0 = pad - ki > 0 ? pad - ki : 0;
                        const int oy1 = H + pad - ki < H ? H + pad - ki : H;
                        if (oy1 <= oy0)
                                continue;
                        for (int kj = 0; kj < k; kj++) {
                                float *src = col + ((size_t)(c * k + ki) * k + kj) * rowlen;
                                const int sh = kj - pad;
                                for (int bb = 0; bb < nb; bb++, src += hw) {
                                        float *dst = x + c * cs + (size_t)(b0 + bb) * bs;
                                        float *d = dst + (size_t)(oy0 - pad + ki) * W;
                                        float *s = src + (size_t)oy0 * W;
                                        const size_t n = (size_t)(oy1 - oy0) * W;
                                        if (sh == 0) {
                                                add_to(d, s, n);
                                        } else if (sh < 0) {
                                                for (int r = 0; r < oy1 - oy0; r++)
                                                        memset(s + (size_t)r * W, 0,
                                                               sizeof(float) * -sh);
                                                add_to(d, s - sh, n + sh);
                                        } else {
                                                for (int r = 0; r < oy1 - oy0; r++)
                                                        memset(s + (size_t)r * W + W - sh, 0,
                                                               sizeof(float) * sh);
                                                add_to(d + sh, s, n - sh);
                                        }
                                }
                        }
                }
        }
}

SC_NN_SIMD void sc_nn_im2col(const float *x, size_t cs, size_t bs, int b0, int nb, int C, int H,
                             int W, int k, int stride, int pad, int OH, int OW, float *col)
{
        const size_t ohw = (size_t)OH * OW, rowlen = (size_t)nb * ohw;

        if (conv_same(H, W, k, stride, pad, OH, OW)) {
                im2col_same(x, cs, bs, b0, nb, C, H, W, k, pad, col);
                return;
        }
        for (int c = 0; c < C; c++) {
                for (int ki = 0; ki < k; ki++) {
                        for (int kj = 0; kj < k; kj++) {
                                float *dst = col + ((size_t)(c * k + ki) * k + kj) * rowlen;
                                /* Output columns whose input column is inside. */
                                int ox0 = 0, ox1 = OW;
                                while (ox0 < OW && ox0 * stride - pad + kj < 0)
                                        ox0++;
                                while (ox1 > ox0 && (ox1 - 1) * stride - pad + kj >= W)
                                        ox1--;
                                for (int bb = 0; bb < nb; bb++) {
                                        const float *src = x + c * cs + (size_t)(b0 + bb) * bs;
                                        for (int oy = 0; oy < OH; oy++, dst += OW) {
                                                int iy = oy * stride - pad + ki;
                                                if (iy < 0 || iy >= H) {
                                                        memset(dst, 0, sizeof(float) * OW);
                                                        continue;
                                                }
                                                const float *s = src + (size_t)iy * W +
                                                                 (ox0 * stride - pad + kj);
                                                for (int ox = 0; ox < ox0; ox++)
                                                        dst[ox] = 0.0f;
                                                if (stride == 1) {
                                                        memcpy(dst + ox0, s,
                                                               sizeof(float) * (ox1 - ox0));
                                                } else {
                                                        for (int ox = ox0; ox < ox1; ox++)
                                                                dst[ox] = s[(ox - ox0) * stride];
                                                }
                                                for (int ox = ox1; ox < OW; ox++)
                                                        dst[ox] = 0.0f;
                                        }
                                }
                        }
                }
        }
}

SC_NN_SIMD void sc_nn_col2im(float *col, size_t cs, size_t bs, int b0, int nb, int C, int H, int W,
                             int k, int stride, int pad, int OH, int OW, float *x)
{
        const size_t ohw = (size_t)OH * OW, rowlen = (size_t)nb * ohw;

        if (conv_same(H, W, k, stride, pad, OH, OW)) {
                col2im_same(col, cs, bs, b0, nb, C, H, W, k, pad, x);
                return;
        }
        for (int c = 0; c < C; c++) {
                for (int ki = 0; ki < k; ki++) {
                        for (int kj = 0; kj < k; kj++) {
                                const float *src = col + ((size_t)(c * k + ki) * k + kj) * rowlen;
                                int ox0 = 0, ox1 = OW;
                                while (ox0 < OW && ox0 * stride - pad + kj < 0)
                                        ox0++;
                                while (ox1 > ox0 && (ox1 - 1) * stride - pad + kj >= W)
                                        ox1--;
                                for (int bb = 0; bb < nb; bb++) {
                                        float *dst = x + c * cs + (size_t)(b0 + bb) * bs;
                                        for (int oy = 0; oy < OH; oy++, src += OW) {
                                                int iy = oy * stride - pad + ki;
                                                if (iy < 0 || iy >= H)
                                                        continue;
                                                float *d = dst + (size_t)iy * W +
                                                           (ox0 * stride - pad + kj);
                                                for (int ox = ox0; ox < ox1; ox++)
                                                        d[(ox - ox0) * stride] += src[ox];
                                        }
                                }
                        }
                }
        }
}

/* x is l->in in layout in_fm; y is (F, B, OH, OW). */
static void conv_forward(sc_layer_t *l, const float *x, float *y, int B, int train, sc_rng_t *rng)
{
        const int C = l->in.c, F = l->out.c, k = l->spec.kernel;
        const int ckk = C * k * k, nbc = conv_chunk(l, B);
        const size_t ohw = (size_t)l->out.h * l->out.w, ld = (size_t)B * ohw;
        size_t cs, bs;
        /* Columns are kept for a backward pass that will read them: in
         * training, unless the last backward pass took the sparse path (one
         * chunk's buffer stays in cache; a dense pass recomputes them). */
        const int keep = train && conv_keeps_cols(l, B) && !l->bwd_sparse;

        l->cols_kept = keep;
        conv_strides(l, B, &cs, &bs);
        for (int b0 = 0; b0 < B; b0 += nbc) {
                int nb = B - b0 < nbc ? B - b0 : nbc;
                int n = nb * (int)ohw;
                float *col = l->ws + (keep ? (size_t)b0 * ckk * ohw : 0);
                sc_nn_im2col(x, cs, bs, b0, nb, C, l->in.h, l->in.w, k, l->spec.stride,
                             l->spec.padding, l->out.h, l->out.w, col);
                float *yc = y + (size_t)b0 * ohw;
                sc_nn_gemm(0, 0, F, n, ckk, 1.0f, l->w, ckk, col, n, 0.0f, yc, (int)ld);
                for (int f = 0; f < F; f++)
                        sc_nn_bias_act(yc + (size_t)f * ld, (size_t)n, l->b[f], l->fuse_relu);
        }
}

static void conv_backward(sc_layer_t *l, const float *x, const float *y, const float *dy, float *dx,
                          int B)
{
        const int C = l->in.c, F = l->out.c, k = l->spec.kernel;
        const int ckk = C * k * k, nbc = conv_chunk(l, B);
        const size_t ohw = (size_t)l->out.h * l->out.w, ld = (size_t)B * ohw;
        size_t cs, bs;
        const int keep = conv_keeps_cols(l, B) && l->cols_kept;
        /* The workspace layout (conv_workspace) has room for all columns
         * whenever they could be kept. */
        float *dcol = l->ws + (size_t)ckk * ohw * (conv_keeps_cols(l, B) ? (size_t)B : (size_t)nbc);

        for (int f = 0; f < F; f++)
                l->db[f] = sc_nn_sum(dy + (size_t)f * ld, ld);
        conv_strides(l, B, &cs, &bs);
        /* Behind relu + maxpool, dy is mostly zeros: then only its
         * non-zeros are multiplied (sparse.c). */
        const size_t total = (size_t)F * ld;
        const size_t nnz = conv_sparse_fits(l) && l->sparse_below > 0.0f
                               ? sc_nn_count_nonzero(dy, F, (int)ld, ld)
                               : total;
        l->bwd_sparse = sc_nn_conv_use_sparse(l, nnz, total);
        if (l->bwd_sparse) {
                sc_nn_conv_sparse_backward(l, x, cs, bs, dy, dx, B, nbc,
                                           dcol + (size_t)ckk * ohw * nbc);
                l->bwd_macs = (double)nnz * ckk * (dx ? 2 : 1);
                return;
        }
        l->bwd_macs = (double)total * ckk * (dx ? 2 : 1);
        if (dx)
                memset(dx, 0, sizeof(float) * (size_t)B * sc_shape_numel(l->in));
        for (int b0 = 0; b0 < B; b0 += nbc) {
                int nb = B - b0 < nbc ? B - b0 : nbc;
                int n = nb * (int)ohw;
                const float *dyc = dy + (size_t)b0 * ohw;
                float *col = l->ws + (keep ? (size_t)b0 * ckk * ohw : 0);
                if (!keep)
                        sc_nn_im2col(x, cs, bs, b0, nb, C, l->in.h, l->in.w, k, l->spec.stride,
                                     l->spec.padding, l->out.h, l->out.w, col);
                sc_nn_gemm(0, 1, F, ckk, n, 1.0f, dyc, (int)ld, col, n, b0 ? 1.0f : 0.0f, l->dw,
                           ckk);
                if (!dx)
                        continue;
                sc_nn_gemm(1, 0, ckk, n, F, 1.0f, l->w, ckk, dyc, (int)ld, 0.0f, dcol, n);
                sc_nn_col2im(dcol, cs, bs, b0, nb, C, l->in.h, l->in.w, k, l->spec.stride,
                             l->spec.padding, l->out.h, l->out.w, dx);
        }
}

static double conv_flops(const sc_layer_t *l)
{
        return (double)l->nw * l->out.h * l->out.w;
}

const sc_layer_ops_t sc_nn_conv2d_ops = {
    .name = "conv2d",
    .setup = conv_setup,
    .init = conv_init,
    .workspace = conv_workspace,
    .forward = conv_forward,
    .backward = conv_backward,
    .flops = conv_flops,
};

void sc_nn_conv2d_ref_forward(const float *x, int B, int C, int H, int W, const float *w,
                              const float *b, int F, int k, int stride, int pad, float *y)
{
        const int OH = (H + 2 * pad - k) / stride + 1, OW = (W + 2 * pad - k) / stride + 1;

        for (int n = 0; n < B; n++)
                for (int f = 0; f < F; f++)
                        for (int oy = 0; oy < OH; oy++)
                                for (int ox = 0; ox < OW; ox++) {
                                        double s = b[f];
                                        for (int c = 0; c < C; c++)
                                                for (int i = 0; i < k; i++)
                                                        for (int j = 0; j < k; j++) {
                                                                int iy = oy * stride - pad + i;
                                                                int ix = ox * stride - pad + j;
                                                                if (iy < 0 || iy >= H || ix < 0 ||
                                                                    ix >= W)
                                                                        continue;
                                                                s += (double)
                                                                         w[((f * C + c) * k + i) *
                                                                               k +
                                                                           j] *
                                                                     x[((n * C + c) * H + iy) * W +
                                                                       ix];
                                                        }
                                        y[((n * F + f) * OH + oy) * OW + ox] = (float)s;
                                }
}

void sc_nn_conv2d_ref_backward(const float *x, int B, int C, int H, int W, const float *w, int F,
                               int k, int stride, int pad, const float *dy, float *dw, float *db,
                               float *dx)
{
        const int OH = (H + 2 * pad - k) / stride + 1, OW = (W + 2 * pad - k) / stride + 1;

        memset(dw, 0, sizeof(float) * (size_t)F * C * k * k);
        memset(db, 0, sizeof(float) * (size_t)F);
        if (dx)
                memset(dx, 0, sizeof(float) * (size_t)B * C * H * W);
        for (int n = 0; n < B; n++)
                for (int f = 0; f < F; f++)
                        for (int oy = 0; oy < OH; oy++)
                                for (int ox = 0; ox < OW; ox++) {
                                        float g = dy[((n * F + f) * OH + oy) * OW + ox];
                                        db[f] += g;
                                        for (int c = 0; c < C; c++)
                                                for (int i = 0; i < k; i++)
                                                        for (int j = 0; j < k; j++) {
                                                                int iy = oy * stride - pad + i;
                                                                int ix = ox * stride - pad + j;
                                                                if (iy < 0 || iy >= H || ix < 0 ||
                                                                    ix >= W)
                                                                        continue;
                                                                size_t wi =
                                                                    ((size_t)(f * C + c) * k + i) *
                                                                        k +
                                                                    j;
                                                                size_t xi =
                                                                    ((size_t)(n * C + c) * H + iy) *
                                                                        W +
                                                                    ix;
                                                                dw[wi] += g * x[xi];
                                                                if (dx)
                                                                        dx[xi] += g * w[wi];
                                                        }
                                }
}
