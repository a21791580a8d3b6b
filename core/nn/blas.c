/* blas.c — the only file that calls BLAS: sgemm, the thread count, and a
 * naive gemm with the same contract for tests. */
#include <cblas.h>

#include "nn_impl.h"

void sc_nn_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc)
{
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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
        openblas_set_num_threads(threads < 1 ? 1 : threads);
}
