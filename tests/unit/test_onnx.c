/* test_onnx.c — the ONNX graph builder, read back with a small protobuf
 * reader: model header and opset, the node sequence of each layer type with
 * its inputs and attributes, initializers holding the parameters and
 * batchnorm statistics in the documented layouts, the normalization
 * constants, input / output shapes, the adapters between 2-D and 4-D values,
 * and errors that leave the buffer as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sc_onnx.h"

/* ---- a minimal reader: one field of a message at a time ---- */

typedef struct fld {
        uint32_t field;
        int wt;
        uint64_t v;       /* varint / fixed32 value */
        const uint8_t *p; /* length-delimited payload */
        size_t len;
} fld_t;

typedef struct msg {
        const uint8_t *p;
        size_t len;
} msg_t;

static uint64_t rd_varint(const uint8_t **p, const uint8_t *end)
{
        uint64_t v = 0;
        for (int s = 0; *p < end; s += 7) {
                uint8_t b = *(*p)++;
                v |= (uint64_t)(b & 0x7f) << s;
                if (!(b & 0x80))
                        return v;
        }
        fail_msg("truncated varint");
        return 0;
}

/* The n-th (0-based) occurrence of field in m; fails the test when absent
 * unless may_miss, then returns 0. */
static int find(msg_t m, uint32_t field, int n, fld_t *f, int may_miss)
{
        const uint8_t *p = m.p, *end = m.p + m.len;
        while (p < end) {
                uint64_t key = rd_varint(&p, end);
                f->field = (uint32_t)(key >> 3);
                f->wt = (int)(key & 7);
                if (f->wt == 0) {
                        f->v = rd_varint(&p, end);
                } else if (f->wt == 5) {
                        assert_true(end - p >= 4);
                        f->v = (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
                               (uint64_t)p[3] << 24;
                        p += 4;
                } else if (f->wt == 2) {
                        f->len = (size_t)rd_varint(&p, end);
                        assert_true((size_t)(end - p) >= f->len);
                        f->p = p;
                        p += f->len;
                } else {
                        fail_msg("unexpected wire type %d", f->wt);
                }
                if (f->field == field && n-- == 0)
                        return 1;
        }
        assert_int_equal(p, end);
        if (!may_miss)
                fail_msg("field %u not found", field);
        return 0;
}

static int count(msg_t m, uint32_t field)
{
        fld_t f;
        int n = 0;
        while (find(m, field, n, &f, 1))
                n++;
        return n;
}

static msg_t sub(msg_t m, uint32_t field, int n)
{
        fld_t f;
        find(m, field, n, &f, 0);
        assert_int_equal(f.wt, 2);
        return (msg_t){f.p, f.len};
}

static uint64_t num(msg_t m, uint32_t field, int n)
{
        fld_t f;
        find(m, field, n, &f, 0);
        return f.v;
}

static int str_is(msg_t m, uint32_t field, int n, const char *s)
{
        msg_t v = sub(m, field, n);
        return v.len == strlen(s) && !memcmp(v.p, s, v.len);
}

/* ---- the model's graph ---- */

typedef struct onnx {
        sc_buf_t buf;
        msg_t model, graph;
} onnx_t;

static void encode(onnx_t *o, sc_model_t *model, sc_onnx_norm_t norm)
{
        char err[256];
        sc_onnx_opts_t opts = {.norm = norm, .producer_version = "9.9"};
        sc_buf_init(&o->buf);
        assert_int_equal(sc_onnx_encode(model, &opts, &o->buf, err, sizeof(err)), SC_OK);
        o->model = (msg_t){o->buf.data, o->buf.len};
        o->graph = sub(o->model, 7, 0);
}

static msg_t node(const onnx_t *o, int i)
{
        return sub(o->graph, 1, i);
}

/* The graph's op types joined by spaces. */
static void ops(const onnx_t *o, char *out, size_t size)
{
        out[0] = 0;
        for (int i = 0; i < count(o->graph, 1); i++) {
                msg_t t = sub(node(o, i), 4, 0);
                size_t l = strlen(out);
                snprintf(out + l, size - l, "%s%.*s", i ? " " : "", (int)t.len, (const char *)t.p);
        }
}

/* The initializer named name. */
static msg_t init_named(const onnx_t *o, const char *name)
{
        for (int i = 0; i < count(o->graph, 5); i++) {
                msg_t t = sub(o->graph, 5, i);
                if (str_is(t, 8, 0, name))
                        return t;
        }
        fail_msg("no initializer %s", name);
        return (msg_t){0};
}

/* Tensor t has dims d[0..rank) and float data v[0..n). */
static void check_floats(msg_t t, const int64_t *d, int rank, const float *v, size_t n)
{
        assert_int_equal(count(t, 1), rank);
        for (int k = 0; k < rank; k++)
                assert_int_equal((int64_t)num(t, 1, k), d[k]);
        assert_int_equal(num(t, 2, 0), 1); /* FLOAT */
        msg_t data = sub(t, 4, 0);
        assert_int_equal(data.len, 4 * n);
        for (size_t k = 0; k < n; k++) {
                float f;
                uint32_t u = (uint32_t)data.p[4 * k] | (uint32_t)data.p[4 * k + 1] << 8 |
                             (uint32_t)data.p[4 * k + 2] << 16 | (uint32_t)data.p[4 * k + 3] << 24;
                memcpy(&f, &u, 4);
                assert_memory_equal(&f, &v[k], 4);
        }
}

/* Value info vi: name, then dims N (dim_param) and d[0..n). */
static void check_value_info(msg_t vi, const char *name, const int *d, int n)
{
        assert_true(str_is(vi, 1, 0, name));
        msg_t tt = sub(sub(vi, 2, 0), 1, 0);
        assert_int_equal(num(tt, 1, 0), 1);
        msg_t shape = sub(tt, 2, 0);
        assert_int_equal(count(shape, 1), 1 + n);
        assert_true(str_is(sub(shape, 1, 0), 2, 0, "N"));
        for (int k = 0; k < n; k++)
                assert_int_equal(num(sub(shape, 1, 1 + k), 1, 0), (uint64_t)d[k]);
}

static sc_model_t *build(const sc_model_spec_t *spec)
{
        char err[256];
        sc_model_t *m = NULL;
        assert_int_equal(sc_model_new(&m, spec, err, sizeof(err)), SC_OK);
        float *p = sc_model_params(m);
        for (size_t i = 0; i < sc_model_nparams(m); i++)
                p[i] = 0.01f * (float)i - 0.5f;
        float *st = sc_model_state(m);
        for (size_t i = 0; i < sc_model_nstate(m); i++)
                st[i] = 0.25f + (float)i;
        return m;
}

/* input (1, 4, 4): flatten, dense 3, batchnorm, relu, dropout, dense 2 */
static void test_mlp(void **state)
{
        (void)state;
        sc_model_spec_t s;
        memset(&s, 0, sizeof(s));
        s.input = (sc_shape_t){1, 4, 4};
        s.n_layers = 6;
        s.layers[0].kind = SC_LAYER_FLATTEN;
        s.layers[1] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 3};
        s.layers[2] = (sc_layer_spec_t){.kind = SC_LAYER_BATCHNORM, .eps = 1e-3f};
        s.layers[3].kind = SC_LAYER_RELU;
        s.layers[4] = (sc_layer_spec_t){.kind = SC_LAYER_DROPOUT, .rate = 0.5f};
        s.layers[5] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 2};
        s.loss = SC_LOSS_SOFTMAX_XENT;
        sc_model_t *m = build(&s);
        onnx_t o;
        char got[256];
        encode(&o, m, (sc_onnx_norm_t){1.0f / 255.0f, 0.5f, 2.0f});

        assert_int_equal(num(o.model, 1, 0), SC_ONNX_IR_VERSION);
        assert_true(str_is(o.model, 2, 0, "scadles"));
        assert_true(str_is(o.model, 3, 0, "9.9"));
        assert_int_equal(count(o.model, 8), 1);
        assert_int_equal(count(sub(o.model, 8, 0), 1), 0); /* default domain */
        assert_int_equal(num(sub(o.model, 8, 0), 2, 0), SC_ONNX_OPSET);
        ops(&o, got, sizeof(got));
        assert_string_equal(got, "Mul Add Flatten Gemm BatchNormalization Relu Identity Gemm "
                                 "Softmax");

        /* normalization: x * (scale / std) + (-mean / std), scalars */
        const float a = (1.0f / 255.0f) / 2.0f, b = -0.5f / 2.0f;
        check_floats(init_named(&o, "input.scale"), NULL, 0, &a, 1);
        check_floats(init_named(&o, "input.shift"), NULL, 0, &b, 1);
        assert_true(str_is(node(&o, 0), 1, 0, "input"));
        assert_true(str_is(node(&o, 0), 1, 1, "input.scale"));
        assert_true(str_is(node(&o, 1), 1, 0, "input.scaled"));

        /* dense: Gemm(x, W (out, in), b) with transB = 1 */
        msg_t g = node(&o, 3);
        assert_int_equal(count(g, 1), 3);
        assert_true(str_is(g, 1, 0, "layers.0.flatten"));
        assert_true(str_is(g, 1, 1, "layers.1.weight"));
        assert_true(str_is(g, 1, 2, "layers.1.bias"));
        msg_t at = sub(g, 5, 0);
        assert_true(str_is(at, 1, 0, "transB"));
        assert_int_equal(num(at, 20, 0), 2); /* INT */
        assert_int_equal(num(at, 3, 0), 1);
        const float *p = sc_model_params(m);
        const int64_t wd[2] = {3, 16}, bd[1] = {3};
        check_floats(init_named(&o, "layers.1.weight"), wd, 2, p, 48);
        check_floats(init_named(&o, "layers.1.bias"), bd, 1, p + 48, 3);

        /* batchnorm: gamma, beta, running mean, running variance; epsilon */
        msg_t bn = node(&o, 4);
        assert_int_equal(count(bn, 1), 5);
        assert_true(str_is(bn, 1, 3, "layers.2.running_mean"));
        msg_t eps = sub(bn, 5, 0);
        assert_true(str_is(eps, 1, 0, "epsilon"));
        assert_int_equal(num(eps, 20, 0), 1); /* FLOAT */
        float e;
        uint32_t u = (uint32_t)num(eps, 2, 0);
        memcpy(&e, &u, 4);
        assert_true(e == 1e-3f);
        const float *st = sc_model_state(m);
        check_floats(init_named(&o, "layers.2.weight"), bd, 1, p + 51, 3);
        check_floats(init_named(&o, "layers.2.bias"), bd, 1, p + 54, 3);
        check_floats(init_named(&o, "layers.2.running_mean"), bd, 1, st, 3);
        check_floats(init_named(&o, "layers.2.running_var"), bd, 1, st + 3, 3);

        /* graph input and output */
        const int in[3] = {1, 4, 4}, out[1] = {2};
        assert_int_equal(count(o.graph, 11), 1);
        check_value_info(sub(o.graph, 11, 0), "input", in, 3);
        check_value_info(sub(o.graph, 12, 0), "probabilities", out, 1);
        assert_true(str_is(node(&o, 8), 2, 0, "probabilities"));

        /* metadata: the normalization as given */
        assert_int_equal(count(o.model, 14), 3);
        assert_true(str_is(sub(o.model, 14, 1), 1, 0, "scadles.normalization.mean"));
        assert_true(str_is(sub(o.model, 14, 1), 2, 0, "0.5"));
        sc_buf_free(&o.buf);
        sc_model_destroy(m);
}

/* input [3] (flat) -> conv2d 2 x 1x1 (a Reshape first) -> dense 2 (a Flatten
 * first), mse loss (no Softmax), no normalization (no Mul / Add) */
static void test_adapters_mse(void **state)
{
        (void)state;
        sc_model_spec_t s;
        memset(&s, 0, sizeof(s));
        s.input = (sc_shape_t){3, 1, 1};
        s.n_layers = 3;
        s.layers[0] = (sc_layer_spec_t){.kind = SC_LAYER_CONV2D, .filters = 2, .kernel = 1};
        s.layers[1].kind = SC_LAYER_SIGMOID;
        s.layers[2] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 2};
        s.loss = SC_LOSS_MSE;
        sc_model_t *m = build(&s);
        onnx_t o;
        char got[256];
        encode(&o, m, (sc_onnx_norm_t){1.0f, 0.0f, 1.0f});
        ops(&o, got, sizeof(got));
        assert_string_equal(got, "Reshape Conv Sigmoid Flatten Gemm Identity");
        assert_true(str_is(node(&o, 0), 1, 0, "input"));
        const int64_t shape[4] = {-1, 3, 1, 1};
        msg_t t = init_named(&o, "layers.0.shape");
        assert_int_equal(num(t, 2, 0), 7); /* INT64 */
        msg_t d = sub(t, 7, 0);            /* packed varints */
        const uint8_t *q = d.p;
        for (int k = 0; k < 4; k++)
                assert_int_equal((int64_t)rd_varint(&q, d.p + d.len), shape[k]);
        /* Conv: kernel_shape, strides, pads as repeated (unpacked) ints */
        msg_t conv = node(&o, 1);
        msg_t pads = sub(conv, 5, 2);
        assert_true(str_is(pads, 1, 0, "pads"));
        assert_int_equal(num(pads, 20, 0), 7); /* INTS */
        assert_int_equal(count(pads, 8), 4);
        assert_int_equal(count(sub(conv, 5, 0), 8), 2);
        const int64_t wd[4] = {2, 3, 1, 1};
        check_floats(init_named(&o, "layers.0.weight"), wd, 4, sc_model_params(m), 6);
        const int in[1] = {3}, out[1] = {2};
        check_value_info(sub(o.graph, 11, 0), "input", in, 1);
        check_value_info(sub(o.graph, 12, 0), "output", out, 1);
        sc_buf_free(&o.buf);
        sc_model_destroy(m);
}

/* A zero or non-finite normalization is refused; the buffer keeps its bytes. */
static void test_errors(void **state)
{
        (void)state;
        sc_model_spec_t s;
        memset(&s, 0, sizeof(s));
        s.input = (sc_shape_t){4, 1, 1};
        s.n_layers = 1;
        s.layers[0] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 2};
        sc_model_t *m = build(&s);
        char err[256];
        sc_buf_t buf;
        sc_buf_init(&buf);
        assert_int_equal(sc_buf_append(&buf, "abc", 3), SC_OK);
        sc_onnx_opts_t opts = {.norm = {1.0f, 0.0f, 0.0f}};
        assert_int_equal(sc_onnx_encode(m, &opts, &buf, err, sizeof(err)), SC_ERR_INVAL);
        assert_non_null(strstr(err, "std"));
        opts.norm = (sc_onnx_norm_t){1e30f, 0.0f, 1e-30f};
        assert_int_equal(sc_onnx_encode(m, &opts, &buf, err, sizeof(err)), SC_ERR_INVAL);
        assert_int_equal(buf.len, 3);
        /* appended after what the buffer held */
        opts.norm = (sc_onnx_norm_t){1.0f, 0.0f, 1.0f};
        assert_int_equal(sc_onnx_encode(m, &opts, &buf, err, sizeof(err)), SC_OK);
        assert_true(buf.len > 3);
        assert_memory_equal(buf.data, "abc", 3);
        assert_int_equal(buf.data[3], 0x08); /* ir_version's key */
        sc_buf_free(&buf);
        sc_model_destroy(m);
}

/* named fields: a per-feature Mul and Add by vectors after the scalar
 * normalization, and the feature names as metadata; refused when the
 * vectors do not fit the flat input */
static void test_fields_affine(void **state)
{
        (void)state;
        sc_model_spec_t s;
        memset(&s, 0, sizeof(s));
        s.input = (sc_shape_t){3, 1, 1};
        s.n_layers = 1;
        s.layers[0] = (sc_layer_spec_t){.kind = SC_LAYER_DENSE, .units = 2};
        s.loss = SC_LOSS_SOFTMAX_XENT;
        sc_model_t *m = build(&s);
        const float mul[3] = {0.5f, 1.0f, 0.25f}, add[3] = {-1.0f, 0.0f, 2.0f};
        sc_onnx_opts_t opts = {.norm = {1.0f, 0.0f, 1.0f},
                               .affine = {mul, add, 3, "[\"a\",\"a.missing\",\"b\"]"}};
        onnx_t o;
        char err[256], got[256];
        sc_buf_init(&o.buf);
        assert_int_equal(sc_onnx_encode(m, &opts, &o.buf, err, sizeof(err)), SC_OK);
        o.model = (msg_t){o.buf.data, o.buf.len};
        o.graph = sub(o.model, 7, 0);
        ops(&o, got, sizeof(got));
        assert_string_equal(got, "Mul Add Gemm Softmax");
        const int64_t d[1] = {3};
        check_floats(init_named(&o, "input.fields_scale"), d, 1, mul, 3);
        check_floats(init_named(&o, "input.fields_shift"), d, 1, add, 3);
        assert_true(str_is(node(&o, 1), 2, 0, "input.standardized"));
        assert_true(str_is(node(&o, 2), 1, 0, "input.standardized"));
        assert_int_equal(count(o.model, 14), 4);
        assert_true(str_is(sub(o.model, 14, 3), 1, 0, "scadles.input.features"));
        assert_true(str_is(sub(o.model, 14, 3), 2, 0, "[\"a\",\"a.missing\",\"b\"]"));
        sc_buf_free(&o.buf);

        opts.affine.n = 4;
        sc_buf_init(&o.buf);
        assert_int_equal(sc_onnx_encode(m, &opts, &o.buf, err, sizeof(err)), SC_ERR_INVAL);
        assert_non_null(strstr(err, "per-feature"));
        assert_int_equal(o.buf.len, 0);
        const float bad[3] = {1.0f, NAN, 1.0f};
        opts.affine = (sc_onnx_affine_t){bad, add, 3, NULL};
        assert_int_equal(sc_onnx_encode(m, &opts, &o.buf, err, sizeof(err)), SC_ERR_INVAL);
        sc_buf_free(&o.buf);
        sc_model_destroy(m);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_mlp),
            cmocka_unit_test(test_adapters_mse),
            cmocka_unit_test(test_errors),
            cmocka_unit_test(test_fields_affine),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
