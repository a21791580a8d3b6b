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

#ifdef SC_NN_X86
/* pool2_plane over all planes with AVX-512: each output row in masked
 * chunks of 16, even / odd input columns split by permutes. */
SC_NN_AVX512 static void pool2_avx512(const float *x, size_t planes, int H, int W, int OH, int OW,
                                      float *y, int32_t *arg)
{
        const __m512i ev =
            _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        const __m512i od = _mm512_add_epi32(ev, _mm512_set1_epi32(1));
        const __m512i one = _mm512_set1_epi32(1), wv = _mm512_set1_epi32(W);

        for (size_t p = 0; p < planes; p++) {
                const float *xp = x + p * H * W;
                float *yp = y + p * OH * OW;
                int32_t *ap = arg + p * OH * OW;
                for (int oy = 0; oy < OH; oy++) {
                        const float *r0 = xp + (size_t)2 * oy * W, *r1 = r0 + W;
                        for (int j = 0; j < OW; j += 16) {
                                const int n2 = 2 * (OW - j < 16 ? OW - j : 16);
                                const __mmask16 mlo = sc_nn_lanes(0, n2);
                                const __mmask16 mhi = sc_nn_lanes(0, n2 - 16);
                                const __mmask16 m = sc_nn_lanes(0, n2 / 2);
                                __m512 lo = _mm512_maskz_loadu_ps(mlo, r0 + 2 * j);
                                __m512 hi = _mm512_maskz_loadu_ps(mhi, r0 + 2 * j + 16);
                                __m512 a = _mm512_permutex2var_ps(lo, ev, hi);
                                __m512 b = _mm512_permutex2var_ps(lo, od, hi);
                                lo = _mm512_maskz_loadu_ps(mlo, r1 + 2 * j);
                                hi = _mm512_maskz_loadu_ps(mhi, r1 + 2 * j + 16);
                                __m512 c = _mm512_permutex2var_ps(lo, ev, hi);
                                __m512 d = _mm512_permutex2var_ps(lo, od, hi);
                                __m512i ia =
                                    _mm512_add_epi32(_mm512_set1_epi32(2 * oy * W + 2 * j), ev);
                                __m512i ic = _mm512_add_epi32(ia, wv);
                                __mmask16 kb = _mm512_cmp_ps_mask(b, a, _CMP_GT_OQ);
                                __mmask16 kd = _mm512_cmp_ps_mask(d, c, _CMP_GT_OQ);
                                __m512 m1 = _mm512_mask_blend_ps(kb, a, b);
                                __m512 m2 = _mm512_mask_blend_ps(kd, c, d);
                                __m512i i1 = _mm512_mask_add_epi32(ia, kb, ia, one);
                                __m512i i2 = _mm512_mask_add_epi32(ic, kd, ic, one);
                                __mmask16 k2 = _mm512_cmp_ps_mask(m2, m1, _CMP_GT_OQ);
                                _mm512_mask_storeu_ps(yp + oy * OW + j, m,
                                                      _mm512_mask_blend_ps(k2, m1, m2));
                                _mm512_mask_storeu_epi32(ap + oy * OW + j, m,
                                                         _mm512_mask_blend_epi32(k2, i1, i2));
                        }
                }
        }
}
#endif

#ifdef SC_NN_X86
SC_NN_AVX512 static void pool2_bwd_avx512(const float *dy, const float *y, const int32_t *arg,
                                          size_t planes, int H, int W, int OH, int OW, int relu,
                                          float *dx);
#endif

/* The 2x2 stride-2 passes over planes [p0, p0 + n) of a batch, and their
 * split across the model's threads (planes are independent). */
typedef struct pool2_job {
        const sc_layer_t *l;
        const float *x, *y, *dy;
        float *out;
        int32_t *arg;
        size_t planes, step;
        int bwd;
} pool2_job_t;

static void pool2_part(void *arg, int i)
{
        const pool2_job_t *j = arg;
        const sc_layer_t *l = j->l;
        const int H = l->in.h, W = l->in.w, OH = l->out.h, OW = l->out.w;
        const size_t ihw = (size_t)H * W, ohw = (size_t)OH * OW;
        const size_t p0 = (size_t)i * j->step;
        const size_t n = j->planes - p0 < j->step ? j->planes - p0 : j->step;

#ifdef SC_NN_X86
        if (sc_nn_avx512()) {
                if (j->bwd)
                        pool2_bwd_avx512(j->dy + p0 * ohw, j->y + p0 * ohw, j->arg + p0 * ohw, n, H,
                                         W, OH, OW, l->relu_bwd, j->out + p0 * ihw);
                else
                        pool2_avx512(j->x + p0 * ihw, n, H, W, OH, OW, j->out + p0 * ohw,
                                     j->arg + p0 * ohw);
                return;
        }
#endif
        for (size_t p = p0; p < p0 + n; p++)
                pool2_plane(j->x + p * ihw, W, OH, OW, j->out + p * ohw, j->arg + p * ohw);
}

/* Passes over at least this many input floats are split across threads. */
#define SC_POOL2_SPLIT_FLOATS (1 << 15)

static void pool2_run(pool2_job_t *j)
{
        const int threads = sc_nn_parallel_threads();
        const size_t ihw = (size_t)j->l->in.h * j->l->in.w;
        int parts = 1;

        if (threads > 1 && j->planes * ihw >= SC_POOL2_SPLIT_FLOATS)
                parts = (size_t)threads < j->planes ? threads : (int)j->planes;
        j->step = (j->planes + (size_t)parts - 1) / (size_t)parts;
        sc_nn_parallel((int)((j->planes + j->step - 1) / j->step), pool2_part, j);
}

static void pool_forward(sc_layer_t *l, const float *x, float *y, int B, int train, sc_rng_t *rng)
{
        const int H = l->in.h, W = l->in.w, OH = l->out.h, OW = l->out.w;
        const int k = l->spec.kernel, s = l->spec.stride;
        const size_t planes = (size_t)B * l->in.c, ihw = (size_t)H * W, ohw = (size_t)OH * OW;
        int32_t *arg = (int32_t *)l->ws;

        if (k == 2 && s == 2) {
                pool2_job_t j = {.l = l, .x = x, .out = y, .arg = arg, .planes = planes};
                pool2_run(&j);
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

#ifdef SC_NN_X86
/* Backward of pool2_avx512: every 2x2 window is written whole (the gradient
 * at its argmax, zeros elsewhere), so dx needs no clearing first. */
SC_NN_AVX512 static void pool2_bwd_avx512(const float *dy, const float *y, const int32_t *arg,
                                          size_t planes, int H, int W, int OH, int OW, int relu,
                                          float *dx)
{
        const __m512i ev =
            _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        const __m512i il_lo =
            _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
        const __m512i il_hi = _mm512_add_epi32(il_lo, _mm512_set1_epi32(8));
        const __m512i one = _mm512_set1_epi32(1), wv = _mm512_set1_epi32(W);

        for (size_t p = 0; p < planes; p++) {
                float *dp = dx + p * H * W;
                const float *gp = dy + p * OH * OW, *yp = y + p * OH * OW;
                const int32_t *ap = arg + p * OH * OW;
                for (int oy = 0; oy < OH; oy++) {
                        float *r0 = dp + (size_t)2 * oy * W, *r1 = r0 + W;
                        for (int j = 0; j < OW; j += 16) {
                                const int n = OW - j < 16 ? OW - j : 16;
                                const __mmask16 m = sc_nn_lanes(0, n);
                                const __mmask16 mlo = sc_nn_lanes(0, 2 * n);
                                const __mmask16 mhi = sc_nn_lanes(0, 2 * n - 16);
                                const size_t o = (size_t)oy * OW + j;
                                __m512 g = _mm512_maskz_loadu_ps(m, gp + o);
                                if (relu)
                                        g = _mm512_maskz_mov_ps(
                                            _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(m, yp + o),
                                                               _mm512_setzero_ps(), _CMP_GT_OQ),
                                            g);
                                __m512i idx = _mm512_maskz_loadu_epi32(m, ap + o);
                                __m512i ia =
                                    _mm512_add_epi32(_mm512_set1_epi32(2 * oy * W + 2 * j), ev);
                                __m512i ic = _mm512_add_epi32(ia, wv);
                                __m512 va =
                                    _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(idx, ia), g);
                                __m512 vb = _mm512_maskz_mov_ps(
                                    _mm512_cmpeq_epi32_mask(idx, _mm512_add_epi32(ia, one)), g);
                                __m512 vc =
                                    _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(idx, ic), g);
                                __m512 vd = _mm512_maskz_mov_ps(
                                    _mm512_cmpeq_epi32_mask(idx, _mm512_add_epi32(ic, one)), g);
                                _mm512_mask_storeu_ps(r0 + 2 * j, mlo,
                                                      _mm512_permutex2var_ps(va, il_lo, vb));
                                _mm512_mask_storeu_ps(r0 + 2 * j + 16, mhi,
                                                      _mm512_permutex2var_ps(va, il_hi, vb));
                                _mm512_mask_storeu_ps(r1 + 2 * j, mlo,
                                                      _mm512_permutex2var_ps(vc, il_lo, vd));
                                _mm512_mask_storeu_ps(r1 + 2 * j + 16, mhi,
                                                      _mm512_permutex2var_ps(vc, il_hi, vd));
                        }
                        if (W > 2 * OW) { /* odd width: the last column is in no window */
                                r0[W - 1] = 0.0f;
                                r1[W - 1] = 0.0f;
                        }
                }
                if (H > 2 * OH) /* odd height: the last row is in no window */
                        memset(dp + (size_t)(H - 1) * W, 0, sizeof(float) * W);
        }
}
#endif

static void pool_backward(sc_layer_t *l, const float *x, const float *y, const float *dy, float *dx,
                          int B)
{
        const size_t planes = (size_t)B * l->in.c;
        const size_t ihw = (size_t)l->in.h * l->in.w, ohw = (size_t)l->out.h * l->out.w;
        const int32_t *arg = (const int32_t *)l->ws;

#ifdef SC_NN_X86
        if (l->spec.kernel == 2 && l->spec.stride == 2 && sc_nn_avx512()) {
                pool2_job_t j = {.l = l,
                                 .y = y,
                                 .dy = dy,
                                 .out = dx,
                                 .arg = (int32_t *)arg,
                                 .planes = planes,
                                 .bwd = 1};
                pool2_run(&j);
                return;
        }
#endif
        memset(dx, 0, sizeof(float) * planes * ihw);
        for (size_t p = 0; p < planes; p++) {
                float *dp = dx + p * ihw;
                const float *gp = dy + p * ohw, *yp = y + p * ohw;
                const int32_t *ap = arg + p * ohw;
                if (l->relu_bwd) {
                        for (size_t i = 0; i < ohw; i++)
                                dp[ap[i]] += yp[i] > 0.0f ? gp[i] : 0.0f;
                } else {
                        for (size_t i = 0; i < ohw; i++)
                                dp[ap[i]] += gp[i];
                }
        }
}

const sc_layer_ops_t sc_nn_maxpool2d_ops = {
    .name = "maxpool2d",
    .setup = pool_setup,
    .workspace = pool_workspace,
    .forward = pool_forward,
    .backward = pool_backward,
};
