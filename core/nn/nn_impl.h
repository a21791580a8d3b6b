/* nn_impl.h — internal structures of core/nn: the layer vtable, the model,
 * the BLAS wrapper and the naive reference kernels used by tests.
 *
 * Activation layouts. The model input is batch-major (B, C, H, W), as the
 * caller hands it in. Dense and conv2d write feature-major outputs
 * (C, B, H, W): each output channel (or feature) is one contiguous run over
 * the whole batch, so a layer is one sgemm over the batch with no transposes.
 * Activations, dropout and maxpool keep their input's layout; flatten turns a
 * feature-major (C, B, H, W) into batch-major (B, C*H*W). Every layer knows
 * the layout of its input (in_fm) and output (out_fm). */
#ifndef SC_NN_IMPL_H
#define SC_NN_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "sc_err.h"
#include "sc_nn.h"
#include "sc_rng.h"

struct sc_layer;

/* Hot elementwise loops get AVX2 / AVX-512 clones picked at load time; the
 * build itself targets baseline x86-64. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(SC_NN_NO_CLONES)
#define SC_NN_SIMD __attribute__((target_clones("avx512f", "avx2", "default")))
/* Kernels written with AVX-512 intrinsics exist; use them when sc_nn_avx512(). */
#define SC_NN_X86 1
#define SC_NN_AVX512 __attribute__((target("avx512f")))
#else
#define SC_NN_SIMD
#endif

/* 1 when the CPU runs AVX-512F (checked once). */
int sc_nn_avx512(void);
/* The thread count given to sc_nn_set_threads (1 if never set). */
int sc_nn_threads_get(void);

/* Compute threads (pool_threads.c). A model owns a pool of threads - 1
 * workers, started on its first step with more than one thread and joined
 * when the model is freed or its next step finds the count changed. During
 * a step the pool is the calling thread's current one, and sc_nn_gemm
 * splits large products across it. Workers only compute; they never touch
 * I/O, clocks or the rng. */
#define SC_NN_POOL_MAX 64
typedef struct sc_nn_pool sc_nn_pool_t;
typedef void (*sc_nn_task_fn)(void *ctx, int part);
/* A pool for threads (>= 2) threads, workers not started yet; NULL if
 * threads < 2 or out of memory (callers then run serially). */
sc_nn_pool_t *sc_nn_pool_new(int threads);
/* Stops and joins the workers. NULL is a no-op. */
void sc_nn_pool_free(sc_nn_pool_t *p);
/* Threads of p including the caller (1 for NULL or when no worker could be
 * started). */
int sc_nn_pool_threads(const sc_nn_pool_t *p);
/* Runs fn(ctx, i) for i in [0, n) on the caller and p's workers (starting
 * them on first use); returns when all parts are done. Each part must write
 * only its own outputs. NULL p runs them in order on the caller. */
void sc_nn_pool_run(sc_nn_pool_t *p, int n, sc_nn_task_fn fn, void *ctx);
/* Parts of jobs run by p's workers (tests: proof that work was shared). */
long sc_nn_pool_worker_parts(const sc_nn_pool_t *p);
/* Jobs p ran on the caller alone because its workers kept missing jobs (a
 * busy machine). */
long sc_nn_pool_serial_jobs(const sc_nn_pool_t *p);
/* Worker threads alive in the process (tests: none leak). */
int sc_nn_pool_live(void);
/* Makes p the calling thread's current pool; returns the previous one. */
sc_nn_pool_t *sc_nn_pool_enter(sc_nn_pool_t *p);
/* Threads of the current pool (1 without one). */
int sc_nn_parallel_threads(void);
/* sc_nn_pool_run on the current pool (parts run with no current pool). */
void sc_nn_parallel(int n, sc_nn_task_fn fn, void *ctx);

#ifdef SC_NN_X86
#include <immintrin.h>
/* Lanes lo <= l < hi of a 16-lane mask (bounds clamped). */
static inline __mmask16 sc_nn_lanes(int lo, int hi)
{
        lo = lo < 0 ? 0 : lo;
        hi = hi > 16 ? 16 : hi;
        if (hi <= lo)
                return 0;
        return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}
#endif

/* One layer kind. Optional slots may be NULL. */
typedef struct sc_layer_ops {
        const char *name;
        /* Checks l->spec against l->in, sets l->out and l->nw / l->nb (weight
         * and bias floats). Messages name no layer: the caller prefixes
         * "layers[i] (kind): ". */
        sc_err_t (*setup)(struct sc_layer *l, char *errstr, size_t errstr_size);
        /* Optional: fills l->w from rng (biases are zeroed by the model). */
        void (*init)(struct sc_layer *l, sc_rng_t *rng, int he);
        /* Optional (layers with l->ns > 0): sets l->state to its initial value. */
        void (*reset_state)(struct sc_layer *l);
        /* Optional: scratch floats the layer needs for a batch of B. */
        size_t (*workspace)(const struct sc_layer *l, int B);
        /* x is l->in over B samples in layout in_fm; y is l->out in out_fm
         * (y == x for layers that run in place). */
        void (*forward)(struct sc_layer *l, const float *x, float *y, int B, int train,
                        sc_rng_t *rng);
        /* Adds nothing: overwrites l->dw / l->db with this batch's gradient
         * and writes dx (NULL when no input gradient is needed). dx may equal
         * dy for in-place layers. */
        void (*backward)(struct sc_layer *l, const float *x, const float *y, const float *dy,
                         float *dx, int B);
        /* Optional: multiply-adds of one sample's forward pass. */
        double (*flops)(const struct sc_layer *l);
} sc_layer_ops_t;

typedef struct sc_layer {
        const sc_layer_ops_t *ops;
        sc_layer_spec_t spec; /* defaults resolved (stride) */
        int index;
        sc_shape_t in, out;
        int in_fm, out_fm;  /* layouts: 1 = feature-major (C, B, H, W) */
        size_t nw, nb;      /* weight and bias floats */
        float *w, *b;       /* views into the model's params */
        float *dw, *db;     /* views into the model's grads */
        size_t ns;          /* non-trainable state floats (batchnorm running statistics) */
        float *state;       /* view into the model's state */
        int fuse_relu;      /* dense/conv2d: apply relu in the forward epilogue */
        int skip_forward;   /* relu fused into the previous layer */
        int skip_backward;  /* relu whose mask the next maxpool2d applies */
        int relu_bwd;       /* maxpool2d: input is relu output; mask dx by y > 0 */
        int inplace_fwd;    /* output aliases the input buffer */
        int inplace_bwd;    /* dx may alias dy */
        float *ws;          /* workspace, (workspace(B)) floats, owned by the model */
        double bwd_macs;    /* dense/conv2d: multiply-adds of the last backward pass */
        int bwd_sparse;     /* conv2d: the last backward pass took the sparse path */
        int cols_kept;      /* conv2d: the last forward pass kept its im2col columns */
        float sparse_below; /* conv2d: dy density under which it does (tests move it) */
} sc_layer_t;

extern const sc_layer_ops_t sc_nn_dense_ops;
extern const sc_layer_ops_t sc_nn_conv2d_ops;
extern const sc_layer_ops_t sc_nn_maxpool2d_ops;
extern const sc_layer_ops_t sc_nn_relu_ops;
extern const sc_layer_ops_t sc_nn_tanh_ops;
extern const sc_layer_ops_t sc_nn_sigmoid_ops;
extern const sc_layer_ops_t sc_nn_dropout_ops;
extern const sc_layer_ops_t sc_nn_flatten_ops;
extern const sc_layer_ops_t sc_nn_batchnorm_ops;
extern const sc_layer_ops_t sc_nn_standardize_ops;

/* Loss on logits (n, B) when fm, else (B, n). Writes dlogits (same layout,
 * already divided by B) when d is not NULL. Returns the mean loss, or NAN if
 * a label is outside [0, n). */
float sc_nn_xent(const float *logits, int fm, int n, int B, const int32_t *labels, float *d,
                 int *correct);
/* MSE on out of shape per sample, feature-major (C, B, H, W) when fm. */
float sc_nn_mse(const float *out, int fm, sc_shape_t shape, int B, const float *targets, float *d);

/* r[i] = r[i] + b, then max(0, .) when relu; over n floats. */
void sc_nn_bias_act(float *r, size_t n, float b, int relu);
/* Sum of n floats (accumulated in 16 lanes). */
float sc_nn_sum(const float *r, size_t n);

/* Fills w (n) with He normal (sd sqrt(2 / fan_in)) when he, else Xavier
 * uniform (limit sqrt(6 / (fan_in + fan_out))). */
void sc_nn_init_weights(float *w, size_t n, int fan_in, int fan_out, int he, sc_rng_t *rng);

/* BLAS, row-major: C (M, N) = alpha * op(A) op(B) + beta * C, where op(A) is
 * (M, K) and op(B) is (K, N); ta / tb transpose the stored A / B. */
void sc_nn_gemm(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                const float *B, int ldb, float beta, float *C, int ldc);
/* Whether sc_nn_gemm runs an untransposed-B product of this size on its own
 * AVX-512 kernel instead of sgemm (small batches: a side <= SKINNY_SIDE).
 * Callers may then prefer to transpose an operand so that tb = 0. */
#define SC_NN_SKINNY_SIDE 64
int sc_nn_gemm_skinny(int M, int N, int K);
/* The same contract in plain loops (reference for tests). */
void sc_nn_gemm_ref(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                    const float *B, int ldb, float beta, float *C, int ldc);

/* Direct convolution on batch-major tensors, for tests. x is (B, C, H, W),
 * w (F, C, k, k), b (F), y (B, F, OH, OW). Backward overwrites dw, db and
 * (if not NULL) dx from dy. */
void sc_nn_conv2d_ref_forward(const float *x, int B, int C, int H, int W, const float *w,
                              const float *b, int F, int k, int stride, int pad, float *y);
void sc_nn_conv2d_ref_backward(const float *x, int B, int C, int H, int W, const float *w, int F,
                               int k, int stride, int pad, const float *dy, float *dw, float *db,
                               float *dx);

/* Im2col of samples [b0, b0 + nb) of x into col (C*k*k, nb*OH*OW); sample
 * b's channel c plane starts at x + c*cs + b*bs. col2im adds col back into
 * x (and may zero entries of col that fall on padding). */
void sc_nn_im2col(const float *x, size_t cs, size_t bs, int b0, int nb, int C, int H, int W, int k,
                  int stride, int pad, int OH, int OW, float *col);
void sc_nn_col2im(float *col, size_t cs, size_t bs, int b0, int nb, int C, int H, int W, int k,
                  int stride, int pad, int OH, int OW, float *x);

/* Sparse backward products of conv2d (sparse.c). */
/* Non-zeros of a (rows, cols) block with row stride ld. */
size_t sc_nn_count_nonzero(const float *a, int rows, int cols, size_t ld);
/* dst (cols, rows) = src (rows, cols) transposed; row strides lds, ldd. */
void sc_nn_transpose(const float *src, int rows, int cols, size_t lds, float *dst, size_t ldd);
/* conv2d's backward pass multiplies only dy's non-zeros when fewer than
 * this fraction of dy is non-zero (the layer's sparse_below, set to this
 * by setup on AVX-512 CPUs and to 0 elsewhere, divided by the BLAS thread
 * count: the sparse path runs on one thread) and a receptive-field row,
 * kernel * channels floats, fills two vectors; sc_nn_conv_use_sparse
 * decides. On one AVX-512 thread, conv2 of the Fashion-MNIST CNN breaks
 * even with sgemm at about 70% non-zeros; the plain-C version of the path
 * (no AVX-512) loses to sgemm already at 5%, so it only serves tests. */
#define SC_NN_CONV_SPARSE_DENSITY 0.5
int sc_nn_conv_use_sparse(const sc_layer_t *l, size_t nnz, size_t total);
/* Scratch floats of sc_nn_conv_sparse_backward for chunks of nb samples. */
size_t sc_nn_conv_sparse_scratch(const sc_layer_t *l, int nb);
/* conv2d's backward products from dy's non-zeros only (x, dy, dx as in
 * conv2d's backward; cs / bs: x's channel and sample strides, dx's too):
 * overwrites l->dw and, unless dx is NULL, dx. Works in chunks of nbc
 * samples. Returns the number of non-zeros of dy. */
size_t sc_nn_conv_sparse_backward(sc_layer_t *l, const float *x, size_t cs, size_t bs,
                                  const float *dy, float *dx, int B, int nbc, float *scratch);

#endif
