/* sc_onnx.h — a model as a standard ONNX file (opset SC_ONNX_OPSET, IR
 * version SC_ONNX_IR_VERSION), encoded in memory with the protobuf writer
 * (sc_pb.h). Sans-I/O: connectors/file/onnx_file.c writes the file (sc_onnx_save).
 *
 * The graph (docs/EXPORT.md):
 *   input "input": float (N, n) for a flat model input (n, 1, 1), else
 *     (N, C, H, W); raw feature values, N free.
 *   normalization: Mul by scale / std, then Add -mean / std (the decoder's
 *     x' = (x * scale - mean) / std, computed as the decoder does); a step
 *     that changes nothing (factor 1, offset 0) is left out. Then, for
 *     named fields, Mul by a vector and Add a vector ("input.fields_scale",
 *     "input.fields_shift": each feature's 1 / std and -mean / std).
 *   one node per layer: dense -> Gemm (transB = 1, weight (out, in)),
 *     conv2d -> Conv (weight (F, C, k, k)), maxpool2d -> MaxPool, relu,
 *     tanh, sigmoid -> Relu, Tanh, Sigmoid, flatten -> Flatten (axis 1),
 *     batchnorm -> BatchNormalization with the running statistics,
 *     dropout -> Identity; a Flatten before a dense layer that follows a
 *     4-D value and a Reshape to (N, C, 1, 1) before a conv2d / maxpool2d
 *     that follows a 2-D one.
 *   output: "probabilities" (N, classes) through Softmax (axis 1) for the
 *     softmax_xent loss; "output" (the last layer's values) for mse.
 * Initializers are named like the model's tensors ("layers.3.weight",
 * "layers.3.bias"; batchnorm adds "layers.3.running_mean" / ".running_var"). */
#ifndef SC_ONNX_H
#define SC_ONNX_H

#include <stddef.h>

#include "sc_buf.h"
#include "sc_err.h"
#include "sc_nn.h"

#define SC_ONNX_OPSET 13
#define SC_ONNX_IR_VERSION 7
#define SC_ONNX_INPUT "input"
#define SC_ONNX_OUTPUT_PROBS "probabilities"
#define SC_ONNX_OUTPUT_VALUES "output"

/* Input normalization, as a decoder spec's: x' = (x * scale - mean) / std. */
typedef struct sc_onnx_norm {
        float scale, mean, std; /* std != 0; {1, 0, 1} = none */
} sc_onnx_norm_t;

/* Per-feature standardization (named fields): x'[i] = x[i] * mul[i] + add[i]
 * for a flat input of n features, after the scalar normalization. */
typedef struct sc_onnx_affine {
        const float *mul, *add; /* n each; NULL = none */
        size_t n;
        const char *features; /* metadata "scadles.input.features" (JSON); NULL = none */
} sc_onnx_affine_t;

typedef struct sc_onnx_opts {
        sc_onnx_norm_t norm;
        sc_onnx_affine_t affine;
        const char *classes;          /* metadata "scadles.output.classes" (JSON); NULL = none */
        const char *producer_version; /* ModelProto.producer_version; NULL = none */
        const char *doc;              /* ModelProto.doc_string; NULL = none */
} sc_onnx_opts_t;

/* Appends the ONNX model of model (its parameters and batchnorm running
 * statistics, read only) to out. SC_ERR_INVAL for a non-finite or zero
 * normalization, a per-feature one whose n is not the flat input's numel,
 * or a model over protobuf's 2 GiB limit, SC_ERR_NOMEM; on
 * error out holds what it held before (length restored). */
sc_err_t sc_onnx_encode(sc_model_t *model, const sc_onnx_opts_t *opts, sc_buf_t *out, char *errstr,
                        size_t errstr_size);

#endif
