/* blas.c — the gemm layer of core/nn: cblas_sgemm for the general case, an
 * AVX-512 broadcast kernel for the skinny products of small batches (where
 * sgemm's packing and C zeroing dominate), the split of one product across
 * the threads of the calling model's pool, the thread count, and a naive
 * gemm with the same contract for tests. */
#include <cblas.h>
#include <stdint.h>

#include "nn_impl.h"

static int sc_nn_threads = 0; /* 0 = never set: OpenBLAS's own default */

int sc_nn_threads_get(void)
{
        return sc_nn_threads > 1 ? sc_nn_threads : 1;
}

int sc_nn_avx512(void)
{
#ifdef SC_NN_X86
        static int avx512 = -1;
        if (avx512 < 0)
                avx512 = __builtin_cpu_supports("avx512f") ? 1 : 0;
        return avx512;
#else
        return 0;
#endif
}

const char *sc_nn_kernels(void)
{
#ifdef SC_NN_X86
        if (sc_nn_avx512())
                return "avx512f";
        if (__builtin_cpu_supports("avx2"))
                return "avx2";
        return "x86-64";
#elif defined(__AVX512F__)
        return "avx512f (built for it, no runtime choice)";
#elif defined(__AVX2__)
        return "avx2 (built for it, no runtime choice)";
#else
        return "baseline (no runtime choice)";
#endif
}

const char *sc_nn_blas_core(void)
{
        const char *c = openblas_get_corename();
        return c ? c : "unknown";
}

const char *sc_nn_blas_config(void)
{
        const char *c = openblas_get_config();
        return c ? c : "unknown";
}

#ifdef SC_NN_X86
#define SC_NN_HAVE_SKINNY 1

#define SKINNY __attribute__((target("avx512f"), always_inline)) static inline

/* C[MB rows, NV*16 cols] (=|+= beta C) from A(m, k) = A[m*sm + k*sk] and
 * row-major B; the last vector of a row is masked by last. */
SKINNY void skinny_block(const int MB, const int NV, int K, const float *A, size_t sm, size_t sk,
                         const float *B, int ldb, float beta, float *C, int ldc, __mmask16 last)
{
        __m512 acc[16][4];

#pragma GCC unroll 16
        for (int r = 0; r < MB; r++)
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++)
                        acc[r][v] = _mm512_setzero_ps();
        for (int k = 0; k < K; k++) {
                __m512 b[4];
                const float *bk = B + (size_t)k * ldb;
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++)
                        b[v] = v == NV - 1 ? _mm512_maskz_loadu_ps(last, bk + 16 * v)
                                           : _mm512_loadu_ps(bk + 16 * v);
                const float *ak = A + (size_t)k * sk;
#pragma GCC unroll 16
                for (int r = 0; r < MB; r++) {
                        __m512 a = _mm512_set1_ps(ak[(size_t)r * sm]);
#pragma GCC unroll 4
                        for (int v = 0; v < NV; v++)
                                acc[r][v] = _mm512_fmadd_ps(a, b[v], acc[r][v]);
                }
        }
#pragma GCC unroll 16
        for (int r = 0; r < MB; r++) {
                float *c = C + (size_t)r * ldc;
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) {
                        __mmask16 mk = v == NV - 1 ? last : (__mmask16)0xffff;
                        __m512 x = acc[r][v];
                        if (beta != 0.0f)
                                x = _mm512_fmadd_ps(_mm512_set1_ps(beta),
                                                    _mm512_maskz_loadu_ps(mk, c + 16 * v), x);
                        _mm512_mask_storeu_ps(c + 16 * v, mk, x);
                }
        }
}

/* All rows of one column panel of NV vectors: blocks of 16 / NV rows, then 4, then 1. */
SKINNY void skinny_panel(const int NV, int M, int K, const float *A, size_t sm, size_t sk,
                         const float *B, int ldb, float beta, float *C, int ldc, __mmask16 last)
{
        const int MB = 16 / NV;
        int m = 0;

        for (; m + MB <= M; m += MB)
                skinny_block(MB, NV, K, A + m * sm, sm, sk, B, ldb, beta, C + (size_t)m * ldc, ldc,
                             last);
        for (; m + 4 <= M; m += 4)
                skinny_block(4, NV, K, A + m * sm, sm, sk, B, ldb, beta, C + (size_t)m * ldc, ldc,
                             last);
        for (; m < M; m++)
                skinny_block(1, NV, K, A + m * sm, sm, sk, B, ldb, beta, C + (size_t)m * ldc, ldc,
                             last);
}

__attribute__((target("avx512f"))) static void skinny_gemm(int M, int N, int K, const float *A,
                                                           size_t sm, size_t sk, const float *B,
                                                           int ldb, float beta, float *C, int ldc)
{
        const int nv_max = N >= 64 ? 4 : (N + 15) / 16;

        for (int n = 0; n < N;) {
                int left = N - n, nv = (left + 15) / 16;
                if (nv > nv_max)
                        nv = nv_max;
                int cols = left < 16 * nv ? left : 16 * nv;
                int tail = cols - 16 * (nv - 1);
                __mmask16 last = (__mmask16)(tail >= 16 ? 0xffff : (1u << tail) - 1);
                switch (nv) {
                case 1:
                        skinny_panel(1, M, K, A, sm, sk, B + n, ldb, beta, C + n, ldc, last);
                        break;
                case 2:
                        skinny_panel(2, M, K, A, sm, sk, B + n, ldb, beta, C + n, ldc, last);
                        break;
                case 3:
                        skinny_panel(3, M, K, A, sm, sk, B + n, ldb, beta, C + n, ldc, last);
                        break;
                default:
                        skinny_panel(4, M, K, A, sm, sk, B + n, ldb, beta, C + n, ldc, last);
                        break;
                }
                n += cols;
        }
}
#endif

#ifdef SC_NN_HAVE_SKINNY
/* C (M, N) = A (M, K) B (N, K)^T (+ beta C) for a small C and a long K
 * (conv2d weight gradients with few filters and taps): 4x4 blocks of dot
 * products, each accumulated in one vector over K and reduced at the end. */
__attribute__((target("avx512f"))) static void dot_gemm(int M, int N, int K, const float *A,
                                                        int lda, const float *B, int ldb,
                                                        float beta, float *C, int ldc)
{
        for (int i0 = 0; i0 < M; i0 += 4) {
                for (int j0 = 0; j0 < N; j0 += 4) {
                        const float *a[4], *b[4];
                        __m512 acc[4][4];
                        /* Rows past the edge repeat the last one; never stored. */
                        for (int r = 0; r < 4; r++) {
                                a[r] = A + (size_t)(i0 + r < M ? i0 + r : M - 1) * lda;
                                b[r] = B + (size_t)(j0 + r < N ? j0 + r : N - 1) * ldb;
                                for (int c = 0; c < 4; c++)
                                        acc[r][c] = _mm512_setzero_ps();
                        }
                        for (int k = 0; k < K; k += 16) {
                                const __mmask16 m = sc_nn_lanes(0, K - k);
                                __m512 av[4], bv[4];
                                for (int r = 0; r < 4; r++) {
                                        av[r] = _mm512_maskz_loadu_ps(m, a[r] + k);
                                        bv[r] = _mm512_maskz_loadu_ps(m, b[r] + k);
                                }
                                for (int r = 0; r < 4; r++)
                                        for (int c = 0; c < 4; c++)
                                                acc[r][c] =
                                                    _mm512_fmadd_ps(av[r], bv[c], acc[r][c]);
                        }
                        for (int r = 0; r < 4 && i0 + r < M; r++) {
                                for (int c = 0; c < 4 && j0 + c < N; c++) {
                                        float *o = C + (size_t)(i0 + r) * ldc + j0 + c;
                                        float v = _mm512_reduce_add_ps(acc[r][c]);
                                        *o = beta != 0.0f ? v + beta * *o : v;
                                }
                        }
                }
        }
}
#endif

int sc_nn_gemm_skinny(int M, int N, int K)
{
#ifdef SC_NN_HAVE_SKINNY
        if (!sc_nn_avx512())
                return 0;
        /* Small products and those with a short side. Every kernel runs on
         * one thread (a pool splits the product into such parts). */
        return (double)M * N * K < (1 << 19) || N <= SC_NN_SKINNY_SIDE || K <= SC_NN_SKINNY_SIDE ||
               (M <= 32 && K <= 512);
#else
        return 0;
#endif
}

enum { GEMM_SGEMM, GEMM_DOT, GEMM_SKINNY };

/* The kernel for a product of this shape (the whole product: every part of
 * a split one runs the same kernel). */
static int gemm_kind(int ta, int tb, int M, int N, int K, float alpha)
{
#ifdef SC_NN_HAVE_SKINNY
        if (tb && !ta && alpha == 1.0f && M * N <= 1024 && K >= 256 && sc_nn_avx512())
                return GEMM_DOT;
        if (!tb && alpha == 1.0f && sc_nn_gemm_skinny(M, N, K))
                return GEMM_SKINNY;
#endif
        return GEMM_SGEMM;
}

static void gemm_run(int kind, int ta, int tb, int M, int N, int K, float alpha, const float *A,
                     int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
#ifdef SC_NN_HAVE_SKINNY
        if (kind == GEMM_DOT) {
                dot_gemm(M, N, K, A, lda, B, ldb, beta, C, ldc);
                return;
        }
        if (kind == GEMM_SKINNY) {
                skinny_gemm(M, N, K, A, ta ? 1 : (size_t)lda, ta ? (size_t)lda : 1, B, ldb, beta, C,
                            ldc);
                return;
        }
#endif
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* Products of fewer multiply-adds than this run on the calling thread;
 * larger ones are split into up to this many parts per thread. */
#ifndef SC_NN_SPLIT_MIN
#define SC_NN_SPLIT_MIN (1 << 17)
#endif
#ifndef SC_NN_SPLIT_PARTS
#define SC_NN_SPLIT_PARTS 1
#endif

/* One product split into parts of `step` rows (by_rows) or columns of C. */
typedef struct gemm_split {
        int kind, ta, tb, M, N, K;
        float alpha, beta;
        const float *A, *B;
        float *C;
        int lda, ldb, ldc;
        int by_rows, step;
} gemm_split_t;

static void gemm_part(void *arg, int i)
{
        const gemm_split_t *g = arg;
        const int lo = i * g->step;

        if (g->by_rows) {
                int m = g->M - lo < g->step ? g->M - lo : g->step;
                const float *A = g->ta ? g->A + lo : g->A + (size_t)lo * g->lda;
                gemm_run(g->kind, g->ta, g->tb, m, g->N, g->K, g->alpha, A, g->lda, g->B, g->ldb,
                         g->beta, g->C + (size_t)lo * g->ldc, g->ldc);
        } else {
                int n = g->N - lo < g->step ? g->N - lo : g->step;
                const float *B = g->tb ? g->B + (size_t)lo * g->ldb : g->B + lo;
                gemm_run(g->kind, g->ta, g->tb, g->M, n, g->K, g->alpha, g->A, g->lda, B, g->ldb,
                         g->beta, g->C + lo, g->ldc);
        }
}

void sc_nn_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc)
{
        const int kind = gemm_kind(ta, tb, M, N, K, alpha);
        const int threads = sc_nn_parallel_threads();

        if (threads > 1 && (double)M * N * K >= SC_NN_SPLIT_MIN) {
                /* Split the longer side of C into one block per thread, on
                 * whole vectors (and whole 64-column panels of the skinny
                 * kernel). */
                gemm_split_t g = {kind, ta, tb, M,   N,   K,   alpha,  beta,
                                  A,    B,  C,  lda, ldb, ldc, M >= N, 0};

                const int len = g.by_rows ? M : N;
                const int unit = !g.by_rows && kind == GEMM_SKINNY ? 64 : 16;
                int units = (len + unit - 1) / unit;
                if (units >= 2) {
                        int parts = units < threads * SC_NN_SPLIT_PARTS
                                        ? units
                                        : threads * SC_NN_SPLIT_PARTS;
                        g.step = (units + parts - 1) / parts * unit;
                        parts = (len + g.step - 1) / g.step;
                        sc_nn_parallel(parts, gemm_part, &g);
                        return;
                }
        }
        gemm_run(kind, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void sc_nn_gemm_ref(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                    const float *B, int ldb, float beta, float *C, int ldc)
{
        for (int i = 0; i < M; i++) {
                for (int j = 0; j < N; j++) {
                        double s = 0;
                        for (int p = 0; p < K; p++) {
                                float a = ta ? A[(size_t)p * lda + i] : A[(size_t)i * lda + p];
                                float b = tb ? B[(size_t)j * ldb + p] : B[(size_t)p * ldb + j];
                                s += (double)a * b;
                        }
                        float *c = &C[(size_t)i * ldc + j];
                        *c = (float)(alpha * s + (beta == 0.0f ? 0.0 : (double)beta * *c));
                }
        }
}

void sc_nn_set_threads(int threads)
{
        sc_nn_threads = threads < 1 ? 1 : threads;
        /* Each model splits its products across its own pool of threads;
         * OpenBLAS runs single-threaded inside every part. */
        openblas_set_num_threads(1);
}
