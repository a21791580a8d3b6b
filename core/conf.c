/* conf.c — the configuration property table, defaults, cross-property checks
 * and the helpers callers use on a parsed configuration.
 *
 * Adding configuration: every property is one row of sc_conf_props[] below
 * (JSON path, type, offset into sc_conf_t, default as JSON text, range,
 * choices, description). The walker (conf_parse.c) derives nested objects
 * from the dotted paths, so a new section ("streams", "sync", "codec", "job",
 * "worker", "aggregator") is: fields in sc_conf_t (sc_conf.h), rows
 * "sync.policy", "sync.staleness", ... here, one line in sc_conf_sections[]
 * for the documentation, and any cross-property rule in sc_conf_validate().
 * Arrays of objects (a list of input streams, say) are one SC_CONF_OBJ_LIST
 * row pointing at a sub-table like sc_conf_layer_list, optionally with a tag
 * key that selects which rows apply to an element; objects handed to a
 * library verbatim are one SC_CONF_PASSTHROUGH row like "kafka". Parsing,
 * error messages with JSON paths, did-you-mean, --set overrides, the dump,
 * `scadles config --list` and docs/CONFIG.md then follow without new code. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_impl.h"

#define C(f) offsetof(sc_conf_t, f)
#define L(f) offsetof(sc_layer_spec_t, f)
#define K(k) (1u << (k))
#define R_ANY .min = NAN, .max = NAN
#define R_GE(lo) .min = (lo), .max = NAN
#define R_GT(lo) .min = (lo), .max = NAN, .flags = SC_CONF_F_MIN_EXCL
#define R_IN(lo, hi) .min = (lo), .max = (hi)

_Static_assert(SC_LAYER__END == 8, "layer names below follow sc_layer_kind_t");

static const char *const sc_conf_layer_names[] = {"dense",   "conv2d",  "maxpool2d", "relu", "tanh",
                                                  "sigmoid", "dropout", "flatten",   NULL};
static const char *const sc_conf_init_names[] = {"auto", "he", "xavier", NULL};
static const char *const sc_conf_loss_names[] = {"softmax_xent", "mse", NULL};
static const char *const sc_conf_sched_names[] = {"constant", "multistep", "cosine", NULL};
static const char *const sc_conf_source_names[] = {"fashion-mnist", "synthetic", NULL};

#define PARAMETRIC (K(SC_LAYER_DENSE) | K(SC_LAYER_CONV2D))

/* Keys of one element of model.layers (base: sc_layer_spec_t). */
static const sc_conf_prop_t sc_conf_layer_props[] = {
    {.path = "type",
     .type = SC_CONF_ENUM,
     .offset = L(kind),
     .names = sc_conf_layer_names,
     .flags = SC_CONF_F_REQUIRED,
     .def_doc = "required",
     .desc = "Layer type; decides which other keys the layer takes."},
    {.path = "units",
     .type = SC_CONF_INT,
     .offset = L(units),
     R_IN(1, 1 << 24),
     .flags = SC_CONF_F_REQUIRED,
     .kinds = K(SC_LAYER_DENSE),
     .def_doc = "required",
     .desc = "Output features of a fully connected layer."},
    {.path = "filters",
     .type = SC_CONF_INT,
     .offset = L(filters),
     R_IN(1, 1 << 16),
     .flags = SC_CONF_F_REQUIRED,
     .kinds = K(SC_LAYER_CONV2D),
     .def_doc = "required",
     .desc = "Output channels of a 2-D convolution."},
    {.path = "kernel",
     .type = SC_CONF_INT,
     .offset = L(kernel),
     R_IN(1, 1 << 10),
     .flags = SC_CONF_F_REQUIRED,
     .kinds = K(SC_LAYER_CONV2D),
     .def_doc = "required",
     .desc = "Side of the square convolution kernel."},
    {.path = "size",
     .type = SC_CONF_INT,
     .offset = L(kernel),
     R_IN(1, 1 << 10),
     .flags = SC_CONF_F_REQUIRED,
     .kinds = K(SC_LAYER_MAXPOOL2D),
     .def_doc = "required",
     .desc = "Side of the square pooling window."},
    {.path = "stride",
     .type = SC_CONF_INT,
     .offset = L(stride),
     .def = "1",
     R_IN(1, 1 << 10),
     .kinds = K(SC_LAYER_CONV2D),
     .desc = "Convolution stride."},
    {.path = "stride",
     .type = SC_CONF_INT,
     .offset = L(stride),
     R_IN(1, 1 << 10),
     .kinds = K(SC_LAYER_MAXPOOL2D),
     .def_doc = "= size",
     .desc = "Pooling stride (non-overlapping windows by default)."},
    {.path = "padding",
     .type = SC_CONF_INT,
     .offset = L(padding),
     .def = "0",
     R_IN(0, 1 << 10),
     .kinds = K(SC_LAYER_CONV2D),
     .desc = "Zero padding added on each side of the input."},
    {.path = "rate",
     .type = SC_CONF_FLOAT,
     .offset = L(rate),
     .def = "0.5",
     .min = 0,
     .max = 1,
     .flags = SC_CONF_F_MAX_EXCL,
     .kinds = K(SC_LAYER_DROPOUT),
     .desc = "Probability of zeroing an activation while training (off at evaluation)."},
    {.path = "init",
     .type = SC_CONF_ENUM,
     .offset = L(init),
     .names = sc_conf_init_names,
     .kinds = PARAMETRIC,
     .inherit = "model.init",
     .def_doc = "= model.init",
     .desc = "Weight initialization of this layer."},
};

_Static_assert(sizeof(sc_conf_layer_props) / sizeof(sc_conf_layer_props[0]) <= 32,
               "layer_given has one bit per layer key");

static const sc_conf_list_t sc_conf_layer_list = {
    .props = sc_conf_layer_props,
    .nprops = sizeof(sc_conf_layer_props) / sizeof(sc_conf_layer_props[0]),
    .elem_size = sizeof(sc_layer_spec_t),
    .tag = "type",
    .given_offset = C(layer_given),
    .elem_name = "layer",
};

const sc_conf_prop_t sc_conf_props[] = {
    /* model */
    {.path = "model.input",
     .type = SC_CONF_SHAPE,
     .offset = C(model.input),
     .def = "[1, 28, 28]",
     R_IN(1, 1 << 16),
     .desc = "Shape of one input sample: [channels, height, width] for images, [n] for a "
             "flat vector of n features."},
    {.path = "model.layers",
     .type = SC_CONF_OBJ_LIST,
     .offset = C(model.layers),
     .size = SC_MODEL_MAX_LAYERS,
     .count_offset = C(model.n_layers),
     .list = &sc_conf_layer_list,
     .def_doc = "[]",
     .desc = "The layers in order, input to output; each an object with a \"type\" and "
             "that type's keys (see the layer table below)."},
    {.path = "model.loss",
     .type = SC_CONF_ENUM,
     .offset = C(model.loss),
     .def = "\"softmax_xent\"",
     .names = sc_conf_loss_names,
     .desc = "Loss: softmax cross-entropy over class logits, or mean squared error."},
    {.path = "model.init",
     .type = SC_CONF_ENUM,
     .offset = C(init),
     .def = "\"auto\"",
     .names = sc_conf_init_names,
     .desc = "Weight initialization of layers without their own \"init\": auto = He before "
             "relu, Xavier otherwise."},

    /* optim */
    {.path = "optim.lr",
     .type = SC_CONF_DOUBLE,
     .offset = C(optim.lr),
     .def = "0.01",
     R_GT(0),
     .desc = "Base learning rate (before linear scaling and the schedule)."},
    {.path = "optim.momentum",
     .type = SC_CONF_DOUBLE,
     .offset = C(optim.momentum),
     .def = "0.9",
     .min = 0,
     .max = 1,
     .flags = SC_CONF_F_MAX_EXCL,
     .desc = "SGD momentum; 0 = plain SGD."},
    {.path = "optim.nesterov",
     .type = SC_CONF_BOOL,
     .offset = C(optim.nesterov),
     .def = "false",
     .desc = "Nesterov momentum (needs momentum > 0)."},
    {.path = "optim.weight_decay",
     .type = SC_CONF_DOUBLE,
     .offset = C(optim.weight_decay),
     .def = "0",
     R_GE(0),
     .desc = "L2 weight decay added to the gradient."},
    {.path = "optim.base_batch",
     .type = SC_CONF_DOUBLE,
     .offset = C(optim.base_batch),
     .def = "0",
     R_GE(0),
     .desc = "Linear LR scaling: lr * batch / base_batch, batch being the global batch "
             "actually trained on; 0 = off."},
    {.path = "optim.schedule.type",
     .type = SC_CONF_ENUM,
     .offset = C(optim.sched.kind),
     .def = "\"constant\"",
     .names = sc_conf_sched_names,
     .desc = "Learning-rate schedule: constant; multistep (lr * gamma^milestones passed); "
             "cosine (lr down to min_lr over total_steps after warmup)."},
    {.path = "optim.schedule.warmup_steps",
     .type = SC_CONF_LONG,
     .offset = C(optim.sched.warmup_steps),
     .def = "0",
     R_GE(0),
     .desc = "Linear warmup from lr / warmup_steps up to lr, in optimizer steps; 0 = none."},
    {.path = "optim.schedule.warmup_epochs",
     .type = SC_CONF_DOUBLE,
     .offset = C(optim.warmup_epochs),
     .def = "0",
     R_GE(0),
     .desc = "Warmup in epochs (offline training); instead of warmup_steps."},
    {.path = "optim.schedule.total_steps",
     .type = SC_CONF_LONG,
     .offset = C(optim.sched.total_steps),
     .def = "0",
     R_GE(0),
     .desc = "Cosine horizon in optimizer steps; 0 = the whole run (train.epochs)."},
    {.path = "optim.schedule.total_epochs",
     .type = SC_CONF_DOUBLE,
     .offset = C(optim.total_epochs),
     .def = "0",
     R_GE(0),
     .desc = "Cosine horizon in epochs; instead of total_steps."},
    {.path = "optim.schedule.min_lr",
     .type = SC_CONF_DOUBLE,
     .offset = C(optim.sched.min_lr),
     .def = "0",
     R_GE(0),
     .desc = "Cosine floor (at most optim.lr)."},
    {.path = "optim.schedule.milestones",
     .type = SC_CONF_LONG_LIST,
     .offset = C(optim.sched.milestones),
     .def = "[]",
     R_GE(1),
     .size = SC_SCHED_MAX_MILESTONES,
     .count_offset = C(optim.sched.n_milestones),
     .desc = "Multistep: optimizer steps at which lr is multiplied by gamma (ascending)."},
    {.path = "optim.schedule.milestones_epochs",
     .type = SC_CONF_DOUBLE_LIST,
     .offset = C(optim.milestones_epochs),
     .def = "[]",
     R_GT(0),
     .size = SC_SCHED_MAX_MILESTONES,
     .count_offset = C(optim.n_milestones_epochs),
     .desc = "Multistep milestones in epochs (ascending); instead of milestones."},
    {.path = "optim.schedule.gamma",
     .type = SC_CONF_DOUBLE,
     .offset = C(optim.sched.gamma),
     .def = "0.1",
     .min = 0,
     .max = 1,
     .flags = SC_CONF_F_MIN_EXCL,
     .desc = "Multistep factor applied at each milestone."},

    /* train */
    {.path = "train.epochs",
     .type = SC_CONF_INT,
     .offset = C(train.epochs),
     .def = "10",
     R_IN(1, 1000000),
     .desc = "Passes over the training set (offline training)."},
    {.path = "train.batch",
     .type = SC_CONF_INT,
     .offset = C(train.batch),
     .def = "64",
     R_IN(1, 65536),
     .desc = "Mini-batch size in samples."},
    {.path = "train.seed",
     .type = SC_CONF_UINT64,
     .offset = C(train.seed),
     .def = "42",
     R_ANY,
     .desc = "Seed of every random choice (initialization, shuffling, dropout, "
             "synthetic data); same seed, same run."},
    {.path = "train.threads",
     .type = SC_CONF_INT,
     .offset = C(train.threads),
     .def = "1",
     R_IN(1, 256),
     .desc = "BLAS threads."},
    {.path = "train.checkpoint",
     .type = SC_CONF_STRING,
     .offset = C(train.checkpoint),
     .def = "\"\"",
     .size = SC_CONF_PATH_MAX,
     .desc = "File the trained model is saved to; empty = do not save."},
    {.path = "train.progress_interval",
     .type = SC_CONF_DOUBLE,
     .offset = C(train.progress_interval),
     .def = "5",
     R_GE(0),
     .desc = "Seconds between progress lines; 0 = one line per epoch."},

    /* data */
    {.path = "data.source",
     .type = SC_CONF_STRING,
     .offset = C(data.source),
     .def = "\"fashion-mnist\"",
     .size = sizeof(((sc_conf_data_t *)0)->source),
     .names = sc_conf_source_names,
     .desc = "Training data: Fashion-MNIST IDX files, or generated synthetic classes."},
    {.path = "data.dir",
     .type = SC_CONF_STRING,
     .offset = C(data.dir),
     .def = "\"/usr/share/datasets/fashion-mnist\"",
     .size = SC_CONF_PATH_MAX,
     .desc = "Folder of train-images-idx3-ubyte.gz and the other IDX files (Debian package "
             "dataset-fashion-mnist)."},
    {.path = "data.mean",
     .type = SC_CONF_DOUBLE,
     .offset = C(data.mean),
     .def = "0.286",
     R_ANY,
     .desc = "Normalization (x - mean) / std after scaling pixels to [0, 1]."},
    {.path = "data.std",
     .type = SC_CONF_DOUBLE,
     .offset = C(data.std),
     .def = "0.353",
     R_GT(0),
     .desc = "Normalization divisor (see data.mean)."},
    {.path = "data.synthetic.train",
     .type = SC_CONF_INT,
     .offset = C(data.synth_train),
     .def = "6000",
     R_IN(1, 100000000),
     .desc = "Synthetic training samples."},
    {.path = "data.synthetic.test",
     .type = SC_CONF_INT,
     .offset = C(data.synth_test),
     .def = "1000",
     R_IN(1, 100000000),
     .desc = "Synthetic test samples."},
    {.path = "data.synthetic.classes",
     .type = SC_CONF_INT,
     .offset = C(data.synth_classes),
     .def = "10",
     R_IN(2, 100000),
     .desc = "Synthetic classes (one prototype each)."},
    {.path = "data.synthetic.noise",
     .type = SC_CONF_DOUBLE,
     .offset = C(data.synth_noise),
     .def = "1",
     R_GE(0),
     .desc = "Standard deviation of the per-sample noise around a class prototype "
             "(prototype entries are standard normal)."},

    /* kafka */
    {.path = "kafka",
     .type = SC_CONF_PASSTHROUGH,
     .offset = C(kafka),
     .def_doc = "{}",
     .desc = "librdkafka properties (\"bootstrap.servers\", \"security.protocol\", ...) "
             "passed through unchanged; values are strings, numbers or booleans."},
};
const size_t sc_conf_nprops = sizeof(sc_conf_props) / sizeof(sc_conf_props[0]);

const sc_conf_section_t sc_conf_sections[] = {
    {"model", "The network: input shape, layers, loss and initialization. Shapes are "
              "checked when the model is built; those errors name "
              "`$.model.layers[i]` too."},
    {"optim", "SGD with momentum, the learning-rate schedule and linear LR scaling. "
              "Schedule times are in optimizer steps, or in epochs with the `*_epochs` "
              "twins (give one of each pair)."},
    {"train", "Offline training (`scadles train`)."},
    {"data", "The data set for offline training."},
    {"kafka", "librdkafka client properties, passed through unchanged."},
};
const size_t sc_conf_nsections = sizeof(sc_conf_sections) / sizeof(sc_conf_sections[0]);

const sc_conf_prop_t *sc_conf_find(const sc_conf_prop_t *props, size_t n, const char *path)
{
        for (size_t i = 0; i < n; i++)
                if (!strcmp(props[i].path, path))
                        return &props[i];
        return NULL;
}

void sc_conf_defaults(sc_conf_t *conf)
{
        memset(conf, 0, sizeof(*conf));
        snprintf(conf->origin, sizeof(conf->origin), "defaults");
        for (size_t i = 0; i < sc_conf_nprops; i++) {
                const sc_conf_prop_t *p = &sc_conf_props[i];
                if (!p->def)
                        continue;
                json_t *v = json_loads(p->def, JSON_DECODE_ANY, NULL);
                /* A bad default is caught by the unit tests; NOMEM leaves zero. */
                if (v)
                        sc_conf_parse_value(p, v, conf, conf, "default", p->path, NULL, 0);
                json_decref(v);
        }
}

void sc_conf_free(sc_conf_t *conf)
{
        if (!conf)
                return;
        json_decref((json_t *)conf->kafka);
        conf->kafka = NULL;
}

/* Gives list elements the value of their "inherit" property unless given. */
static void sc_conf_inherit(sc_conf_t *conf)
{
        for (size_t i = 0; i < sc_conf_nprops; i++) {
                const sc_conf_prop_t *p = &sc_conf_props[i];
                if (p->type != SC_CONF_OBJ_LIST)
                        continue;
                const sc_conf_list_t *l = p->list;
                int count = *(int *)((char *)conf + p->count_offset);
                const uint32_t *given = (const uint32_t *)((char *)conf + l->given_offset);
                const sc_conf_prop_t *tag =
                    l->tag ? sc_conf_find(l->props, l->nprops, l->tag) : NULL;
                for (int e = 0; e < count; e++) {
                        char *elem = (char *)conf + p->offset + (size_t)e * l->elem_size;
                        int kind = tag ? *(int *)(elem + tag->offset) : 0;
                        for (size_t j = 0; j < l->nprops; j++) {
                                const sc_conf_prop_t *q = &l->props[j];
                                if (!q->inherit || (given[e] >> j & 1u) ||
                                    (q->kinds && !(q->kinds >> kind & 1u)))
                                        continue;
                                const sc_conf_prop_t *src =
                                    sc_conf_find(sc_conf_props, sc_conf_nprops, q->inherit);
                                if (src && src->type == q->type && q->type == SC_CONF_ENUM)
                                        memcpy(elem + q->offset, (char *)conf + src->offset,
                                               sizeof(int));
                        }
                }
        }
}

sc_err_t sc_conf_validate(sc_conf_t *conf, char *errstr, size_t errstr_size)
{
        const char *o = conf->origin;
        sc_conf_optim_t *op = &conf->optim;
        const sc_sched_spec_t *s = &op->sched;

        if (op->nesterov && op->momentum <= 0)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.nesterov",
                                    "needs optim.momentum > 0");
        if (s->warmup_steps > 0 && op->warmup_epochs > 0)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.schedule.warmup_epochs",
                                    "give warmup_steps or warmup_epochs, not both");
        if (s->total_steps > 0 && op->total_epochs > 0)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.schedule.total_epochs",
                                    "give total_steps or total_epochs, not both");
        if (s->n_milestones > 0 && op->n_milestones_epochs > 0)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.schedule.milestones_epochs",
                                    "give milestones or milestones_epochs, not both");
        if (s->kind == SC_SCHED_MULTISTEP && s->n_milestones == 0 && op->n_milestones_epochs == 0)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.schedule.milestones",
                                    "the multistep schedule needs at least one milestone");
        if (s->kind == SC_SCHED_COSINE && s->min_lr > op->lr)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.schedule.min_lr",
                                    "exceeds optim.lr (%g > %g)", s->min_lr, op->lr);
        if (s->kind == SC_SCHED_COSINE && s->total_steps > 0 && s->warmup_steps >= s->total_steps)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.schedule.warmup_steps",
                                    "must be less than total_steps (%ld >= %ld)", s->warmup_steps,
                                    s->total_steps);
        if (s->kind == SC_SCHED_COSINE && op->total_epochs > 0 &&
            op->warmup_epochs >= op->total_epochs)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.schedule.warmup_epochs",
                                    "must be less than total_epochs (%g >= %g)", op->warmup_epochs,
                                    op->total_epochs);
        conf->optim.sched.lr = op->lr;
        sc_conf_inherit(conf);
        return SC_OK;
}

sc_err_t sc_conf_sched_steps(const sc_conf_t *conf, long steps_per_epoch, sc_sched_spec_t *out,
                             char *errstr, size_t errstr_size)
{
        const sc_conf_optim_t *op = &conf->optim;
        double spe = (double)steps_per_epoch;

        if (steps_per_epoch < 1)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "steps per epoch must be >= 1 (got %ld)", steps_per_epoch);
        *out = op->sched;
        out->lr = op->lr;
        if (op->warmup_epochs > 0)
                out->warmup_steps = lround(op->warmup_epochs * spe);
        if (op->total_epochs > 0)
                out->total_steps = lround(op->total_epochs * spe);
        if (op->n_milestones_epochs > 0) {
                out->n_milestones = op->n_milestones_epochs;
                for (int i = 0; i < op->n_milestones_epochs; i++) {
                        out->milestones[i] = lround(op->milestones_epochs[i] * spe);
                        if (i > 0 && out->milestones[i] <= out->milestones[i - 1])
                                return sc_conf_fail(
                                    errstr, errstr_size, conf->origin,
                                    "$.optim.schedule.milestones_epochs",
                                    "epochs %g and %g fall on the same step with %ld steps "
                                    "per epoch",
                                    op->milestones_epochs[i - 1], op->milestones_epochs[i],
                                    steps_per_epoch);
                }
        }
        if (out->total_steps == 0)
                out->total_steps = (long)conf->train.epochs * steps_per_epoch;
        if (out->kind == SC_SCHED_COSINE && out->warmup_steps >= out->total_steps)
                return sc_conf_fail(errstr, errstr_size, conf->origin,
                                    "$.optim.schedule.warmup_steps",
                                    "warmup (%ld steps) must be shorter than the run (%ld steps)",
                                    out->warmup_steps, out->total_steps);
        return SC_OK;
}

void sc_conf_model_error(const sc_conf_t *conf, char *errstr, size_t errstr_size)
{
        char msg[1024];

        if (!errstr || errstr_size == 0)
                return;
        snprintf(msg, sizeof(msg), "%s", errstr);
        snprintf(errstr, errstr_size, "%s: $.model.%s", conf->origin, msg);
}

int sc_conf_kafka_foreach(const sc_conf_t *conf, sc_conf_kv_fn fn, void *opaque)
{
        const char *key;
        json_t *v;
        char buf[64];

        if (!conf->kafka)
                return 0;
        json_object_foreach((json_t *)conf->kafka, key, v)
        {
                const char *s = buf;
                if (json_is_string(v)) {
                        s = json_string_value(v);
                } else if (json_is_integer(v)) {
                        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                } else if (json_is_real(v)) {
                        double d = json_real_value(v);
                        /* librdkafka reads integer properties only without an exponent. */
                        if (d == floor(d) && fabs(d) < 1e15) {
                                snprintf(buf, sizeof(buf), "%.0f", d);
                        } else {
                                for (int prec = 1; prec <= 17; prec++) {
                                        snprintf(buf, sizeof(buf), "%.*g", prec, d);
                                        if (strtod(buf, NULL) == d)
                                                break;
                                }
                        }
                } else {
                        s = json_is_true(v) ? "true" : "false";
                }
                int rc = fn(key, s, opaque);
                if (rc)
                        return rc;
        }
        return 0;
}

const char *sc_conf_prop_name(size_t i)
{
        static char names[64][96];
        size_t k = 0;

        for (size_t r = 0; r < sc_conf_nprops; r++) {
                const sc_conf_prop_t *p = &sc_conf_props[r];
                if (k++ == i)
                        return p->path;
                if (p->type != SC_CONF_OBJ_LIST)
                        continue;
                for (size_t j = 0; j < p->list->nprops; j++, k++) {
                        if (k != i)
                                continue;
                        if (k >= 64)
                                return NULL;
                        snprintf(names[k], sizeof(names[k]), "%s[].%s", p->path,
                                 p->list->props[j].path);
                        return names[k];
                }
        }
        return NULL;
}
