/* model.c — builds a model from its spec (shape checks, parameter layout,
 * layer fusion) and runs training and inference steps over a batch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn_impl.h"
#include "sc_alloc.h"

/* Every buffer in the activation arena starts on a 64-byte boundary. */
#define SC_NN_ALIGN 16 /* floats */

struct sc_model_s {
        sc_model_spec_t spec;
        int n;
        sc_layer_t layers[SC_MODEL_MAX_LAYERS];
        size_t nparams;
        float *params, *grads;
        size_t nstate;
        float *state; /* non-trainable (batchnorm running statistics) */
        int ntensors;
        sc_tensor_view_t tensors[2 * SC_MODEL_MAX_LAYERS];
        int first_param; /* backward stops here; n if no layer has parameters */
        /* Activation arena, sized for cap samples and cap_threads BLAS threads
         * (conv2d workspaces grow with the thread count). */
        int cap, cap_threads;
        float *arena;
        float *act[SC_MODEL_MAX_LAYERS];       /* layer outputs (NULL when in place) */
        float *gbuf[2];                        /* ping-pong gradient buffers */
        const float *out[SC_MODEL_MAX_LAYERS]; /* outputs of the last forward pass */
        double step_macs;                      /* of the last training step */
        sc_nn_pool_t *pool;                    /* compute threads when sc_nn_threads_get() > 1 */
        int pool_threads;                      /* the thread count pool was made for */
};

static const sc_layer_ops_t *const sc_layer_ops_table[SC_LAYER__END] = {
    [SC_LAYER_DENSE] = &sc_nn_dense_ops,         [SC_LAYER_CONV2D] = &sc_nn_conv2d_ops,
    [SC_LAYER_MAXPOOL2D] = &sc_nn_maxpool2d_ops, [SC_LAYER_RELU] = &sc_nn_relu_ops,
    [SC_LAYER_TANH] = &sc_nn_tanh_ops,           [SC_LAYER_SIGMOID] = &sc_nn_sigmoid_ops,
    [SC_LAYER_DROPOUT] = &sc_nn_dropout_ops,     [SC_LAYER_FLATTEN] = &sc_nn_flatten_ops,
    [SC_LAYER_BATCHNORM] = &sc_nn_batchnorm_ops, [SC_LAYER_STANDARDIZE] = &sc_nn_standardize_ops,
};

const char *sc_layer_kind_name(sc_layer_kind_t kind)
{
        if ((int)kind < 0 || kind >= SC_LAYER__END)
                return "unknown";
        return sc_layer_ops_table[kind]->name;
}

void sc_nn_init_weights(float *w, size_t n, int fan_in, int fan_out, int he, sc_rng_t *rng)
{
        if (he) {
                float sd = sqrtf(2.0f / (float)fan_in);
                for (size_t i = 0; i < n; i++)
                        w[i] = sd * sc_rng_normal(rng);
        } else {
                float lim = sqrtf(6.0f / (float)(fan_in + fan_out));
                for (size_t i = 0; i < n; i++)
                        w[i] = lim * (2.0f * sc_rng_uniform(rng) - 1.0f);
        }
}

static int is_gemm_layer(const sc_layer_t *l)
{
        return l->spec.kind == SC_LAYER_DENSE || l->spec.kind == SC_LAYER_CONV2D;
}

static int is_elementwise(sc_layer_kind_t k)
{
        return k == SC_LAYER_RELU || k == SC_LAYER_TANH || k == SC_LAYER_SIGMOID ||
               k == SC_LAYER_DROPOUT;
}

/* Layouts, in-place execution and relu fusion. An elementwise layer may
 * overwrite its input only when that input is the output of a dense or
 * conv2d layer, whose backward pass reads its own input, never its output. */
static void plan_layers(sc_model_t *m)
{
        int fm = 0; /* the caller's input is batch-major */

        for (int i = 0; i < m->n; i++) {
                sc_layer_t *l = &m->layers[i], *prev = i ? &m->layers[i - 1] : NULL;
                sc_layer_kind_t k = l->spec.kind;
                l->in_fm = fm;
                if (is_gemm_layer(l)) {
                        l->out_fm = 1;
                } else if (k == SC_LAYER_FLATTEN) {
                        int moves = fm && l->in.h * l->in.w > 1;
                        l->out_fm = moves ? 0 : fm;
                        l->inplace_fwd = l->inplace_bwd = !moves;
                } else {
                        l->out_fm = fm;
                }
                if (is_elementwise(k)) {
                        l->inplace_bwd = 1;
                        l->inplace_fwd = prev && is_gemm_layer(prev);
                        if (k == SC_LAYER_RELU && l->inplace_fwd) {
                                prev->fuse_relu = 1;
                                l->skip_forward = 1;
                        }
                }
                /* relu -> maxpool2d: the pool's max is the relu output at its
                 * argmax, so the pool applies the relu mask to the one
                 * element it routes each gradient to. */
                if (k == SC_LAYER_MAXPOOL2D && prev && prev->spec.kind == SC_LAYER_RELU) {
                        prev->skip_backward = 1;
                        l->relu_bwd = 1;
                }
                fm = l->out_fm;
        }
}

/* Sets up each layer on the shape its predecessor gives; checks the
 * output against the loss. */
static sc_err_t sc_model_layers(sc_model_t *m, char *errstr, size_t errstr_size)
{
        const sc_model_spec_t *spec = &m->spec;
        sc_shape_t shape = spec->input;
        sc_err_t err;
        for (int i = 0; i < m->n; i++) {
                sc_layer_t *l = &m->layers[i];
                char why[160];
                l->spec = spec->layers[i];
                l->index = i;
                if ((int)l->spec.kind < 0 || l->spec.kind >= SC_LAYER__END)
                        return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                                       "layers[%d]: unknown layer kind %d", i, (int)l->spec.kind);
                l->ops = sc_layer_ops_table[l->spec.kind];
                if (l->spec.stride == 0)
                        l->spec.stride = l->spec.kind == SC_LAYER_MAXPOOL2D ? l->spec.kernel : 1;
                l->in = shape;
                why[0] = '\0';
                if ((err = l->ops->setup(l, why, sizeof(why))))
                        return sc_errf(err, errstr, errstr_size, "layers[%d] (%s): %s", i,
                                       l->ops->name, why);
                if (sc_shape_numel(l->out) > (size_t)1 << 28)
                        return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                                       "layers[%d] (%s): output %dx%dx%d is too large", i,
                                       l->ops->name, l->out.c, l->out.h, l->out.w);
                shape = l->out;
        }
        if (spec->loss == SC_LOSS_SOFTMAX_XENT && (shape.h != 1 || shape.w != 1 || shape.c < 2))
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                               "loss: softmax_xent needs a flat output of at least 2 classes, "
                               "layers[%d] (%s) gives %dx%dx%d (add flatten/dense)",
                               m->n - 1, m->layers[m->n - 1].ops->name, shape.c, shape.h, shape.w);
        return SC_OK;
}

/* Parameter layout: each parametric layer's weight, then its bias, as
 * named tensors over one parameter vector. */
static sc_err_t sc_model_layout(sc_model_t *m, char *errstr, size_t errstr_size)
{
        m->first_param = m->n;
        for (int i = 0; i < m->n; i++) {
                sc_layer_t *l = &m->layers[i];
                size_t sizes[2] = {l->nw, l->nb};
                static const char *const what[2] = {"weight", "bias"};
                if (l->nw && m->first_param == m->n)
                        m->first_param = i;
                for (int t = 0; t < 2; t++) {
                        if (!sizes[t])
                                continue;
                        /* A shape error, not an allocation failure: the spec asks
                         * for more than any model may hold. */
                        if (sizes[t] > SC_MODEL_MAX_PARAMS - m->nparams)
                                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                                               "layers[%d] (%s): the %s takes the model past "
                                               "%zu parameters (%zu before it, %zu in it)",
                                               i, l->ops->name, what[t], SC_MODEL_MAX_PARAMS,
                                               m->nparams, sizes[t]);
                        sc_tensor_view_t *v = &m->tensors[m->ntensors++];
                        snprintf(v->name, sizeof(v->name), "layers.%d.%s", i, what[t]);
                        v->layer = i;
                        v->offset = m->nparams;
                        v->numel = sizes[t];
                        m->nparams += sizes[t];
                }
        }
        for (int i = 0; i < m->n; i++)
                m->nstate += m->layers[i].ns;
        return SC_OK;
}

/* Allocates parameters, gradients and state and points each layer at its
 * parts; the state starts at its initial value. */
static sc_err_t sc_model_alloc(sc_model_t *m, char *errstr, size_t errstr_size)
{
        m->params = sc_calloc(m->nparams ? m->nparams : 1, sizeof(float));
        m->grads = sc_calloc(m->nparams ? m->nparams : 1, sizeof(float));
        m->state = sc_calloc(m->nstate ? m->nstate : 1, sizeof(float));
        if (!m->params || !m->grads || !m->state)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "model: cannot allocate %zu parameters", m->nparams);
        for (int t = 0; t < m->ntensors; t++) {
                const sc_tensor_view_t *v = &m->tensors[t];
                sc_layer_t *l = &m->layers[v->layer];
                if (v->numel == l->nw && !l->w) {
                        l->w = m->params + v->offset;
                        l->dw = m->grads + v->offset;
                } else {
                        l->b = m->params + v->offset;
                        l->db = m->grads + v->offset;
                }
        }
        size_t soff = 0;
        for (int i = 0; i < m->n; i++) {
                sc_layer_t *l = &m->layers[i];
                if (!l->ns)
                        continue;
                l->state = m->state + soff;
                soff += l->ns;
                l->ops->reset_state(l);
        }
        return SC_OK;
}

sc_err_t sc_model_new(sc_model_t **modelp, const sc_model_spec_t *spec, char *errstr,
                      size_t errstr_size)
{
        sc_model_t *m;
        sc_err_t err;

        if (!modelp || !spec)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "model: no spec");
        *modelp = NULL;
        if (spec->n_layers < 1 || spec->n_layers > SC_MODEL_MAX_LAYERS)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                               "layers: %d layers, expected 1 to %d", spec->n_layers,
                               SC_MODEL_MAX_LAYERS);
        if (spec->input.c < 1 || spec->input.h < 1 || spec->input.w < 1)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size,
                               "input: shape %dx%dx%d must be positive", spec->input.c,
                               spec->input.h, spec->input.w);
        if (spec->loss != SC_LOSS_SOFTMAX_XENT && spec->loss != SC_LOSS_MSE)
                return sc_errf(SC_ERR_SHAPE, errstr, errstr_size, "loss: unknown kind %d",
                               (int)spec->loss);
        m = sc_calloc(1, sizeof(*m));
        if (!m)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "model: out of memory");
        m->spec = *spec;
        m->n = spec->n_layers;
        if ((err = sc_model_layers(m, errstr, errstr_size)))
                goto out_free;
        plan_layers(m);
        if ((err = sc_model_layout(m, errstr, errstr_size)) ||
            (err = sc_model_alloc(m, errstr, errstr_size)))
                goto out_free;
        *modelp = m;
        return SC_OK;

out_free:
        sc_model_destroy(m);
        return err;
}

void sc_model_destroy(sc_model_t *model)
{
        if (!model)
                return;
        sc_nn_pool_free(model->pool);
        sc_free(model->arena);
        sc_free(model->params);
        sc_free(model->grads);
        sc_free(model->state);
        sc_free(model);
}

const sc_model_spec_t *sc_model_spec(const sc_model_t *model)
{
        return &model->spec;
}

sc_shape_t sc_model_output_shape(const sc_model_t *model)
{
        return model->layers[model->n - 1].out;
}

sc_shape_t sc_model_layer_shape(const sc_model_t *model, int i)
{
        if (i < 0 || i >= model->n)
                return (sc_shape_t){0, 0, 0};
        return model->layers[i].out;
}

const sc_layer_spec_t *sc_model_layer_spec(const sc_model_t *model, int i)
{
        if (i < 0 || i >= model->n)
                return NULL;
        return &model->layers[i].spec;
}

size_t sc_model_nparams(const sc_model_t *model)
{
        return model->nparams;
}

float *sc_model_params(sc_model_t *model)
{
        return model->params;
}

float *sc_model_grads(sc_model_t *model)
{
        return model->grads;
}

size_t sc_model_nstate(const sc_model_t *model)
{
        return model->nstate;
}

float *sc_model_state(sc_model_t *model)
{
        return model->state;
}

void sc_model_reset_state(sc_model_t *model)
{
        for (int i = 0; i < model->n; i++)
                if (model->layers[i].ns)
                        model->layers[i].ops->reset_state(&model->layers[i]);
}

int sc_model_ntensors(const sc_model_t *model)
{
        return model->ntensors;
}

const sc_tensor_view_t *sc_model_tensor(const sc_model_t *model, int i)
{
        if (i < 0 || i >= model->ntensors)
                return NULL;
        return &model->tensors[i];
}

double sc_model_forward_flops(const sc_model_t *model)
{
        double f = 0;
        for (int i = 0; i < model->n; i++)
                if (model->layers[i].ops->flops)
                        f += model->layers[i].ops->flops(&model->layers[i]);
        return f;
}

double sc_model_last_step_macs(const sc_model_t *model)
{
        return model->step_macs;
}

void sc_model_init(sc_model_t *model, sc_rng_t *rng)
{
        for (int i = 0; i < model->n; i++) {
                sc_layer_t *l = &model->layers[i];
                if (l->ns)
                        l->ops->reset_state(l);
                if (!l->nw)
                        continue;
                int he = l->spec.init == SC_INIT_HE;
                if (l->spec.init == SC_INIT_AUTO)
                        he = i + 1 < model->n && model->layers[i + 1].spec.kind == SC_LAYER_RELU;
                l->ops->init(l, rng, he);
                if (l->nb)
                        memset(l->b, 0, sizeof(float) * l->nb);
        }
}

static size_t round_up(size_t n)
{
        return (n + SC_NN_ALIGN - 1) / SC_NN_ALIGN * SC_NN_ALIGN;
}

/* Sizes (when base is NULL) or carves the arena for B samples; returns floats. */
static size_t carve(sc_model_t *m, int B, float *base)
{
        size_t off = 0, gmax = 0;

        for (int i = 0; i < m->n; i++) {
                sc_layer_t *l = &m->layers[i];
                size_t nout = (size_t)B * sc_shape_numel(l->out);
                if (nout > gmax)
                        gmax = nout;
                if (base)
                        m->act[i] = l->inplace_fwd ? NULL : base + off;
                if (!l->inplace_fwd)
                        off += round_up(nout);
                size_t ws = l->ops->workspace ? l->ops->workspace(l, B) : 0;
                if (base)
                        l->ws = ws ? base + off : NULL;
                off += round_up(ws);
        }
        for (int g = 0; g < 2; g++) {
                if (base)
                        m->gbuf[g] = base + off;
                off += round_up(gmax);
        }
        return off;
}

/* A pool for the current thread count: the old one is joined when the
 * count changed; none for one thread. Without a pool the step runs on the
 * calling thread alone. */
static void sync_pool(sc_model_t *m)
{
        const int threads = sc_nn_threads_get();

        if (m->pool_threads == threads)
                return;
        sc_nn_pool_free(m->pool);
        m->pool = sc_nn_pool_new(threads);
        m->pool_threads = threads;
}

static int reserve(sc_model_t *m, int B)
{
        const int threads = sc_nn_threads_get();

        if (B <= m->cap && threads == m->cap_threads)
                return 0;
        if (B < m->cap)
                B = m->cap;
        size_t n = carve(m, B, NULL);
        void *p = NULL;
        if (sc_memalign(&p, 64, n * sizeof(float)))
                return -1;
        sc_free(m->arena);
        m->arena = p;
        m->cap = B;
        m->cap_threads = threads;
        carve(m, B, m->arena);
        return 0;
}

/* Runs the layers; returns the output, whose layout is the last layer's. */
static const float *forward(sc_model_t *m, const float *x, int B, int train, sc_rng_t *rng)
{
        const float *cur = x;

        for (int i = 0; i < m->n; i++) {
                sc_layer_t *l = &m->layers[i];
                float *y = l->inplace_fwd ? (float *)cur : m->act[i];
                if (l->spec.kind == SC_LAYER_DROPOUT && !train)
                        y = (float *)cur;
                else if (!l->skip_forward)
                        l->ops->forward(l, cur, y, B, train, rng);
                m->out[i] = y;
                cur = y;
        }
        return cur;
}

static float loss_of(sc_model_t *m, const float *y, const int32_t *labels, const float *targets,
                     int B, float *d, int *correct)
{
        const sc_layer_t *last = &m->layers[m->n - 1];
        const int n = (int)sc_shape_numel(last->out);

        if (m->spec.loss == SC_LOSS_SOFTMAX_XENT)
                return sc_nn_xent(y, last->out_fm, n, B, labels, d, correct);
        if (correct)
                *correct = 0;
        return sc_nn_mse(y, last->out_fm, last->out, B, targets, d);
}

/* out (B, output numel) <- the last layer's output y, in sample-major order. */
static void copy_out(const sc_model_t *m, const float *y, int B, float *out)
{
        const sc_layer_t *last = &m->layers[m->n - 1];
        const int n = (int)sc_shape_numel(last->out);
        if (last->out_fm) {
                const int C = last->out.c, hw = last->out.h * last->out.w;
                for (int b = 0; b < B; b++)
                        for (int c = 0; c < C; c++)
                                memcpy(out + ((size_t)b * C + c) * hw, y + ((size_t)c * B + b) * hw,
                                       sizeof(float) * hw);
        } else {
                memcpy(out, y, sizeof(float) * (size_t)B * n);
        }
}

static float train_batch(sc_model_t *model, const float *x, const int32_t *labels,
                         const float *targets, int B, sc_rng_t *rng, int *correct, float *out)
{
        sc_model_t *m = model;

        if (!m || !x || B < 1)
                return NAN;
        if (m->spec.loss == SC_LOSS_SOFTMAX_XENT ? !labels : !targets)
                return NAN;
        if (reserve(m, B))
                return NAN;
        const float *y = forward(m, x, B, 1, rng);
        if (out)
                copy_out(m, y, B, out);
        int g = 0;
        float *dcur = m->gbuf[g];
        float loss = loss_of(m, y, labels, targets, B, dcur, correct);
        if (isnan(loss))
                return loss;
        m->step_macs = 0;
        for (int i = 0; i < m->n; i++)
                if (m->layers[i].ops->flops)
                        m->step_macs += m->layers[i].ops->flops(&m->layers[i]) * B;
        for (int i = m->n - 1; i >= m->first_param; i--) {
                sc_layer_t *l = &m->layers[i];
                const float *xin = i ? m->out[i - 1] : x;
                float *dx = NULL;
                if (l->skip_backward)
                        continue; /* in place: the gradient stays in dcur */
                if (i > m->first_param) {
                        if (!l->inplace_bwd)
                                g ^= 1;
                        dx = m->gbuf[g];
                }
                l->ops->backward(l, xin, m->out[i], dcur, dx, B);
                m->step_macs += l->bwd_macs;
                dcur = dx;
        }
        return loss;
}

sc_err_t sc_model_recalibrate(sc_model_t *model, const float *x, size_t n, int B)
{
        sc_model_t *m = model;
        float saved[SC_MODEL_MAX_LAYERS], saved_decay[SC_MODEL_MAX_LAYERS];
        int saved_warmup[SC_MODEL_MAX_LAYERS];

        if (!m || !x || n == 0 || B < 1)
                return SC_ERR_INVAL;
        if (!m->nstate)
                return SC_OK;
        if ((size_t)B > n)
                B = (int)n;
        if (reserve(m, B))
                return SC_ERR_NOMEM;
        /* standardize layers keep their statistics and do not learn */
        float *keep = malloc(m->nstate * sizeof(float));
        if (!keep)
                return SC_ERR_NOMEM;
        memcpy(keep, m->state, m->nstate * sizeof(float));
        sc_model_reset_state(m);
        for (int i = 0; i < m->n; i++) {
                sc_layer_t *l = &m->layers[i];
                saved[i] = l->spec.momentum;
                saved_warmup[i] = l->spec.warmup;
                saved_decay[i] = l->spec.decay;
                if (l->spec.kind == SC_LAYER_STANDARDIZE) {
                        memcpy(l->state, keep + (l->state - m->state), l->ns * sizeof(float));
                        l->spec.warmup = -1; /* below any count: frozen */
                        l->spec.decay = 0.0f;
                }
        }
        const size_t numel = sc_shape_numel(m->spec.input), batches = n / (size_t)B;
        for (size_t k = 0; k < batches; k++) {
                /* momentum 1 / (k + 1): the running value is the mean over
                 * the batches so far */
                for (int i = 0; i < m->n; i++)
                        if (m->layers[i].spec.kind == SC_LAYER_BATCHNORM)
                                m->layers[i].spec.momentum = 1.0f / (float)(k + 1);
                forward(m, x + k * (size_t)B * numel, B, 1, NULL);
        }
        for (int i = 0; i < m->n; i++) {
                m->layers[i].spec.momentum = saved[i];
                m->layers[i].spec.warmup = saved_warmup[i];
                m->layers[i].spec.decay = saved_decay[i];
        }
        free(keep);
        return SC_OK;
}

static float eval_batch(sc_model_t *model, const float *x, const int32_t *labels,
                        const float *targets, int B, int *correct, float *out)
{
        sc_model_t *m = model;

        if (correct)
                *correct = 0;
        if (!m || !x || B < 1)
                return NAN;
        if (reserve(m, B))
                return NAN;
        const float *y = forward(m, x, B, 0, NULL);
        if (out)
                copy_out(m, y, B, out);
        if (m->spec.loss == SC_LOSS_SOFTMAX_XENT ? !labels : !targets)
                return 0.0f;
        return loss_of(m, y, labels, targets, B, NULL, correct);
}

sc_err_t sc_model_reserve(sc_model_t *model, int B)
{
        if (!model || B < 1)
                return SC_ERR_INVAL;
        return reserve(model, B) ? SC_ERR_NOMEM : SC_OK;
}

/* The public steps run the layers with the model's pool as the calling
 * thread's current one (sc_nn_gemm splits products across it). */
float sc_model_train_batch(sc_model_t *model, const float *x, const int32_t *labels,
                           const float *targets, int B, sc_rng_t *rng, int *correct)
{
        return sc_model_train_batch_out(model, x, labels, targets, B, rng, correct, NULL);
}

float sc_model_train_batch_out(sc_model_t *model, const float *x, const int32_t *labels,
                               const float *targets, int B, sc_rng_t *rng, int *correct, float *out)
{
        if (!model)
                return NAN;
        sync_pool(model);
        sc_nn_pool_t *prev = sc_nn_pool_enter(model->pool);
        float loss = train_batch(model, x, labels, targets, B, rng, correct, out);
        sc_nn_pool_enter(prev);
        return loss;
}

int sc_model_train_is_eval(const sc_model_t *model)
{
        for (int i = 0; i < model->spec.n_layers; i++)
                if (model->spec.layers[i].kind == SC_LAYER_DROPOUT ||
                    model->spec.layers[i].kind == SC_LAYER_BATCHNORM ||
                    model->spec.layers[i].kind == SC_LAYER_STANDARDIZE)
                        return 0;
        return 1;
}

float sc_model_eval_batch(sc_model_t *model, const float *x, const int32_t *labels,
                          const float *targets, int B, int *correct, float *out)
{
        if (correct)
                *correct = 0;
        if (!model)
                return NAN;
        sync_pool(model);
        sc_nn_pool_t *prev = sc_nn_pool_enter(model->pool);
        float loss = eval_batch(model, x, labels, targets, B, correct, out);
        sc_nn_pool_enter(prev);
        return loss;
}

sc_err_t sc_model_eval_set(sc_model_t *model, const float *x, const int32_t *y, size_t n, int chunk,
                           double *loss, size_t *correct)
{
        size_t numel = sc_shape_numel(model->spec.input), hits = 0;
        double sum = 0;
        sc_err_t err = SC_OK;
        for (size_t i = 0; i < n; i += (size_t)chunk) {
                int b = (int)(n - i < (size_t)chunk ? n - i : (size_t)chunk), c = 0;
                float l = sc_model_eval_batch(model, x + i * numel, y + i, NULL, b, &c, NULL);
                if (isnan(l))
                        err = SC_ERR_NOMEM;
                sum += (double)l * b;
                hits += (size_t)c;
        }
        if (loss)
                *loss = n ? sum / (double)n : 0;
        if (correct)
                *correct = hits;
        return err;
}
