/* sc_nn.h — models built from a declarative spec: layers, losses, one
 * contiguous parameter buffer and a mirroring gradient buffer with per-tensor
 * views. Not thread-safe per model; distinct models may be used concurrently.
 *
 * Layout conventions: a batch is row-major (B, C, H, W) float; a flat vector
 * of n features has shape (n, 1, 1). Dense weight is (out, in), conv2d weight
 * is (filters, in_c, k, k); each parametric layer has weight then bias. */
#ifndef SC_NN_H
#define SC_NN_H

#include <stddef.h>
#include <stdint.h>

#include "sc_err.h"
#include "sc_rng.h"

typedef struct sc_shape {
        int c, h, w;
} sc_shape_t;

static inline size_t sc_shape_numel(sc_shape_t s)
{
        return (size_t)s.c * (size_t)s.h * (size_t)s.w;
}

typedef enum sc_layer_kind {
        SC_LAYER_DENSE,
        SC_LAYER_CONV2D,
        SC_LAYER_MAXPOOL2D,
        SC_LAYER_RELU,
        SC_LAYER_TANH,
        SC_LAYER_SIGMOID,
        SC_LAYER_DROPOUT,
        SC_LAYER_FLATTEN,
        SC_LAYER_BATCHNORM,
        SC_LAYER_STANDARDIZE,
        SC_LAYER__END
} sc_layer_kind_t;

typedef enum sc_init_kind {
        SC_INIT_AUTO,   /* He when the next layer is relu, Xavier otherwise */
        SC_INIT_HE,     /* normal, sd sqrt(2 / fan_in) */
        SC_INIT_XAVIER, /* uniform, limit sqrt(6 / (fan_in + fan_out)) */
} sc_init_kind_t;

/* Dense takes a flat input (c, 1, 1): put a flatten layer after conv2d /
 * maxpool2d. A relu right after dense or conv2d is fused into it. */
typedef struct sc_layer_spec {
        sc_layer_kind_t kind;
        int units;   /* dense: output features */
        int filters; /* conv2d: output channels */
        int kernel;  /* conv2d: square kernel side; maxpool2d: window side */
        int stride;  /* conv2d (default 1), maxpool2d (default = kernel); 0 = default */
        int padding; /* conv2d: zero padding on each side */
        float rate;  /* dropout: drop probability in [0, 1) */

        /* batchnorm: running-statistics momentum in (0, 1] (0 = 0.1) and
         * variance epsilon > 0 (0 = 1e-5) */
        float momentum, eps;
        /* standardize: samples whose statistics are accumulated before they
         * are frozen (0 = 10000), and the weight of each later batch's
         * (0 = frozen, in [0, 1)); eps as batchnorm's */
        int warmup;
        float decay;
        sc_init_kind_t init;
} sc_layer_spec_t;

typedef enum sc_loss_kind {
        SC_LOSS_SOFTMAX_XENT, /* targets are class indices */
        SC_LOSS_MSE,          /* targets are (B, out numel) floats; loss = mean over
                                 batch of 0.5 * sum (y - t)^2 */
} sc_loss_kind_t;

#define SC_MODEL_MAX_LAYERS 64
/* Most parameters a model may have: updates index them with 32 bits. */
#define SC_MODEL_MAX_PARAMS ((size_t)UINT32_MAX)

typedef struct sc_model_spec {
        sc_shape_t input;
        int n_layers;
        sc_layer_spec_t layers[SC_MODEL_MAX_LAYERS];
        sc_loss_kind_t loss;
} sc_model_spec_t;

/* One parameter tensor inside the model's contiguous buffers. */
typedef struct sc_tensor_view {
        char name[32]; /* "layers.2.weight" */
        int layer;     /* index into spec.layers */
        size_t offset; /* in floats, into params / grads */
        size_t numel;
} sc_tensor_view_t;

typedef struct sc_model_s sc_model_t;

/* Builds a model from spec and checks every shape. Errors name the layer as
 * "layers[i] (kind): ..." so a config loader can prefix its JSON path. The
 * parameters are zero until sc_model_init(). On success *modelp owns a copy
 * of spec. */
sc_err_t sc_model_new(sc_model_t **modelp, const sc_model_spec_t *spec, char *errstr,
                      size_t errstr_size);
/* Accepts NULL. */
void sc_model_destroy(sc_model_t *model);

const sc_model_spec_t *sc_model_spec(const sc_model_t *model);
sc_shape_t sc_model_output_shape(const sc_model_t *model);
/* Output shape of layer i (0 <= i < n_layers). */
sc_shape_t sc_model_layer_shape(const sc_model_t *model, int i);

/* Layer i's spec with defaults resolved (stride, batchnorm momentum and
 * eps), as the model runs it; NULL when i is out of range. */
const sc_layer_spec_t *sc_model_layer_spec(const sc_model_t *model, int i);

/* The parameter and gradient buffers: each (nparams) floats, same layout. */
size_t sc_model_nparams(const sc_model_t *model);
float *sc_model_params(sc_model_t *model);
float *sc_model_grads(sc_model_t *model);
int sc_model_ntensors(const sc_model_t *model);
const sc_tensor_view_t *sc_model_tensor(const sc_model_t *model, int i);
/* Non-trainable state (batchnorm running mean and variance, per layer in
 * order): (nstate) floats, 0 when no layer has any. Training steps update
 * it, evaluation reads it; it is not part of params (not averaged or sent;
 * checkpoints carry it in a section of their own). sc_model_new and sc_model_init set it to its
 * initial value (mean 0, variance 1). */
size_t sc_model_nstate(const sc_model_t *model);
float *sc_model_state(sc_model_t *model);
/* Sets the non-trainable state to its initial value (parameters untouched). */
void sc_model_reset_state(sc_model_t *model);
/* Multiply-adds of one sample's forward pass (for FLOP/s figures). */
double sc_model_forward_flops(const sc_model_t *model);
/* Multiply-adds the products of the last sc_model_train_batch call did
 * (dense and conv2d: forward, weight and input gradients), where conv2d's
 * sparse backward pass counts only the non-zeros of its output gradient;
 * 0 before the first call. sc_model_forward_flops counts them dense. */
double sc_model_last_step_macs(const sc_model_t *model);

/* Initializes weights (He/Xavier per layer spec; batchnorm gamma 1) from rng,
 * zeroes biases and resets the non-trainable state. */
void sc_model_init(sc_model_t *model, sc_rng_t *rng);

/* Forward, loss and backward on one batch of B samples. x is (B, input
 * numel). For SC_LOSS_SOFTMAX_XENT, labels is (B) class indices and targets
 * is NULL; for SC_LOSS_MSE, targets is (B, output numel) and labels NULL.
 * Overwrites the gradient buffer with the mean gradient over the batch.
 * Returns the mean loss; *correct (if not NULL) receives the number of
 * argmax hits (xent only). rng drives dropout (NULL: dropout passes
 * everything through). Activation memory grows to the largest B seen and is
 * reused; a step does no allocation otherwise. Returns NAN (gradients then
 * unspecified) if x or the labels/targets the loss needs are NULL, B < 1, a
 * label is outside [0, classes), or memory for B cannot be had. */
float sc_model_train_batch(sc_model_t *model, const float *x, const int32_t *labels,
                           const float *targets, int B, sc_rng_t *rng, int *correct);

/* Sizes the activation memory for batches of up to B samples (at the
 * current thread count) now, so steps up to B allocate nothing;
 * SC_ERR_NOMEM if it cannot be had (the model is unchanged). */
sc_err_t sc_model_reserve(sc_model_t *model, int B);

/* sc_model_train_batch that also writes the forward pass's output, before
 * the update, to out (B, output numel): the logits the batch was trained on. */
float sc_model_train_batch_out(sc_model_t *model, const float *x, const int32_t *labels,
                               const float *targets, int B, sc_rng_t *rng, int *correct,
                               float *out);
/* 1 when the training forward pass computes what inference does (no
 * dropout, no batchnorm): the outputs of sc_model_train_batch_out are then
 * the model's predictions. */
int sc_model_train_is_eval(const sc_model_t *model);

/* Inference (dropout off): like train_batch without the backward pass and
 * without touching gradients. out (if not NULL) receives (B, output numel)
 * logits/outputs; labels/targets may be NULL (then the loss returned is 0). */
float sc_model_eval_batch(sc_model_t *model, const float *x, const int32_t *labels,
                          const float *targets, int B, int *correct, float *out);
/* Evaluates n labelled samples (x: n rows of the input's numel) in passes
 * of at most chunk: *loss (if not NULL) the mean loss (0 for n = 0),
 * *correct (if not NULL) the samples classified right. The loss sums the
 * passes' means weighted by their sizes, in order. SC_ERR_NOMEM if a pass
 * cannot allocate (*loss is then NaN). */
sc_err_t sc_model_eval_set(sc_model_t *model, const float *x, const int32_t *y, size_t n, int chunk,
                           double *loss, size_t *correct);

/* Class probabilities of one sample's n >= 1 logits z: p = softmax(z),
 * stabilized by the largest logit, summed in double. p may equal z, or be
 * NULL. Returns the index of the first largest logit (the predicted class,
 * as evaluation counts hits). */
int sc_nn_softmax(const float *z, int n, float *p);

/* The variance a standardize layer divides by for a feature of learned
 * mean and variance: var, or 1 when the feature did not vary (var <= 1e-8
 * max(1, mean^2)). Its ONNX export writes the same. */
float sc_nn_standardize_var(float mean, float var);

/* Recomputes the non-trainable state from data ("recalibration"): resets
 * it, then runs the forward pass in training mode (dropout off) over the
 * floor(n / B) full batches of x (n, input numel; one batch of n if n < B),
 * each batchnorm layer's running mean and variance becoming the mean of its
 * batch values over those batches; a standardize layer's statistics are
 * the input's scale, learned from the stream, and are kept as they are.
 * Parameters and gradients are untouched.
 * For a model whose statistics were not kept, e.g. one rebuilt from shared
 * parameters. SC_OK also when the model has no state (nothing done);
 * SC_ERR_INVAL (NULL, n = 0, B < 1), SC_ERR_NOMEM. */
sc_err_t sc_model_recalibrate(sc_model_t *model, const float *x, size_t n, int B);

/* Compute threads of every model in this process (>= 1; values below 1
 * mean 1). With more than one, each model starts threads - 1 worker threads
 * on its next step and splits that step's large matrix products across
 * them (OpenBLAS itself runs on one thread); small products run on the
 * calling thread. The workers are joined when the model is destroyed or its
 * next step finds the count back at 1. Results are identical run to run for
 * a given count and agree with 1 thread to float rounding. */
void sc_nn_set_threads(int threads);

const char *sc_layer_kind_name(sc_layer_kind_t kind);

/* What the floating point of this process runs on, for reports: results are
 * identical run to run on one processor but differ in their last digits
 * between processors (OpenBLAS picks its kernels per processor, the nn
 * kernels their SIMD width). sc_nn_kernels: the SIMD width of the nn
 * kernels chosen at load time ("avx512f", "avx2", "x86-64", or what the
 * build was fixed to); sc_nn_blas_core: OpenBLAS's kernel family for this
 * processor (e.g. "Haswell", "Zen", "SkylakeX", "Cooperlake"; set by
 * OPENBLAS_CORETYPE where given); sc_nn_blas_config: OpenBLAS's build line
 * (version, DYNAMIC_ARCH, ...). Static strings. */
const char *sc_nn_kernels(void);
const char *sc_nn_blas_core(void);
const char *sc_nn_blas_config(void);

#endif
