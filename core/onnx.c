/* onnx.c — ONNX export: a model's graph, parameters and input normalization
 * as an ONNX ModelProto (field numbers from onnx/onnx.proto). */
#include "sc_onnx.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sc_pb.h"

/* Field numbers of the onnx.proto messages written here. */
enum {
        MODEL_IR_VERSION = 1,
        MODEL_PRODUCER_NAME = 2,
        MODEL_PRODUCER_VERSION = 3,
        MODEL_DOC_STRING = 6,
        MODEL_GRAPH = 7,
        MODEL_OPSET_IMPORT = 8,
        MODEL_METADATA_PROPS = 14,
        OPSET_VERSION = 2,
        ENTRY_KEY = 1,
        ENTRY_VALUE = 2,
        GRAPH_NODE = 1,
        GRAPH_NAME = 2,
        GRAPH_INITIALIZER = 5,
        GRAPH_INPUT = 11,
        GRAPH_OUTPUT = 12,
        NODE_INPUT = 1,
        NODE_OUTPUT = 2,
        NODE_NAME = 3,
        NODE_OP_TYPE = 4,
        NODE_ATTRIBUTE = 5,
        ATTR_NAME = 1,
        ATTR_F = 2,
        ATTR_I = 3,
        ATTR_INTS = 8,
        ATTR_TYPE = 20,
        TENSOR_DIMS = 1,
        TENSOR_DATA_TYPE = 2,
        TENSOR_FLOAT_DATA = 4,
        TENSOR_INT64_DATA = 7,
        TENSOR_NAME = 8,
        VALUE_INFO_NAME = 1,
        VALUE_INFO_TYPE = 2,
        TYPE_TENSOR_TYPE = 1,
        TYPE_TENSOR_ELEM_TYPE = 1,
        TYPE_TENSOR_SHAPE = 2,
        SHAPE_DIM = 1,
        DIM_VALUE = 1,
        DIM_PARAM = 2,
};

/* AttributeProto.AttributeType and TensorProto.DataType values. */
enum { ATTR_FLOAT = 1, ATTR_INT = 2, ATTR_INTS_TYPE = 7 };
enum { DTYPE_FLOAT = 1, DTYPE_INT64 = 7 };

#define NAME_MAX_LEN 64

/* One node's attributes (at most a few each). */
typedef struct attr {
        const char *name;
        int type; /* ATTR_FLOAT, ATTR_INT or ATTR_INTS_TYPE */
        float f;
        int64_t i;
        int64_t ints[4];
        int n_ints;
} attr_t;

static void write_attr(sc_pb_t *pb, const attr_t *a)
{
        size_t m = sc_pb_begin(pb, NODE_ATTRIBUTE);
        sc_pb_string(pb, ATTR_NAME, a->name);
        if (a->type == ATTR_FLOAT)
                sc_pb_float(pb, ATTR_F, a->f);
        else if (a->type == ATTR_INT)
                sc_pb_int(pb, ATTR_I, a->i);
        else /* repeated int64, not declared packed: one key per element */
                for (int k = 0; k < a->n_ints; k++)
                        sc_pb_int(pb, ATTR_INTS, a->ints[k]);
        sc_pb_int(pb, ATTR_TYPE, a->type);
        sc_pb_end(pb, m);
}

/* A node named after its output, with inputs in[0..n_in). */
static void write_node(sc_pb_t *pb, const char *op, const char *const *in, int n_in,
                       const char *out, const attr_t *attrs, int n_attrs)
{
        size_t m = sc_pb_begin(pb, GRAPH_NODE);
        for (int k = 0; k < n_in; k++)
                sc_pb_string(pb, NODE_INPUT, in[k]);
        sc_pb_string(pb, NODE_OUTPUT, out);
        sc_pb_string(pb, NODE_NAME, out);
        sc_pb_string(pb, NODE_OP_TYPE, op);
        for (int k = 0; k < n_attrs; k++)
                write_attr(pb, &attrs[k]);
        sc_pb_end(pb, m);
}

/* A float initializer of shape dims[0..rank) (rank 0: a scalar). */
static void write_floats(sc_pb_t *pb, const char *name, const int64_t *dims, int rank,
                         const float *v, size_t n)
{
        size_t m = sc_pb_begin(pb, GRAPH_INITIALIZER);
        for (int k = 0; k < rank; k++) /* repeated int64, not packed */
                sc_pb_int(pb, TENSOR_DIMS, dims[k]);
        sc_pb_int(pb, TENSOR_DATA_TYPE, DTYPE_FLOAT);
        sc_pb_floats(pb, TENSOR_FLOAT_DATA, v, n);
        sc_pb_string(pb, TENSOR_NAME, name);
        sc_pb_end(pb, m);
}

/* A 1-D int64 initializer of n values. */
static void write_int64s(sc_pb_t *pb, const char *name, const int64_t *v, int n)
{
        size_t m = sc_pb_begin(pb, GRAPH_INITIALIZER);
        sc_pb_int(pb, TENSOR_DIMS, n);
        sc_pb_int(pb, TENSOR_DATA_TYPE, DTYPE_INT64);
        sc_pb_int64s(pb, TENSOR_INT64_DATA, v, (size_t)n);
        sc_pb_string(pb, TENSOR_NAME, name);
        sc_pb_end(pb, m);
}

/* A graph input or output: float tensor (N, dims[0..rank)). */
static void write_value_info(sc_pb_t *pb, uint32_t field, const char *name, const int *dims,
                             int rank)
{
        size_t m = sc_pb_begin(pb, field);
        sc_pb_string(pb, VALUE_INFO_NAME, name);
        size_t t = sc_pb_begin(pb, VALUE_INFO_TYPE);
        size_t tt = sc_pb_begin(pb, TYPE_TENSOR_TYPE);
        sc_pb_int(pb, TYPE_TENSOR_ELEM_TYPE, DTYPE_FLOAT);
        size_t s = sc_pb_begin(pb, TYPE_TENSOR_SHAPE);
        size_t d = sc_pb_begin(pb, SHAPE_DIM);
        sc_pb_string(pb, DIM_PARAM, "N");
        sc_pb_end(pb, d);
        for (int k = 0; k < rank; k++) {
                d = sc_pb_begin(pb, SHAPE_DIM);
                sc_pb_int(pb, DIM_VALUE, dims[k]);
                sc_pb_end(pb, d);
        }
        sc_pb_end(pb, s);
        sc_pb_end(pb, tt);
        sc_pb_end(pb, t);
        sc_pb_end(pb, m);
}

static void write_entry(sc_pb_t *pb, const char *key, const char *value)
{
        size_t m = sc_pb_begin(pb, MODEL_METADATA_PROPS);
        sc_pb_string(pb, ENTRY_KEY, key);
        sc_pb_string(pb, ENTRY_VALUE, value);
        sc_pb_end(pb, m);
}

/* The graph being written: the current value, its rank (2: (N, features),
 * 4: (N, C, H, W)) and its per-sample shape. */
typedef struct graph {
        sc_pb_t *pb;
        char cur[NAME_MAX_LEN];
        int rank;
        sc_shape_t shape;
} graph_t;

/* Adds node op from the current value (plus extra inputs) to a value named
 * out, which becomes the current one. */
static void step(graph_t *g, const char *op, const char *out, const char *const *extra, int n_extra,
                 const attr_t *attrs, int n_attrs)
{
        const char *in[5] = {g->cur};
        for (int k = 0; k < n_extra && k < 4; k++)
                in[1 + k] = extra[k];
        write_node(g->pb, op, in, 1 + n_extra, out, attrs, n_attrs);
        snprintf(g->cur, sizeof(g->cur), "%s", out);
}

/* The current value as (N, features). */
static void to_rank2(graph_t *g, const char *out)
{
        const attr_t axis = {.name = "axis", .type = ATTR_INT, .i = 1};
        if (g->rank == 2)
                return;
        step(g, "Flatten", out, NULL, 0, &axis, 1);
        g->rank = 2;
}

/* The current value (N, C) as (N, C, 1, 1). */
static void to_rank4(graph_t *g, const char *prefix)
{
        char name[NAME_MAX_LEN], shape[NAME_MAX_LEN];
        const char *extra[1] = {shape};
        if (g->rank == 4)
                return;
        const int64_t dims[4] = {-1, g->shape.c, g->shape.h, g->shape.w};
        snprintf(shape, sizeof(shape), "%s.shape", prefix);
        snprintf(name, sizeof(name), "%s.reshape", prefix);
        write_int64s(g->pb, shape, dims, 4);
        step(g, "Reshape", name, extra, 1, NULL, 0);
        g->rank = 4;
}

/* Layer i (its weight and bias at w, b; batchnorm statistics at st). */
static void write_layer(graph_t *g, int i, const sc_layer_spec_t *ls, sc_shape_t out,
                        const float *w, const float *b, const float *st)
{
        char pre[NAME_MAX_LEN], name[NAME_MAX_LEN], wn[NAME_MAX_LEN], bn[NAME_MAX_LEN];
        char mn[NAME_MAX_LEN], vn[NAME_MAX_LEN];
        const char *extra[4] = {wn, bn, mn, vn};
        const sc_shape_t in = g->shape;
        const int64_t k = ls->kernel, s = ls->stride, p = ls->padding;

        snprintf(pre, sizeof(pre), "layers.%d", i);
        snprintf(name, sizeof(name), "layers.%d.%s", i, sc_layer_kind_name(ls->kind));
        snprintf(wn, sizeof(wn), "layers.%d.weight", i);
        snprintf(bn, sizeof(bn), "layers.%d.bias", i);
        snprintf(mn, sizeof(mn), "layers.%d.running_mean", i);
        snprintf(vn, sizeof(vn), "layers.%d.running_var", i);
        switch (ls->kind) {
        case SC_LAYER_DENSE: {
                const int64_t wd[2] = {out.c, in.c}, bd[1] = {out.c};
                const attr_t tb = {.name = "transB", .type = ATTR_INT, .i = 1};
                to_rank2(g, pre);
                write_floats(g->pb, wn, wd, 2, w, (size_t)out.c * (size_t)in.c);
                write_floats(g->pb, bn, bd, 1, b, (size_t)out.c);
                step(g, "Gemm", name, extra, 2, &tb, 1);
                break;
        }
        case SC_LAYER_CONV2D: {
                const int64_t wd[4] = {out.c, in.c, k, k}, bd[1] = {out.c};
                const attr_t a[3] = {
                    {.name = "kernel_shape", .type = ATTR_INTS_TYPE, .ints = {k, k}, .n_ints = 2},
                    {.name = "strides", .type = ATTR_INTS_TYPE, .ints = {s, s}, .n_ints = 2},
                    {.name = "pads", .type = ATTR_INTS_TYPE, .ints = {p, p, p, p}, .n_ints = 4},
                };
                to_rank4(g, pre);
                write_floats(g->pb, wn, wd, 4, w, (size_t)out.c * (size_t)in.c * (size_t)(k * k));
                write_floats(g->pb, bn, bd, 1, b, (size_t)out.c);
                step(g, "Conv", name, extra, 2, a, 3);
                break;
        }
        case SC_LAYER_MAXPOOL2D: {
                const attr_t a[2] = {
                    {.name = "kernel_shape", .type = ATTR_INTS_TYPE, .ints = {k, k}, .n_ints = 2},
                    {.name = "strides", .type = ATTR_INTS_TYPE, .ints = {s, s}, .n_ints = 2},
                };
                to_rank4(g, pre);
                step(g, "MaxPool", name, NULL, 0, a, 2);
                break;
        }
        case SC_LAYER_BATCHNORM: {
                const int64_t cd[1] = {in.c};
                const attr_t eps = {.name = "epsilon", .type = ATTR_FLOAT, .f = ls->eps};
                write_floats(g->pb, wn, cd, 1, w, (size_t)in.c);
                write_floats(g->pb, bn, cd, 1, b, (size_t)in.c);
                write_floats(g->pb, mn, cd, 1, st, (size_t)in.c);
                write_floats(g->pb, vn, cd, 1, st + in.c, (size_t)in.c);
                step(g, "BatchNormalization", name, extra, 4, &eps, 1);
                break;
        }
        case SC_LAYER_STANDARDIZE: {
                /* (x - mean) / sqrt(var + eps): a BatchNormalization of
                 * scale 1 and bias 0 */
                const int64_t cd[1] = {in.c};
                const attr_t eps = {.name = "epsilon", .type = ATTR_FLOAT, .f = ls->eps};
                float *one = malloc((size_t)in.c * sizeof(float)),
                      *zero = calloc((size_t)in.c, sizeof(float)),
                      *var = malloc((size_t)in.c * sizeof(float));
                for (int c = 0; one && var && c < in.c; c++) {
                        one[c] = 1.0f;
                        var[c] = sc_nn_standardize_var(st[c], st[in.c + c]);
                }
                if (!one || !zero || !var) {
                        if (!g->pb->err)
                                g->pb->err = SC_ERR_NOMEM;
                } else {
                        write_floats(g->pb, wn, cd, 1, one, (size_t)in.c);
                        write_floats(g->pb, bn, cd, 1, zero, (size_t)in.c);
                        write_floats(g->pb, mn, cd, 1, st, (size_t)in.c);
                        write_floats(g->pb, vn, cd, 1, var, (size_t)in.c);
                        step(g, "BatchNormalization", name, extra, 4, &eps, 1);
                }
                free(one);
                free(zero);
                free(var);
                break;
        }
        case SC_LAYER_FLATTEN:
                g->rank = 4; /* Flatten (axis 1) also on a 2-D value: one node per layer */
                to_rank2(g, name);
                break;
        case SC_LAYER_RELU:
                step(g, "Relu", name, NULL, 0, NULL, 0);
                break;
        case SC_LAYER_TANH:
                step(g, "Tanh", name, NULL, 0, NULL, 0);
                break;
        case SC_LAYER_SIGMOID:
                step(g, "Sigmoid", name, NULL, 0, NULL, 0);
                break;
        case SC_LAYER_DROPOUT: /* off at inference */
        default:
                step(g, "Identity", name, NULL, 0, NULL, 0);
                break;
        }
        g->shape = out;
}

/* x * (scale / std) + (-mean / std): the decoder's arithmetic. */
static void write_norm(graph_t *g, const sc_onnx_norm_t *n)
{
        const float a = n->scale / n->std, b = -n->mean / n->std;
        const char *ea[1] = {"input.scale"}, *eb[1] = {"input.shift"};
        if (a != 1.0f) {
                write_floats(g->pb, ea[0], NULL, 0, &a, 1);
                step(g, "Mul", "input.scaled", ea, 1, NULL, 0);
        }
        if (b != 0.0f) {
                write_floats(g->pb, eb[0], NULL, 0, &b, 1);
                step(g, "Add", "input.normalized", eb, 1, NULL, 0);
        }
}

/* x * mul + add, one factor and offset per feature (named fields). */
static void write_affine(graph_t *g, const sc_onnx_affine_t *f)
{
        const int64_t dims[1] = {(int64_t)f->n};
        const char *ea[1] = {"input.fields_scale"}, *eb[1] = {"input.fields_shift"};
        if (!f->mul)
                return;
        write_floats(g->pb, ea[0], dims, 1, f->mul, f->n);
        step(g, "Mul", "input.fields_scaled", ea, 1, NULL, 0);
        write_floats(g->pb, eb[0], dims, 1, f->add, f->n);
        step(g, "Add", "input.standardized", eb, 1, NULL, 0);
}

static void write_graph(sc_pb_t *pb, sc_model_t *model, const sc_onnx_opts_t *opts)
{
        const sc_model_spec_t *spec = sc_model_spec(model);
        const float *params = sc_model_params(model), *state = sc_model_state(model);
        graph_t g = {.pb = pb, .shape = spec->input};
        size_t so = 0;
        int t = 0, nt = sc_model_ntensors(model);

        g.rank = spec->input.h == 1 && spec->input.w == 1 ? 2 : 4;
        snprintf(g.cur, sizeof(g.cur), "%s", SC_ONNX_INPUT);
        size_t m = sc_pb_begin(pb, MODEL_GRAPH);
        sc_pb_string(pb, GRAPH_NAME, "scadles");
        const int in4[3] = {spec->input.c, spec->input.h, spec->input.w};
        const int in2[1] = {(int)sc_shape_numel(spec->input)};
        write_value_info(pb, GRAPH_INPUT, SC_ONNX_INPUT, g.rank == 2 ? in2 : in4,
                         g.rank == 2 ? 1 : 3);
        write_norm(&g, &opts->norm);
        write_affine(&g, &opts->affine);
        for (int i = 0; i < spec->n_layers; i++) {
                const sc_layer_spec_t *ls = sc_model_layer_spec(model, i);
                const float *w = NULL, *b = NULL;
                if (t < nt && sc_model_tensor(model, t)->layer == i)
                        w = params + sc_model_tensor(model, t++)->offset;
                if (t < nt && sc_model_tensor(model, t)->layer == i)
                        b = params + sc_model_tensor(model, t++)->offset;
                write_layer(&g, i, ls, sc_model_layer_shape(model, i), w, b,
                            state ? state + so : NULL);
                if (ls->kind == SC_LAYER_BATCHNORM)
                        so += 2 * (size_t)g.shape.c;
                else if (ls->kind == SC_LAYER_STANDARDIZE)
                        so += 2 * (size_t)g.shape.c + 1;
        }
        const int out4[3] = {g.shape.c, g.shape.h, g.shape.w};
        const int out2[1] = {(int)sc_shape_numel(g.shape)};
        if (spec->loss == SC_LOSS_SOFTMAX_XENT) {
                const attr_t axis = {.name = "axis", .type = ATTR_INT, .i = 1};
                to_rank2(&g, "logits");
                step(&g, "Softmax", SC_ONNX_OUTPUT_PROBS, NULL, 0, &axis, 1);
        } else {
                step(&g, "Identity", SC_ONNX_OUTPUT_VALUES, NULL, 0, NULL, 0);
        }
        write_value_info(pb, GRAPH_OUTPUT, g.cur, g.rank == 2 ? out2 : out4, g.rank == 2 ? 1 : 3);
        sc_pb_end(pb, m);
}

sc_err_t sc_onnx_encode(sc_model_t *model, const sc_onnx_opts_t *opts, sc_buf_t *out, char *errstr,
                        size_t errstr_size)
{
        const sc_onnx_norm_t *n = &opts->norm;
        char v[64];
        sc_pb_t pb;

        if (!model || !opts || !out)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "onnx: no model");
        if (!isfinite(n->scale) || !isfinite(n->mean) || !isfinite(n->std) || n->std == 0.0f ||
            !isfinite(n->scale / n->std) || !isfinite(n->mean / n->std))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "onnx: normalization scale %g, mean %g, std %g: expected finite "
                               "numbers and std != 0",
                               (double)n->scale, (double)n->mean, (double)n->std);
        const sc_onnx_affine_t *af = &opts->affine;
        if (af->mul) {
                const sc_model_spec_t *ms = sc_model_spec(model);
                int ok = ms->input.h == 1 && ms->input.w == 1 && af->add &&
                         af->n == sc_shape_numel(ms->input);
                for (size_t i = 0; ok && i < af->n; i++)
                        ok = isfinite(af->mul[i]) && isfinite(af->add[i]);
                if (!ok)
                        return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                                       "onnx: per-feature standardization of %zu features does "
                                       "not fit the model's input, or is not finite",
                                       af->n);
        }
        const size_t len0 = out->len;
        sc_pb_init(&pb, out);
        sc_pb_int(&pb, MODEL_IR_VERSION, SC_ONNX_IR_VERSION);
        sc_pb_string(&pb, MODEL_PRODUCER_NAME, "scadles");
        if (opts->producer_version)
                sc_pb_string(&pb, MODEL_PRODUCER_VERSION, opts->producer_version);
        if (opts->doc)
                sc_pb_string(&pb, MODEL_DOC_STRING, opts->doc);
        write_graph(&pb, model, opts);
        size_t m = sc_pb_begin(&pb, MODEL_OPSET_IMPORT);
        sc_pb_int(&pb, OPSET_VERSION, SC_ONNX_OPSET);
        sc_pb_end(&pb, m);
        snprintf(v, sizeof(v), "%.9g", (double)n->scale);
        write_entry(&pb, "scadles.normalization.scale", v);
        snprintf(v, sizeof(v), "%.9g", (double)n->mean);
        write_entry(&pb, "scadles.normalization.mean", v);
        snprintf(v, sizeof(v), "%.9g", (double)n->std);
        write_entry(&pb, "scadles.normalization.std", v);
        if (af->features)
                write_entry(&pb, "scadles.input.features", af->features);
        if (opts->classes)
                write_entry(&pb, "scadles.output.classes", opts->classes);

        sc_err_t err = sc_pb_err(&pb);
        if (!err && out->len - len0 > SC_PB_MAX_LEN)
                err = SC_ERR_INVAL;
        if (err) {
                out->len = len0;
                if (err == SC_ERR_NOMEM)
                        return sc_errf(err, errstr, errstr_size, "onnx: out of memory");
                return sc_errf(err, errstr, errstr_size,
                               "onnx: the model does not fit in one ONNX file (%zu parameters; "
                               "protobuf messages stay under 2 GiB)",
                               sc_model_nparams(model));
        }
        return SC_OK;
}
