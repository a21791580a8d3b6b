/* sparse.c — conv2d's backward pass for a sparse output gradient.
 *
 * Behind relu + maxpool, at most one position in each pooling window of a
 * channel carries a gradient, and relu zeroes many more: in the CNN on
 * Fashion-MNIST, 4% of conv2's dY is non-zero. The dense backward (two
 * sgemms over im2col columns and a col2im) then mostly multiplies by zero.
 * This path works channel-last instead: the chunk's input is transposed to
 * xT (nb, H + 2 pad, W + 2 pad, C), the weights to W' (F, k, k, C), so that
 * one kernel row ki of a receptive field is k * C contiguous floats in xT,
 * W' and dW', and for each non-zero dY[f, p] = v:
 *
 *   dW'[f, ki, :, :]   += v * xT[rows of p's field, ki]
 *   dxT[p's field, ki] += v * W'[f, ki, :, :]
 *
 * dY's non-zeros come from per-position lists. Per (position, ki) the xT
 * slice and the dxT sum stay in registers; W' and dW' stay in cache. No
 * im2col, no col2im: dxT is transposed back into dx, dW' into dW. */
#include <string.h>

#include "nn_impl.h"

SC_NN_SIMD size_t sc_nn_count_nonzero(const float *a, int rows, int cols, size_t ld)
{
        size_t nnz = 0;

        for (int r = 0; r < rows; r++) {
                const float *ar = a + (size_t)r * ld;
                unsigned c = 0;
                for (int i = 0; i < cols; i++)
                        c += ar[i] != 0.0f;
                nnz += c;
        }
        return nnz;
}

#ifdef SC_NN_X86
/* 16x16 block: dst[j * ldd + i] = src[i * lds + j] for i < ni, j < nj. */
SC_NN_AVX512 static void transpose16(const float *src, size_t lds, int ni, int nj, float *dst,
                                     size_t ldd)
{
        const __mmask16 mj = sc_nn_lanes(0, nj), mi = sc_nn_lanes(0, ni);
        __m512 r[16], t[16];

        for (int i = 0; i < 16; i++)
                r[i] =
                    i < ni ? _mm512_maskz_loadu_ps(mj, src + (size_t)i * lds) : _mm512_setzero_ps();
        /* Pairs of rows interleaved, then pairs of pairs, then 128-bit lanes. */
        for (int i = 0; i < 16; i += 2) {
                t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
                t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
        }
        for (int i = 0; i < 16; i += 4) {
                r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
                r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
                r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
                r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
        }
        for (int i = 0; i < 16; i += 8)
                for (int j = 0; j < 4; j++) {
                        t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + 4 + j], 0x88);
                        t[i + 4 + j] = _mm512_shuffle_f32x4(r[i + j], r[i + 4 + j], 0xdd);
                }
        for (int j = 0; j < 8; j++) {
                r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
                r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
        }
        /* r[j] is column j of the block. */
        for (int j = 0; j < nj; j++)
                _mm512_mask_storeu_ps(dst + (size_t)j * ldd, mi, r[j]);
}
#endif

void sc_nn_transpose(const float *src, int rows, int cols, size_t lds, float *dst, size_t ldd)
{
#ifdef SC_NN_X86
        if (sc_nn_avx512()) {
                for (int i = 0; i < rows; i += 16)
                        for (int j = 0; j < cols; j += 16)
                                transpose16(
                                    src + (size_t)i * lds + j, lds, rows - i < 16 ? rows - i : 16,
                                    cols - j < 16 ? cols - j : 16, dst + (size_t)j * ldd + i, ldd);
                return;
        }
#endif
        for (int i = 0; i < rows; i++)
                for (int j = 0; j < cols; j++)
                        dst[(size_t)j * ldd + i] = src[(size_t)i * lds + j];
}

#ifdef SC_NN_X86
/* build_lists (below) with AVX-512 compaction: 16 filters per step, stored whole
 * (the lists have 16 floats of slack at the end). */
SC_NN_AVX512 static size_t lists_avx512(const float *dyT, int n, int F, int32_t *ptr, int32_t *nzf,
                                        float *nzv)
{
        const __m512i iota =
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        size_t j = 0;

        for (int p = 0; p < n; p++) {
                const float *d = dyT + (size_t)p * F;
                ptr[p] = (int32_t)j;
                for (int f = 0; f < F; f += 16) {
                        const __mmask16 in = sc_nn_lanes(0, F - f);
                        const __m512 v = _mm512_maskz_loadu_ps(in, d + f);
                        const __mmask16 nz =
                            _mm512_mask_cmp_ps_mask(in, v, _mm512_setzero_ps(), _CMP_NEQ_UQ);
                        _mm512_storeu_ps(nzv + j, _mm512_maskz_compress_ps(nz, v));
                        _mm512_storeu_si512(nzf + j,
                                            _mm512_maskz_compress_epi32(
                                                nz, _mm512_add_epi32(iota, _mm512_set1_epi32(f))));
                        j += (size_t)__builtin_popcount(nz);
                }
        }
        ptr[n] = (int32_t)j;
        return j;
}

#endif

/* Per-position lists of dY's non-zeros from dyT (n, F): position p's pairs
 * are (nzf[j], nzv[j]) for ptr[p] <= j < ptr[p + 1], filters ascending.
 * Returns the number of pairs. */
static size_t build_lists(const float *dyT, int n, int F, int32_t *ptr, int32_t *nzf, float *nzv)
{
        size_t j = 0;

#ifdef SC_NN_X86
        if (sc_nn_avx512()) {
                return lists_avx512(dyT, n, F, ptr, nzf, nzv);
        }
#endif
        for (int p = 0; p < n; p++) {
                ptr[p] = (int32_t)j;
                for (int f = 0; f < F; f++) {
                        float v = dyT[(size_t)p * F + f];
                        if (v != 0.0f) {
                                nzf[j] = f;
                                nzv[j++] = v;
                        }
                }
        }
        ptr[n] = (int32_t)j;
        return j;
}

/* Floats of a receptive-field row handled per pass (8 AVX-512 vectors). */
#define SC_SPARSE_PANEL 128

static size_t up16(size_t n)
{
        return (n + 15) / 16 * 16;
}

/* Geometry of one sparse pass. */
typedef struct sparse_geo {
        int C, H, W, k, s, pad, OH, OW, F, PH, PW;
        size_t K; /* C * k * k */
} sparse_geo_t;

static sparse_geo_t geo_of(const sc_layer_t *l)
{
        sparse_geo_t g = {.C = l->in.c,
                          .H = l->in.h,
                          .W = l->in.w,
                          .k = l->spec.kernel,
                          .s = l->spec.stride,
                          .pad = l->spec.padding,
                          .OH = l->out.h,
                          .OW = l->out.w,
                          .F = l->out.c};
        g.PH = g.H + 2 * g.pad;
        g.PW = g.W + 2 * g.pad;
        g.K = (size_t)g.C * g.k * g.k;
        return g;
}

/* Scratch layout for chunks of nb samples, in floats. */
typedef struct sparse_ws {
        size_t xt, dxt, w, dw, dyt, nzv, nzf, ptr, pix, total;
} sparse_ws_t;

static sparse_ws_t ws_of(const sparse_geo_t *g, int nb)
{
        const size_t n = (size_t)nb * g->OH * g->OW, img = (size_t)g->PH * g->PW * g->C;
        sparse_ws_t w;
        w.xt = 0;
        w.dxt = w.xt + up16((size_t)nb * img);
        w.w = w.dxt + up16((size_t)nb * img);
        w.dw = w.w + up16((size_t)g->F * g->K);
        w.dyt = w.dw + up16((size_t)g->F * g->K);
        /* Values and filter indices have 16 floats of slack for the
         * full-width stores of the compaction. */
        w.nzv = w.dyt + up16(n * g->F);
        w.nzf = w.nzv + up16(n * g->F + 16);
        w.ptr = w.nzf + up16(n * g->F + 16);
        w.pix = w.ptr + up16(n + 1);
        w.total = w.pix + up16(n);
        return w;
}

size_t sc_nn_conv_sparse_scratch(const sc_layer_t *l, int nb)
{
        sparse_geo_t g = geo_of(l);
        return ws_of(&g, nb).total;
}

#ifdef SC_NN_X86
#define SPARSE_KERNEL __attribute__((target("avx512f"), always_inline)) static inline

/* One panel: NV vectors (the last masked by last) at offset xo of every
 * position's field row and offset wo of every filter's W' / dW' row. */
SPARSE_KERNEL void sparse_panel(const int NV, const int DX, int n, size_t K, size_t xo, size_t wo,
                                __mmask16 last, const int32_t *ptr, const int32_t *nzf,
                                const float *nzv, const int32_t *pix, const float *xt,
                                const float *w, float *dw, float *dxt)
{
        for (int p = 0; p < n; p++) {
                const int j0 = ptr[p], j1 = ptr[p + 1];
                if (j0 == j1)
                        continue;
                const size_t o = (size_t)pix[p] + xo;
                __m512 c[8], a[8];
#pragma GCC unroll 8
                for (int v = 0; v < NV; v++) {
                        const __mmask16 m = v == NV - 1 ? last : (__mmask16)0xffff;
                        c[v] = _mm512_maskz_loadu_ps(m, xt + o + 16 * v);
                        a[v] = _mm512_setzero_ps();
                }
                for (int j = j0; j < j1; j++) {
                        const size_t fo = (size_t)nzf[j] * K + wo;
                        const __m512 g = _mm512_set1_ps(nzv[j]);
#pragma GCC unroll 8
                        for (int v = 0; v < NV; v++) {
                                const __mmask16 m = v == NV - 1 ? last : (__mmask16)0xffff;
                                float *d = dw + fo + 16 * v;
                                if (DX)
                                        a[v] = _mm512_fmadd_ps(
                                            g, _mm512_maskz_loadu_ps(m, w + fo + 16 * v), a[v]);
                                _mm512_mask_storeu_ps(
                                    d, m, _mm512_fmadd_ps(g, c[v], _mm512_maskz_loadu_ps(m, d)));
                        }
                }
                if (DX) {
#pragma GCC unroll 8
                        for (int v = 0; v < NV; v++) {
                                const __mmask16 m = v == NV - 1 ? last : (__mmask16)0xffff;
                                float *d = dxt + o + 16 * v;
                                _mm512_mask_storeu_ps(
                                    d, m, _mm512_add_ps(a[v], _mm512_maskz_loadu_ps(m, d)));
                        }
                }
        }
}

/* Every panel of one chunk: kernel rows ki, each k * C floats long, in
 * pieces of up to SC_SPARSE_PANEL floats. */
__attribute__((target("avx512f"))) static void
sparse_products(const sparse_geo_t *g, int n, const int32_t *ptr, const int32_t *nzf,
                const float *nzv, const int32_t *pix, const float *xt, const float *w, float *dw,
                float *dxt)
{
        const int row = g->k * g->C;

        for (int ki = 0; ki < g->k; ki++) {
                for (int r0 = 0; r0 < row; r0 += SC_SPARSE_PANEL) {
                        const int left = row - r0 < SC_SPARSE_PANEL ? row - r0 : SC_SPARSE_PANEL;
                        const int nv = (left + 15) / 16;
                        const __mmask16 last = sc_nn_lanes(0, left - 16 * (nv - 1));
                        const size_t xo = (size_t)ki * g->PW * g->C + r0;
                        const size_t wo = (size_t)ki * row + r0;
#define PANEL(NV)                                                                                  \
        do {                                                                                       \
                if (dxt)                                                                           \
                        sparse_panel(NV, 1, n, g->K, xo, wo, last, ptr, nzf, nzv, pix, xt, w, dw,  \
                                     dxt);                                                         \
                else                                                                               \
                        sparse_panel(NV, 0, n, g->K, xo, wo, last, ptr, nzf, nzv, pix, xt, w, dw,  \
                                     NULL);                                                        \
        } while (0)
                        switch (nv) {
                        case 1:
                                PANEL(1);
                                break;
                        case 2:
                                PANEL(2);
                                break;
                        case 3:
                                PANEL(3);
                                break;
                        case 4:
                                PANEL(4);
                                break;
                        case 5:
                                PANEL(5);
                                break;
                        case 6:
                                PANEL(6);
                                break;
                        case 7:
                                PANEL(7);
                                break;
                        default:
                                PANEL(8);
                                break;
                        }
#undef PANEL
                }
        }
}
#endif

/* The same products in plain loops (for CPUs without AVX-512, where the
 * layer leaves the path off by default: it does not beat sgemm there). */
SC_NN_SIMD static void sparse_products_c(const sparse_geo_t *g, int n, const int32_t *ptr,
                                         const int32_t *nzf, const float *nzv, const int32_t *pix,
                                         const float *xt, const float *w, float *dw, float *dxt)
{
        const int row = g->k * g->C;

        for (int p = 0; p < n; p++) {
                for (int j = ptr[p]; j < ptr[p + 1]; j++) {
                        const float v = nzv[j];
                        for (int ki = 0; ki < g->k; ki++) {
                                const size_t xo = (size_t)pix[p] + (size_t)ki * g->PW * g->C;
                                const size_t wo = (size_t)nzf[j] * g->K + (size_t)ki * row;
                                const float *restrict xr = xt + xo;
                                float *restrict d = dw + wo;
                                for (int r = 0; r < row; r++)
                                        d[r] += v * xr[r];
                                if (!dxt)
                                        continue;
                                const float *restrict wr = w + wo;
                                float *restrict o = dxt + xo;
                                for (int r = 0; r < row; r++)
                                        o[r] += v * wr[r];
                        }
                }
        }
}

size_t sc_nn_conv_sparse_backward(sc_layer_t *l, const float *x, size_t cs, size_t bs,
                                  const float *dy, float *dx, int B, int nbc, float *scratch)
{
        const sparse_geo_t g = geo_of(l);
        const sparse_ws_t ws = ws_of(&g, nbc);
        const size_t ohw = (size_t)g.OH * g.OW, ld = (size_t)B * ohw;
        const size_t img = (size_t)g.PH * g.PW * g.C, kk = (size_t)g.k * g.k;
        float *xt = scratch + ws.xt, *dxt = scratch + ws.dxt, *wt = scratch + ws.w;
        float *dwt = scratch + ws.dw, *dyt = scratch + ws.dyt, *nzv = scratch + ws.nzv;
        int32_t *nzf = (int32_t *)(scratch + ws.nzf), *ptr = (int32_t *)(scratch + ws.ptr);
        int32_t *pix = (int32_t *)(scratch + ws.pix);
        size_t nnz = 0;

        /* W (F, C, k, k) -> W' (F, k, k, C); dW' starts at zero. */
        for (int f = 0; f < g.F; f++)
                sc_nn_transpose(l->w + f * g.K, g.C, (int)kk, kk, wt + f * g.K, (size_t)g.C);
        memset(dwt, 0, sizeof(float) * g.F * g.K);
        for (int b0 = 0; b0 < B; b0 += nbc) {
                const int nb = B - b0 < nbc ? B - b0 : nbc, n = nb * (int)ohw;
                /* xT: the chunk's samples channel-last with a zero border. */
                memset(xt, 0, sizeof(float) * nb * img);
                for (int bb = 0; bb < nb; bb++)
                        for (int iy = 0; iy < g.H; iy++)
                                sc_nn_transpose(
                                    x + (size_t)(b0 + bb) * bs + (size_t)iy * g.W, g.C, g.W, cs,
                                    xt + bb * img + ((size_t)(iy + g.pad) * g.PW + g.pad) * g.C,
                                    (size_t)g.C);
                if (dx)
                        memset(dxt, 0, sizeof(float) * nb * img);
                for (int p = 0, bb = 0; bb < nb; bb++)
                        for (int oy = 0; oy < g.OH; oy++)
                                for (int ox = 0; ox < g.OW; ox++)
                                        pix[p++] = (int32_t)(bb * img + ((size_t)oy * g.s * g.PW +
                                                                         (size_t)ox * g.s) *
                                                                            g.C);
                sc_nn_transpose(dy + (size_t)b0 * ohw, g.F, n, ld, dyt, (size_t)g.F);
                nnz += build_lists(dyt, n, g.F, ptr, nzf, nzv);
#ifdef SC_NN_X86
                if (sc_nn_avx512())
                        sparse_products(&g, n, ptr, nzf, nzv, pix, xt, wt, dwt, dx ? dxt : NULL);
                else
#endif
                        sparse_products_c(&g, n, ptr, nzf, nzv, pix, xt, wt, dwt, dx ? dxt : NULL);
                if (!dx)
                        continue;
                /* dx: the interior of dxT, back to channel planes. */
                for (int bb = 0; bb < nb; bb++)
                        for (int iy = 0; iy < g.H; iy++)
                                sc_nn_transpose(dxt + bb * img +
                                                    ((size_t)(iy + g.pad) * g.PW + g.pad) * g.C,
                                                g.W, g.C, (size_t)g.C,
                                                dx + (size_t)(b0 + bb) * bs + (size_t)iy * g.W, cs);
        }
        /* dW' (F, k, k, C) -> dW (F, C, k, k). */
        for (int f = 0; f < g.F; f++)
                sc_nn_transpose(dwt + f * g.K, (int)kk, g.C, (size_t)g.C, l->dw + f * g.K, kk);
        return nnz;
}
