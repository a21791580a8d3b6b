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
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_impl.h"
#include "sc_codec.h"
#include "sc_decode.h"

#define C(f) offsetof(sc_conf_t, f)
#define L(f) offsetof(sc_layer_spec_t, f)
#define K(k) (1u << (k))
#define R_ANY .min = NAN, .max = NAN
#define R_GE(lo) .min = (lo), .max = NAN
#define R_GT(lo) .min = (lo), .max = NAN, .flags = SC_CONF_F_MIN_EXCL
#define R_IN(lo, hi) .min = (lo), .max = (hi)

_Static_assert(SC_LAYER__END == 9, "layer names below follow sc_layer_kind_t");

static const char *const sc_conf_layer_names[] = {"dense",     "conv2d",  "maxpool2d", "relu",
                                                  "tanh",      "sigmoid", "dropout",   "flatten",
                                                  "batchnorm", NULL};
static const char *const sc_conf_init_names[] = {"auto", "he", "xavier", NULL};
static const char *const sc_conf_loss_names[] = {"softmax_xent", "mse", NULL};
static const char *const sc_conf_sched_names[] = {"constant", "multistep", "cosine", NULL};
static const char *const sc_conf_source_names[] = {"fashion-mnist", "synthetic", NULL};
/* Streaming enums: indices follow sc_decode_format_t, sc_conf_label_t,
 * sc_decode_label_encoding_t, sc_decode_dtype_t, sc_stream_policy_t and
 * sc_batch_mode_t. */
static const char *const sc_conf_format_names[] = {"json", "csv", "raw", NULL};
static const char *const sc_conf_label_names[] = {"auto", "field", "key", "header", "offset", NULL};
static const char *const sc_conf_label_enc_names[] = {"ascii", "byte", NULL};
static const char *const sc_conf_dtype_names[] = {"u8", "f32", NULL};
static const char *const sc_conf_policy_names[] = {"persist", "truncate", NULL};
static const char *const sc_conf_batch_names[] = {"rate", "fixed", NULL};
static const char *const sc_conf_eval_format_names[] = {"auto", "csv", "json", "idx", NULL};
/* Job enums: indices follow sc_sync_kind_t, sc_codec_id_t and sc_conf_publish_t. */
static const char *const sc_conf_sync_names[] = {"bsp",     "scadles", "asp",      "ssp",
                                                 "adacomp", "adsp",    "localsgd", NULL};
static const char *const sc_conf_codec_names[] = {"none",     "topk", "randk", "adacomp",
                                                  "adaptive", "q8",   "fp16",  NULL};
static const char *const sc_conf_publish_names[] = {"auto", "every", "interval", NULL};
static const char *const sc_conf_robust_names[] = {"none", "trimmed_mean", "median", NULL};
_Static_assert(SC_SYNC__END == 7, "sync names above follow sc_sync_kind_t");
_Static_assert(SC_CODEC__END == 7, "codec names above follow sc_codec_id_t");
_Static_assert(sizeof(((sc_sync_spec_t *)0)->ada_window) == sizeof(int),
               "job.sync.ada_window is parsed as an int");

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
    {.path = "momentum",
     .type = SC_CONF_FLOAT,
     .offset = L(momentum),
     .def = "0.1",
     .min = 0,
     .max = 1,
     .flags = SC_CONF_F_MIN_EXCL,
     .kinds = K(SC_LAYER_BATCHNORM),
     .desc = "Batch normalization (per feature of a dense output, per channel of a conv "
             "output): weight of each training batch's mean and variance in the running "
             "statistics used at evaluation. gamma and beta are trained; the running "
             "statistics are each process's (each simulated device's, each worker's) own "
             "state, not parameters: not averaged or sent, but saved in and restored "
             "from checkpoints."},
    {.path = "eps",
     .type = SC_CONF_FLOAT,
     .offset = L(eps),
     .def = "1e-05",
     R_GT(0),
     .kinds = K(SC_LAYER_BATCHNORM),
     .desc = "Batch normalization: added to the variance before its square root."},
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

#define T(f) offsetof(sc_conf_topic_t, f)

/* Keys of one element of source.topics (base: sc_conf_topic_t); every
 * decoder key not given takes the streams.* value (sc_conf_inherit_scalars). */
static const sc_conf_prop_t sc_conf_topic_props[] = {
    {.path = "topic",
     .type = SC_CONF_STRING,
     .offset = T(topic),
     .flags = SC_CONF_F_REQUIRED,
     .size = SC_CONF_TOPIC_MAX,
     .def_doc = "required",
     .desc = "Topic name (one stream per topic)."},
    {.path = "format",
     .type = SC_CONF_ENUM,
     .offset = T(decode.format),
     .names = sc_conf_format_names,
     .inherit = "streams.format",
     .def_doc = "= streams.format",
     .desc = "This topic's streams.format."},
    {.path = "label",
     .type = SC_CONF_ENUM,
     .offset = T(decode.label),
     .names = sc_conf_label_names,
     .inherit = "streams.label",
     .def_doc = "= streams.label",
     .desc = "This topic's streams.label."},
    {.path = "label_encoding",
     .type = SC_CONF_ENUM,
     .offset = T(decode.label_encoding),
     .names = sc_conf_label_enc_names,
     .inherit = "streams.label_encoding",
     .def_doc = "= streams.label_encoding",
     .desc = "This topic's streams.label_encoding."},
    {.path = "label_header",
     .type = SC_CONF_STRING,
     .offset = T(decode.label_header),
     .size = 64,
     .inherit = "streams.label_header",
     .def_doc = "= streams.label_header",
     .desc = "This topic's streams.label_header."},
    {.path = "features_path",
     .type = SC_CONF_STRING,
     .offset = T(decode.features_path),
     .size = 128,
     .inherit = "streams.features_path",
     .def_doc = "= streams.features_path",
     .desc = "This topic's streams.features_path."},
    {.path = "label_path",
     .type = SC_CONF_STRING,
     .offset = T(decode.label_path),
     .size = 128,
     .inherit = "streams.label_path",
     .def_doc = "= streams.label_path",
     .desc = "This topic's streams.label_path."},
    {.path = "delimiter",
     .type = SC_CONF_STRING,
     .offset = T(decode.delimiter),
     .size = 2,
     .inherit = "streams.delimiter",
     .def_doc = "= streams.delimiter",
     .desc = "This topic's streams.delimiter."},
    {.path = "label_column",
     .type = SC_CONF_INT,
     .offset = T(decode.label_column),
     R_IN(0, 1 << 20),
     .inherit = "streams.label_column",
     .def_doc = "= streams.label_column",
     .desc = "This topic's streams.label_column."},
    {.path = "first_feature_column",
     .type = SC_CONF_INT,
     .offset = T(decode.first_feature_column),
     R_IN(0, 1 << 20),
     .inherit = "streams.first_feature_column",
     .def_doc = "= streams.first_feature_column",
     .desc = "This topic's streams.first_feature_column."},
    {.path = "columns",
     .type = SC_CONF_INT,
     .offset = T(decode.columns),
     R_IN(0, 1 << 24),
     .inherit = "streams.columns",
     .def_doc = "= streams.columns",
     .desc = "This topic's streams.columns."},
    {.path = "dtype",
     .type = SC_CONF_ENUM,
     .offset = T(decode.dtype),
     .names = sc_conf_dtype_names,
     .inherit = "streams.dtype",
     .def_doc = "= streams.dtype",
     .desc = "This topic's streams.dtype."},
    {.path = "data_offset",
     .type = SC_CONF_LONG,
     .offset = T(decode.data_offset),
     R_IN(0, 1 << 30),
     .inherit = "streams.data_offset",
     .def_doc = "= streams.data_offset",
     .desc = "This topic's streams.data_offset."},
    {.path = "label_offset",
     .type = SC_CONF_LONG,
     .offset = T(decode.label_offset),
     R_IN(0, 1 << 30),
     .inherit = "streams.label_offset",
     .def_doc = "= streams.label_offset",
     .desc = "This topic's streams.label_offset."},
    {.path = "scale",
     .type = SC_CONF_DOUBLE,
     .offset = T(decode.scale),
     R_ANY,
     .inherit = "streams.scale",
     .def_doc = "= streams.scale",
     .desc = "This topic's streams.scale."},
    {.path = "mean",
     .type = SC_CONF_DOUBLE,
     .offset = T(decode.mean),
     R_ANY,
     .inherit = "streams.mean",
     .def_doc = "= streams.mean",
     .desc = "This topic's streams.mean."},
    {.path = "std",
     .type = SC_CONF_DOUBLE,
     .offset = T(decode.std),
     R_GT(0),
     .inherit = "streams.std",
     .def_doc = "= streams.std",
     .desc = "This topic's streams.std."},
};

_Static_assert(sizeof(sc_conf_topic_props) / sizeof(sc_conf_topic_props[0]) <= 32,
               "topic_given has one bit per topic key");

static const sc_conf_list_t sc_conf_topic_list = {
    .props = sc_conf_topic_props,
    .nprops = sizeof(sc_conf_topic_props) / sizeof(sc_conf_topic_props[0]),
    .elem_size = sizeof(sc_conf_topic_t),
    .tag = NULL,
    .given_offset = C(topic_given),
    .elem_name = "topic",
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
     .desc = "Compute threads of the model: each training step splits its large matrix "
             "products across them (same results run to run for a given count)."},
    {.path = "train.checkpoint",
     .type = SC_CONF_STRING,
     .offset = C(train.checkpoint),
     .def = "\"\"",
     .size = SC_CONF_PATH_MAX,
     .desc = "Checkpoint the model is saved to (docs/MODEL.md), atomically: by `train` at the "
             "end, by the worker, the plugin and the aggregator (the job's whole model) at "
             "train.checkpoint_interval and when they stop; empty = do not save."},
    {.path = "train.progress_interval",
     .type = SC_CONF_DOUBLE,
     .offset = C(train.progress_interval),
     .def = "5",
     R_GE(0),
     .desc = "Seconds between progress lines; 0 = one line per epoch."},
    {.path = "train.checkpoint_interval",
     .type = SC_CONF_DOUBLE,
     .offset = C(train.checkpoint_interval),
     .def = "0",
     R_GE(0),
     .desc = "Seconds between checkpoints (train.checkpoint) written by the worker, the "
             "aggregator and the plugin while they run; 0 = only when they stop. Every write is "
             "atomic (a temporary file renamed)."},

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

    /* eval */
    {.path = "eval.file",
     .type = SC_CONF_STRING,
     .offset = C(eval.file),
     .def = "\"\"",
     .size = SC_CONF_PATH_MAX,
     .desc = "Held-out set: a file of CSV lines or JSON Lines (one record per line, decoded like "
             "a stream record), or IDX images (plain or gzip, with eval.labels); \"\" = none "
             "(Fashion-MNIST's t10k set through data.*, or prequential evaluation only)."},
    {.path = "eval.labels",
     .type = SC_CONF_STRING,
     .offset = C(eval.labels),
     .def = "\"\"",
     .size = SC_CONF_PATH_MAX,
     .desc = "IDX labels file (unsigned bytes, 1 dimension) of an IDX eval.file."},
    {.path = "eval.topic",
     .type = SC_CONF_STRING,
     .offset = C(eval.topic),
     .def = "\"\"",
     .size = SC_CONF_TOPIC_MAX,
     .desc = "Held-out topic: every partition read from its start to its end offset when the "
             "process starts, kept in memory; \"\" = none. Not with eval.file."},
    {.path = "eval.decoder",
     .type = SC_CONF_STRING,
     .offset = C(eval.decoder),
     .def = "\"\"",
     .size = SC_CONF_TOPIC_MAX,
     .desc = "Topic of source.topics whose decoder (format, columns, label, scale, mean, std) "
             "reads the held-out records, so training and evaluation share one normalization; "
             "\"\" = eval.topic's element if listed, else streams.*."},
    {.path = "eval.format",
     .type = SC_CONF_ENUM,
     .offset = C(eval.format),
     .def = "\"auto\"",
     .names = sc_conf_eval_format_names,
     .desc = "Format of eval.file: auto (IDX when it starts with the IDX or gzip magic, else "
             "lines in the decoder's format), csv, json (JSON Lines) or idx (bytes decoded with "
             "the decoder's scale, mean and std)."},
    {.path = "eval.window",
     .type = SC_CONF_LONG,
     .offset = C(eval.window),
     .def = "1000",
     R_IN(1, 1 << 24),
     .desc = "Prequential evaluation (every batch scored by the current model before it "
             "trains): samples of the sliding window reported next to the since-start figures."},

    /* kafka */
    {.path = "kafka",
     .type = SC_CONF_PASSTHROUGH,
     .offset = C(kafka),
     .def_doc = "{}",
     .desc = "librdkafka properties (\"bootstrap.servers\", \"security.protocol\", ...) "
             "passed through unchanged; values are strings, numbers or booleans. `config "
             "--check` sets each on a throwaway librdkafka configuration (an unknown name or a "
             "refused value is an error); values of secrets (names containing password, "
             "secret, key.pem or oauthbearer.config) print as \"(redacted)\"."},
    {.path = "kafka_consumer",
     .type = SC_CONF_PASSTHROUGH,
     .offset = C(kafka_consumer),
     .def_doc = "{}",
     .desc = "librdkafka properties for the consumers only (the worker's source, the "
             "aggregator's, the J.bcast, J.inject and eval readers); they win over `kafka` and "
             "`config --check` checks "
             "them the same way."},
    {.path = "kafka_producer",
     .type = SC_CONF_PASSTHROUGH,
     .offset = C(kafka_producer),
     .def_doc = "{}",
     .desc = "librdkafka properties for the producers only (J.grad, J.model, J.bcast, "
             "J.ctl, J.inject, dead letters); they win over `kafka` and `config --check` checks "
             "them the "
             "same way."},

    /* source */
    {.path = "source.group_id",
     .type = SC_CONF_STRING,
     .offset = C(source.group_id),
     .def = "\"scadles\"",
     .size = SC_CONF_TOPIC_MAX,
     .desc = "Kafka consumer group of the workers (kafka.group.id, if given, wins)."},
    {.path = "source.topics",
     .type = SC_CONF_OBJ_LIST,
     .offset = C(source.topics),
     .size = SC_CONF_MAX_TOPICS,
     .count_offset = C(source.n_topics),
     .list = &sc_conf_topic_list,
     .def_doc = "[]",
     .desc = "Topics to consume, each an object {\"topic\": name} with optional decoder keys that "
             "override streams.* for that topic (see the table below)."},
    {.path = "source.pattern",
     .type = SC_CONF_STRING,
     .offset = C(source.pattern),
     .def = "\"\"",
     .size = SC_CONF_TOPIC_MAX,
     .desc = "Also consume every topic whose name matches this POSIX extended regex, e.g. "
             "\"^fmnist\\\\..*\" (Kafka's \"^\" subscription; new topics join at the next metadata "
             "refresh); they use streams.* unless listed in source.topics; \"\" = none. It "
             "must compile (regcomp) when the configuration is checked, to at most 2000 nodes "
             "(a repetition of a repetition, as in ((a)+){9}, multiplies them); two repetition "
             "operators in a row (a+*) are refused."},
    {.path = "source.dead_letter_topic",
     .type = SC_CONF_STRING,
     .offset = C(source.dead_letter),
     .def = "\"\"",
     .size = SC_CONF_TOPIC_MAX,
     .desc = "Malformed records are produced here (original key and value; headers scadles.error, "
             "scadles.topic, scadles.partition, scadles.offset); \"\" = only counted and logged."},
    {.path = "source.unlabelled",
     .type = SC_CONF_BOOL,
     .offset = C(source.unlabelled),
     .def = "false",
     .desc = "Records carry no label: every decoder reads its layout without the label (a CSV "
             "label column before the features and a raw label byte before the tensor are taken "
             "out; JSON's label_path, key and header labels are not read). For `scadles predict` "
             "(--unlabelled) only: a worker, which trains on labels, refuses it."},

    /* streams */
    {.path = "streams.format",
     .type = SC_CONF_ENUM,
     .offset = C(streams.decode.format),
     .def = "\"json\"",
     .names = sc_conf_format_names,
     .desc = "Record format: json (an object), csv (one delimited line) or raw (a little-endian "
             "tensor of exactly the model's input numel elements)."},
    {.path = "streams.label",
     .type = SC_CONF_ENUM,
     .offset = C(streams.decode.label),
     .def = "\"auto\"",
     .names = sc_conf_label_names,
     .desc =
         "Where the label is: auto (json/csv: the field; raw: the key), field (label_path or "
         "label_column), key, header (label_header) or offset (raw: the byte at label_offset)."},
    {.path = "streams.label_encoding",
     .type = SC_CONF_ENUM,
     .offset = C(streams.decode.label_encoding),
     .def = "\"ascii\"",
     .names = sc_conf_label_enc_names,
     .desc =
         "How a key or header carries the label: a decimal ASCII integer, or exactly one byte."},
    {.path = "streams.label_header",
     .type = SC_CONF_STRING,
     .offset = C(streams.decode.label_header),
     .def = "\"label\"",
     .size = 64,
     .desc = "Name of the header holding the label (label = header)."},
    {.path = "streams.features_path",
     .type = SC_CONF_STRING,
     .offset = C(streams.decode.features_path),
     .def = "\"$.features\"",
     .size = 128,
     .desc = "json: path (\"$\" then .name and [index] steps) of the array of features; nested "
             "arrays are flattened."},
    {.path = "streams.label_path",
     .type = SC_CONF_STRING,
     .offset = C(streams.decode.label_path),
     .def = "\"$.label\"",
     .size = 128,
     .desc = "json: path of the integer label."},
    {.path = "streams.delimiter",
     .type = SC_CONF_STRING,
     .offset = C(streams.decode.delimiter),
     .def = "\",\"",
     .size = 2,
     .desc = "csv: the one-character column delimiter."},
    {.path = "streams.label_column",
     .type = SC_CONF_INT,
     .offset = C(streams.decode.label_column),
     .def = "0",
     R_IN(0, 1 << 20),
     .desc = "csv: zero-based column of the label."},
    {.path = "streams.first_feature_column",
     .type = SC_CONF_INT,
     .offset = C(streams.decode.first_feature_column),
     .def = "1",
     R_IN(0, 1 << 20),
     .desc = "csv: zero-based column of the first feature; features are the next numel columns."},
    {.path = "streams.columns",
     .type = SC_CONF_INT,
     .offset = C(streams.decode.columns),
     .def = "0",
     R_IN(0, 1 << 24),
     .desc = "csv: exact columns per line; 0 = just enough for the label and the features."},
    {.path = "streams.dtype",
     .type = SC_CONF_ENUM,
     .offset = C(streams.decode.dtype),
     .def = "\"u8\"",
     .names = sc_conf_dtype_names,
     .desc = "raw: element type, uint8 or little-endian float32."},
    {.path = "streams.data_offset",
     .type = SC_CONF_LONG,
     .offset = C(streams.decode.data_offset),
     .def = "0",
     R_IN(0, 1 << 30),
     .desc = "raw: byte of the value where the tensor starts."},
    {.path = "streams.label_offset",
     .type = SC_CONF_LONG,
     .offset = C(streams.decode.label_offset),
     .def = "0",
     R_IN(0, 1 << 30),
     .desc = "raw with label = offset: byte of the value holding the uint8 label (outside the "
             "tensor)."},
    {.path = "streams.scale",
     .type = SC_CONF_DOUBLE,
     .offset = C(streams.decode.scale),
     .def = "1",
     R_ANY,
     .desc = "Normalization x' = (x * scale - mean) / std of every feature: the factor applied "
             "first (1/255 for pixel bytes)."},
    {.path = "streams.mean",
     .type = SC_CONF_DOUBLE,
     .offset = C(streams.decode.mean),
     .def = "0",
     R_ANY,
     .desc = "Normalization: subtracted after scaling."},
    {.path = "streams.std",
     .type = SC_CONF_DOUBLE,
     .offset = C(streams.decode.std),
     .def = "1",
     R_GT(0),
     .desc = "Normalization: the divisor applied last."},
    {.path = "streams.policy",
     .type = SC_CONF_ENUM,
     .offset = C(streams.policy),
     .def = "\"persist\"",
     .names = sc_conf_policy_names,
     .desc = "Buffer policy: persist (never drop; pause the topic's partitions at the high "
             "watermark so the backlog stays in Kafka) or truncate (keep one window of arrivals, "
             "drop and count the rest)."},
    {.path = "streams.cap",
     .type = SC_CONF_LONG,
     .offset = C(streams.cap),
     .def = "8192",
     R_IN(1, 1 << 24),
     .desc = "Samples each stream holds in memory at most."},
    {.path = "streams.high_watermark",
     .type = SC_CONF_DOUBLE,
     .offset = C(streams.high_watermark),
     .def = "0.8",
     R_IN(0, 1),
     .flags = SC_CONF_F_MIN_EXCL,
     .desc = "persist: fraction of cap at which the stream's partitions are paused."},
    {.path = "streams.low_watermark",
     .type = SC_CONF_DOUBLE,
     .offset = C(streams.low_watermark),
     .def = "0.5",
     R_IN(0, 1),
     .flags = SC_CONF_F_MAX_EXCL,
     .desc = "persist: fraction of cap below which paused partitions resume (less than "
             "high_watermark)."},
    {.path = "streams.window",
     .type = SC_CONF_DOUBLE,
     .offset = C(streams.window),
     .def = "1",
     R_IN(0, 1e6),
     .flags = SC_CONF_F_MIN_EXCL,
     .desc = "truncate: seconds of arrivals kept (at most ceil(rate * window) samples)."},
    {.path = "streams.keep_min",
     .type = SC_CONF_LONG,
     .offset = C(streams.keep_min),
     .def = "8",
     R_IN(0, 1 << 24),
     .desc = "truncate: samples kept at least (at most cap), so a batch can form."},
    {.path = "streams.rate_tau",
     .type = SC_CONF_DOUBLE,
     .offset = C(streams.rate_tau),
     .def = "1",
     R_IN(0, 1e6),
     .flags = SC_CONF_F_MIN_EXCL,
     .desc = "Time constant in seconds of the arrival-rate estimate (EWMA)."},

    /* worker */
    {.path = "worker.batch",
     .type = SC_CONF_ENUM,
     .offset = C(worker.batch),
     .def = "\"rate\"",
     .names = sc_conf_batch_names,
     .desc = "Batch assembly: rate (ScaDLES: every window, what arrived, clamped to [b_min, "
             "b_max]) or fixed (b samples as soon as b are buffered)."},
    {.path = "worker.b",
     .type = SC_CONF_INT,
     .offset = C(worker.b),
     .def = "64",
     R_IN(1, 65536),
     .desc = "fixed: samples per batch."},
    {.path = "worker.b_min",
     .type = SC_CONF_INT,
     .offset = C(worker.b_min),
     .def = "8",
     R_IN(1, 65536),
     .desc = "rate: smallest batch (at most b_max)."},
    {.path = "worker.b_max",
     .type = SC_CONF_INT,
     .offset = C(worker.b_max),
     .def = "1024",
     R_IN(1, 65536),
     .desc = "rate: largest batch."},
    {.path = "worker.window",
     .type = SC_CONF_DOUBLE,
     .offset = C(worker.window),
     .def = "1",
     R_IN(0, 1e6),
     .flags = SC_CONF_F_MIN_EXCL,
     .desc = "rate: seconds between batches at least (fixed: workers do not learn each "
             "other's rates, so there is no auto window as in the simulator, docs/SYNC.md)."},
    {.path = "worker.shuffle",
     .type = SC_CONF_INT,
     .offset = C(worker.shuffle),
     .def = "256",
     R_IN(0, 1 << 20),
     .desc = "Shuffle buffer: samples kept back to mix with later arrivals across streams (0 = "
             "shuffle within each batch only)."},
    {.path = "worker.progress_interval",
     .type = SC_CONF_DOUBLE,
     .offset = C(worker.progress_interval),
     .def = "5",
     R_GE(0),
     .desc = "Seconds between progress lines on stderr; 0 = none."},
    {.path = "worker.eval",
     .type = SC_CONF_BOOL,
     .offset = C(worker.eval),
     .def = "true",
     .desc = "Evaluate on a held-out set: the eval section's (eval.file, eval.topic), else "
             "Fashion-MNIST's t10k files (data.*); false = prequential figures only (every "
             "batch scored before it trains, always reported)."},
    {.path = "worker.eval_interval",
     .type = SC_CONF_DOUBLE,
     .offset = C(worker.eval_interval),
     .def = "10",
     R_GE(0),
     .desc = "Seconds between test evaluations; 0 = only at the end."},
    {.path = "worker.eval_samples",
     .type = SC_CONF_INT,
     .offset = C(worker.eval_samples),
     .def = "0",
     R_IN(0, 100000000),
     .desc = "Test samples used by periodic evaluations (the first n); 0 = all. The final one uses "
             "all."},
    {.path = "worker.max_samples",
     .type = SC_CONF_LONG,
     .offset = C(worker.max_samples),
     .def = "0",
     R_GE(0),
     .desc = "Stop after training on this many samples; 0 = no limit (--max-samples)."},
    {.path = "worker.duration",
     .type = SC_CONF_DOUBLE,
     .offset = C(worker.duration),
     .def = "0",
     R_GE(0),
     .desc = "Stop after this many seconds; 0 = no limit (--duration)."},
    {.path = "worker.idle_exit",
     .type = SC_CONF_DOUBLE,
     .offset = C(worker.idle_exit),
     .def = "0",
     R_GE(0),
     .desc = "Stop once no record arrived and nothing is left to train for this many seconds "
             "(three times as long while a revocation left no partition assigned and the group "
             "has not assigned any again); 0 = never (--idle-exit)."},
    {.path = "worker.commit_interval",
     .type = SC_CONF_DOUBLE,
     .offset = C(worker.commit_interval),
     .def = "1",
     R_GE(0),
     .desc = "Seconds between offset commits of what was trained, dropped or rejected; 0 = after "
             "every batch."},

    /* job (distributed training; docs/DISTRIBUTED.md) */
    {.path = "job.name",
     .type = SC_CONF_STRING,
     .offset = C(job.name),
     .def = "\"scadles\"",
     .size = SC_CONF_JOB_NAME_MAX,
     .desc = "Job name J: the topics are J.grad, J.model, J.bcast, J.inject and J.ctl, "
             "the aggregators' consumer group J.aggregators."},
    {.path = "job.shards",
     .type = SC_CONF_INT,
     .offset = C(job.shards),
     .def = "1",
     R_IN(1, 4096),
     .desc = "Model shards: contiguous even ranges of the flat parameter buffer, one per "
             "partition of J.grad, J.model and J.bcast."},
    {.path = "job.workers",
     .type = SC_CONF_INT,
     .offset = C(job.sync.n_workers),
     .def = "4",
     R_IN(1, 65536),
     .desc = "Worker ids 0 .. workers-1 the job admits."},
    {.path = "job.replication",
     .type = SC_CONF_INT,
     .offset = C(job.replication),
     .def = "-1",
     R_IN(-1, 16),
     .desc = "Replication factor of the topics the job creates; -1 takes the broker's "
             "default.replication.factor (e.g. 3 on the 3-node cluster of "
             "scripts/kafka.sh, with min.insync.replicas 2). 0 is an error."},
    {.path = "job.sync.policy",
     .type = SC_CONF_ENUM,
     .offset = C(job.sync.kind),
     .def = "\"asp\"",
     .names = sc_conf_sync_names,
     .desc = "Synchronization policy (docs/DISTRIBUTED.md)."},
    {.path = "job.sync.batch",
     .type = SC_CONF_INT,
     .offset = C(job.sync.batch),
     .def = "64",
     R_IN(1, 1 << 20),
     .desc = "Samples per worker step (bsp, asp, ssp, adacomp, local steps)."},
    {.path = "job.sync.b_min",
     .type = SC_CONF_INT,
     .offset = C(job.sync.b_min),
     .def = "8",
     R_IN(1, 1 << 20),
     .desc = "scadles: smallest rate-proportional batch."},
    {.path = "job.sync.b_max",
     .type = SC_CONF_INT,
     .offset = C(job.sync.b_max),
     .def = "1024",
     R_IN(1, 1 << 20),
     .desc = "scadles: largest rate-proportional batch."},
    {.path = "job.sync.window",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.sync.window),
     .def = "1",
     R_GT(0),
     .desc = "scadles: batch window in seconds (b_i = rate_i * window) of the policy's worker "
             "state; the Kafka workers batch on worker.window instead. No auto window here "
             "(base_batch / sum of the rates is the simulator's $.sim.window \"auto\", "
             "docs/SYNC.md)."},
    {.path = "job.sync.base_batch",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.sync.base_batch),
     .def = "0",
     R_GE(0),
     .desc = "scadles: B of the linear LR scaling lr * sum_b / B; 0 = 64 * workers."},
    {.path = "job.sync.staleness",
     .type = SC_CONF_INT,
     .offset = C(job.sync.staleness),
     .def = "40",
     R_IN(0, 1 << 30),
     .desc = "ssp: staleness bound s in worker clocks."},
    {.path = "job.sync.local_steps",
     .type = SC_CONF_INT,
     .offset = C(job.sync.local_steps),
     .def = "40",
     R_IN(1, 1 << 30),
     .desc = "localsgd: local steps tau between averages."},
    {.path = "job.sync.send_models",
     .type = SC_CONF_BOOL,
     .offset = C(job.sync.send_models),
     .def = "false",
     .desc = "localsgd: workers send models (true) or model deltas (false)."},
    {.path = "job.sync.ada_window",
     .type = SC_CONF_INT,
     .offset = C(job.sync.ada_window),
     .def = "1024",
     R_IN(1, 1 << 24),
     .desc = "adacomp: updates of exact per-coordinate staleness history kept."},
    {.path = "job.sync.gamma",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.sync.gamma),
     .def = "60",
     R_GT(0),
     .desc = "adsp: check period Gamma in seconds."},
    {.path = "job.sync.commit_min",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.sync.commit_min),
     .def = "10",
     R_GE(0),
     .desc = "adsp: shortest commit interval B_min in seconds."},
    {.path = "job.sync.commit_rate",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.sync.commit_rate),
     .def = "1",
     R_GT(0),
     .desc = "adsp: initial commit rate DeltaC (commits per Gamma)."},
    {.path = "job.sync.adsp_mu",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.sync.adsp_mu),
     .def = "0",
     .min = 0,
     .max = 1,
     .flags = SC_CONF_F_MAX_EXCL,
     .desc = "adsp: server momentum mu; 0 = none."},
    {.path = "job.sync.adsp_eta",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.sync.adsp_eta),
     .def = "0",
     R_GE(0),
     .desc = "adsp: server momentum eta; 0 = 1 / workers."},
    {.path = "job.codec.name",
     .type = SC_CONF_ENUM,
     .offset = C(job.codec),
     .def = "\"none\"",
     .names = sc_conf_codec_names,
     .desc = "Codec of worker updates (docs/WIRE.md); aggregators decode any codec."},
    {.path = "job.codec.ratio",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.codec_ratio),
     .def = "0",
     R_IN(0, 1),
     .desc = "topk, randk, adacomp, adaptive: fraction kept per tensor; 0 = the codec's "
             "default."},
    {.path = "job.codec.error_feedback",
     .type = SC_CONF_INT,
     .offset = C(job.codec_error_feedback),
     .def = "-1",
     R_IN(-1, 1),
     .desc = "Residual error feedback: 1 on, 0 off, -1 = the codec's default."},
    {.path = "job.codec.delta",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.codec_delta),
     .def = "0",
     R_GE(0),
     .desc = "adaptive: top-k while the running relative norm error is <= delta; 0 = 0.3."},
    {.path = "job.downlink.name",
     .type = SC_CONF_ENUM,
     .offset = C(job.downlink),
     .def = "\"q8\"",
     .names = sc_conf_codec_names,
     .desc = "Codec of the model broadcast's deltas (J.bcast, docs/DISTRIBUTED.md): each "
             "version goes out as params - view encoded with it, and what it drops goes out "
             "with the next deltas (the aggregator keeps the workers' view)."},
    {.path = "job.downlink.ratio",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.downlink_ratio),
     .def = "0.1",
     R_IN(0, 1),
     .desc = "topk, randk, adacomp, adaptive downlink: fraction of each tensor's delta sent; "
             "0 = the codec's default."},
    {.path = "job.downlink.half_values",
     .type = SC_CONF_INT,
     .offset = C(job.downlink_half),
     .def = "1",
     R_IN(0, 1),
     .desc = "Sparse downlink deltas carry IEEE half values (2 bytes) instead of float32; "
             "the rounding stays in the view's error feedback."},
    {.path = "job.keyframe_interval",
     .type = SC_CONF_INT,
     .offset = C(job.keyframe_interval),
     .def = "50",
     R_IN(1, 1000000),
     .desc = "Broadcast deltas between two keyframes (the whole shard, float32) on J.bcast; a "
             "worker starts from the newest keyframe and one this many records behind skips "
             "to it."},
    {.path = "job.publish",
     .type = SC_CONF_ENUM,
     .offset = C(job.publish),
     .def = "\"auto\"",
     .names = sc_conf_publish_names,
     .desc = "When aggregators broadcast a shard version to the workers (J.bcast): every "
             "version, at most once per snapshot_interval, or auto (every version for bsp, "
             "scadles and localsgd, by interval for the asynchronous policies). Always on "
             "revoke and exit."},
    {.path = "job.snapshot_interval",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.snapshot_interval),
     .def = "1",
     R_GE(0),
     .desc = "Seconds between failover snapshots of a shard on J.model (server state), and "
             "between broadcasts when publishing by interval; 0 = every version."},
    {.path = "job.heartbeat_interval",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.heartbeat_interval),
     .def = "1",
     R_GT(0),
     .desc = "Seconds between a worker's heartbeats on J.ctl."},
    {.path = "job.session_timeout",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.session_timeout),
     .def = "10",
     R_GT(0),
     .desc = "Seconds without a heartbeat or update after which a worker leaves the round "
             "barriers (bsp, scadles, localsgd) until it sends again."},
    {.path = "job.progress_interval",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.progress_interval),
     .def = "5",
     R_GE(0),
     .desc = "Seconds between aggregator progress lines; 0 = none."},
    {.path = "job.inject_alpha",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.inject_alpha),
     .def = "0",
     R_IN(0, 1),
     .desc = "Data injection: probability that a worker's batch shares part of itself on "
             "J.inject; 0 = off (`scadles worker --inject-alpha` overrides it)."},
    {.path = "job.inject_beta",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.inject_beta),
     .def = "0.1",
     R_IN(0, 1),
     .desc = "Data injection: fraction of a batch shared, and the largest fraction of "
             "foreign samples mixed into a batch (`--inject-beta` overrides it)."},
    {.path = "job.limits.seq_window",
     .type = SC_CONF_UINT64,
     .offset = C(job.limits.seq_window),
     .def = "64",
     R_GE(0),
     .desc = "Aggregators refuse (count, log once per worker) an update this many seqs or more "
             "ahead of its worker's next seq on the shard; 0 = no window. Up to 64 a gap never "
             "gives an honest seq up; above 64 a far jump gives the missing seqs up as lost "
             "(docs/SECURITY.md)."},
    {.path = "job.limits.max_norm",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.limits.max_norm),
     .def = "0",
     R_GE(0),
     .desc = "Aggregators: L2 norm limit of one update on one shard (a full model's: of its "
             "difference to the shard); 0 = none. Over it an update is refused, or scaled down "
             "with job.limits.clip."},
    {.path = "job.limits.clip",
     .type = SC_CONF_BOOL,
     .offset = C(job.limits.clip),
     .def = "false",
     .desc = "Scale an update over job.limits.max_norm down to it instead of refusing it."},
    {.path = "job.limits.robust",
     .type = SC_CONF_ENUM,
     .offset = C(job.limits.robust),
     .def = "\"none\"",
     .names = sc_conf_robust_names,
     .desc = "Round policies (bsp, scadles, localsgd): aggregate a round by the coordinate-wise "
             "trimmed mean or median of its updates instead of the (weighted) mean. Unweighted; "
             "scadles still scales the LR by the round's samples. Ignored by the asynchronous "
             "policies."},
    {.path = "job.limits.trim",
     .type = SC_CONF_DOUBLE,
     .offset = C(job.limits.trim),
     .def = "0.25",
     R_IN(0, 0.49),
     .desc = "trimmed_mean: fraction of a coordinate's values dropped at each end (at least "
             "one value is kept)."},
    {.path = "job.limits.model_jump",
     .type = SC_CONF_UINT64,
     .offset = C(job.model_jump),
     .def = "1048576",
     R_GE(1),
     .desc =
         "Workers refuse (count as model_bad) a J.bcast keyframe or delta whose version is this "
         "far or more ahead of the shard version they hold (after their first install)."},
    {.path = "job.auth.key_file",
     .type = SC_CONF_STRING,
     .offset = C(job.auth_key_file),
     .def = "\"\"",
     .size = SC_CONF_AUTH_MAX,
     .desc =
         "Authenticated job: a file whose bytes (a trailing newline dropped; at least 16) "
         "are the job key. Every record on J.grad, J.model, J.bcast, J.ctl and J.inject is then "
         "signed and every reader requires the tag (docs/SECURITY.md). The key itself is "
         "never printed."},
    {.path = "job.auth.key_env",
     .type = SC_CONF_STRING,
     .offset = C(job.auth_key_env),
     .def = "\"\"",
     .size = SC_CONF_AUTH_MAX,
     .desc = "Authenticated job: the name of an environment variable holding the job key "
             "(instead of job.auth.key_file)."},
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
    {"eval", "Evaluation on the user's data: the held-out set (a file or a topic, decoded by "
             "the same decoder as a stream, docs/STREAMS.md) used by `train`, `eval`, `worker`, "
             "the plugin and the demo, and the window of the prequential metrics every worker "
             "reports."},
    {"kafka", "librdkafka client properties, passed through unchanged. The runtime's own "
              "clients take from it the properties their type reads (a consumer property "
              "never reaches a producer) after their latency defaults (consumers "
              "`fetch.wait.max.ms` 10, producers `linger.ms` 0)."},
    {"kafka_consumer", "librdkafka properties for consumers only (win over `kafka`)."},
    {"kafka_producer", "librdkafka properties for producers only (win over `kafka`)."},
    {"source", "The Kafka source of `scadles worker`: which topics it consumes (a list, a "
               "regex, or both) as a member of a consumer group, and where malformed records "
               "go. One stream per topic. Offsets are committed only for records trained on, "
               "dropped by truncation or rejected as malformed (docs/STREAMS.md)."},
    {"streams", "Per-stream record decoding (the default for every topic; source.topics "
                "elements override it per topic) and the in-memory buffer policy."},
    {"worker", "Online training by `scadles worker`: batch assembly, progress and test "
               "evaluation, when to stop and how often to commit. The model, optimizer "
               "(with linear LR scaling by optim.base_batch), train.seed and train.threads "
               "come from their own sections."},
    {"job", "Distributed training over Kafka (`scadles aggregator`, the worker's distributed "
            "mode): topic names, shards, the sync policy, the update codec and when "
            "aggregators publish the model. The server optimizer is the optim section "
            "(lr, momentum, schedule stepped by shard versions) (docs/DISTRIBUTED.md)."},
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
        json_decref((json_t *)conf->kafka_consumer);
        json_decref((json_t *)conf->kafka_producer);
        conf->kafka = conf->kafka_consumer = conf->kafka_producer = NULL;
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

/* Gives list elements the value of their "inherit" property unless given,
 * for the non-enum scalar types (sc_conf_inherit does enums). */
static void sc_conf_inherit_scalars(sc_conf_t *conf)
{
        for (size_t i = 0; i < sc_conf_nprops; i++) {
                const sc_conf_prop_t *p = &sc_conf_props[i];
                if (p->type != SC_CONF_OBJ_LIST)
                        continue;
                const sc_conf_list_t *l = p->list;
                int count = *(int *)((char *)conf + p->count_offset);
                const uint32_t *given = (const uint32_t *)((char *)conf + l->given_offset);
                for (int e = 0; e < count; e++) {
                        char *elem = (char *)conf + p->offset + (size_t)e * l->elem_size;
                        for (size_t j = 0; j < l->nprops; j++) {
                                const sc_conf_prop_t *q = &l->props[j];
                                if (!q->inherit || q->kinds || (given[e] >> j & 1u))
                                        continue;
                                const sc_conf_prop_t *src =
                                    sc_conf_find(sc_conf_props, sc_conf_nprops, q->inherit);
                                if (!src || src->type != q->type)
                                        continue;
                                size_t n = 0;
                                switch (q->type) {
                                case SC_CONF_INT:
                                case SC_CONF_BOOL:
                                        n = sizeof(int);
                                        break;
                                case SC_CONF_LONG:
                                        n = sizeof(long);
                                        break;
                                case SC_CONF_DOUBLE:
                                        n = sizeof(double);
                                        break;
                                case SC_CONF_FLOAT:
                                        n = sizeof(float);
                                        break;
                                case SC_CONF_STRING:
                                        n = q->size < src->size ? q->size : src->size;
                                        break;
                                default:
                                        break;
                                }
                                if (n)
                                        memcpy(elem + q->offset, (char *)conf + src->offset, n);
                                if (q->type == SC_CONF_STRING && n)
                                        elem[q->offset + n - 1] = '\0';
                        }
                }
        }
}

/* Checks one decoder as configured; where is its JSON path. */
static sc_err_t sc_conf_check_decode(const sc_conf_t *conf, const sc_conf_decode_t *d,
                                     const char *where, char *errstr, size_t errstr_size)
{
        char path[SC_CONF_PATH_MAX];
        if (strlen(d->delimiter) != 1) {
                snprintf(path, sizeof(path), "%s.delimiter", where);
                return sc_conf_fail(errstr, errstr_size, conf->origin, path,
                                    "expected exactly one character, got \"%s\"", d->delimiter);
        }
        if (d->format == SC_DECODE_RAW && d->label == SC_CONF_LABEL_FIELD) {
                snprintf(path, sizeof(path), "%s.label", where);
                return sc_conf_fail(errstr, errstr_size, conf->origin, path,
                                    "raw records have no label field (use key, header or "
                                    "offset)");
        }
        if (d->format != SC_DECODE_RAW && d->label == SC_CONF_LABEL_OFFSET) {
                snprintf(path, sizeof(path), "%s.label", where);
                return sc_conf_fail(errstr, errstr_size, conf->origin, path,
                                    "offset labels are for raw records only");
        }
        if (d->format == SC_DECODE_JSON &&
            (d->features_path[0] != '$' || d->label_path[0] != '$')) {
                snprintf(path, sizeof(path), "%s.%s", where,
                         d->features_path[0] != '$' ? "features_path" : "label_path");
                return sc_conf_fail(errstr, errstr_size, conf->origin, path,
                                    "a JSON path starts with \"$\"");
        }
        return SC_OK;
}

/* How many nodes glibc's regcomp builds for an extended regex, roughly: it
 * copies a repeated subexpression once per repetition (x+ is x x*, x{n,m}
 * m copies), so nested repetitions multiply. A bound on it keeps a 256-byte
 * pattern like "((a)+)+..." from taking gigabytes and minutes to compile.
 * *adjacent is set for a repetition operator right after another ("a+*",
 * "a++": undefined in POSIX, and the fastest way to blow up glibc's
 * epsilon closures). Counting stops past SC_CONF_REGEX_NODES. */
#define SC_CONF_REGEX_NODES 2000.0
static double sc_conf_regex_nodes(const char *p, int *adjacent)
{
        double outer[SC_CONF_TOPIC_MAX], sum = 0, last = 0;
        int depth = 0, rep = 0, prev = 0;
        *adjacent = 0;
        for (; *p && sum <= SC_CONF_REGEX_NODES; p++, prev = rep) {
                rep = *p == '*' || *p == '+' || *p == '?' ||
                      (*p == '{' && p[1] >= '0' && p[1] <= '9');
                if (rep && prev) {
                        *adjacent = 1;
                        return sum;
                }
                switch (*p) {
                case '\\':
                        if (p[1])
                                p++;
                        sum += 1, last = 1;
                        break;
                case '[': /* a bracket expression is one node */
                        p++;
                        if (*p == '^')
                                p++;
                        if (*p == ']')
                                p++;
                        while (*p && *p != ']') {
                                if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
                                        char c = p[1];
                                        for (p += 2; *p && !(*p == c && p[1] == ']'); p++)
                                                ;
                                        if (*p)
                                                p++;
                                }
                                if (*p)
                                        p++;
                        }
                        if (!*p)
                                return sum + 1;
                        sum += 1, last = 1;
                        break;
                case '(':
                        outer[depth++] = sum;
                        sum = 0, last = 0;
                        break;
                case ')':
                        if (depth > 0) {
                                last = sum + 1;
                                sum = outer[--depth] + last;
                        } else {
                                sum += 1, last = 1;
                        }
                        break;
                case '+':
                        sum += last, last *= 2;
                        break;
                case '{': {
                        char *end;
                        long n = strtol(p + 1, &end, 10), m = n;
                        if (end == p + 1 || n < 0) {
                                sum += 1, last = 1;
                                break;
                        }
                        if (*end == ',') {
                                if (end[1] == '}') {
                                        m = n + 1;
                                        end++;
                                } else {
                                        m = strtol(end + 1, &end, 10);
                                }
                        }
                        if (*end != '}') {
                                sum += 1, last = 1;
                                break;
                        }
                        double k = (double)(m > n ? m : n);
                        if (k < 1)
                                k = 1;
                        sum += last * (k - 1), last *= k;
                        p = end;
                        break;
                }
                case '*':
                case '?':
                        sum += 1;
                        break;
                case '|':
                        sum += 1, last = 0;
                        break;
                default:
                        sum += 1, last = 1;
                }
        }
        while (depth > 0)
                sum += outer[--depth];
        return sum;
}

/* Cross-property rules of the source, streams and worker sections. */
static sc_err_t sc_conf_validate_streaming(const sc_conf_t *conf, char *errstr, size_t errstr_size)
{
        const char *o = conf->origin;
        const sc_conf_streams_t *st = &conf->streams;
        const sc_conf_worker_t *w = &conf->worker;
        char path[SC_CONF_PATH_MAX];
        sc_err_t err;

        if (st->low_watermark >= st->high_watermark)
                return sc_conf_fail(errstr, errstr_size, o, "$.streams.low_watermark",
                                    "must be less than high_watermark (%g >= %g)",
                                    st->low_watermark, st->high_watermark);
        if (st->keep_min > st->cap)
                return sc_conf_fail(errstr, errstr_size, o, "$.streams.keep_min",
                                    "must be at most cap (%ld > %ld)", st->keep_min, st->cap);
        if (w->b_min > w->b_max)
                return sc_conf_fail(errstr, errstr_size, o, "$.worker.b_min",
                                    "must be at most b_max (%d > %d)", w->b_min, w->b_max);
        if (conf->source.pattern[0] && conf->source.pattern[0] != '^')
                return sc_conf_fail(errstr, errstr_size, o, "$.source.pattern",
                                    "a topic pattern starts with \"^\" (got \"%s\")",
                                    conf->source.pattern);
        if (conf->source.pattern[0]) {
                int adjacent;
                double nodes = sc_conf_regex_nodes(conf->source.pattern, &adjacent);
                if (adjacent)
                        return sc_conf_fail(errstr, errstr_size, o, "$.source.pattern",
                                            "two repetition operators in a row (as in \"a+*\"; "
                                            "POSIX leaves them undefined): \"%s\"",
                                            conf->source.pattern);
                if (nodes > SC_CONF_REGEX_NODES)
                        return sc_conf_fail(errstr, errstr_size, o, "$.source.pattern",
                                            "too many repetitions: compiled, the regex would "
                                            "expand to more than %.0f nodes (a repetition of a "
                                            "repetition multiplies): \"%s\"",
                                            SC_CONF_REGEX_NODES, conf->source.pattern);
                /* Compiled as librdkafka will compile it for the subscription. */
                regex_t re;
                int rc = regcomp(&re, conf->source.pattern, REG_EXTENDED | REG_NOSUB);
                if (rc) {
                        char why[128];
                        regerror(rc, &re, why, sizeof(why));
                        return sc_conf_fail(errstr, errstr_size, o, "$.source.pattern",
                                            "not a POSIX extended regex (%s): \"%s\"", why,
                                            conf->source.pattern);
                }
                regfree(&re);
        }
        if ((err = sc_conf_check_decode(conf, &st->decode, "$.streams", errstr, errstr_size)))
                return err;
        for (int i = 0; i < conf->source.n_topics; i++) {
                const sc_conf_topic_t *t = &conf->source.topics[i];
                snprintf(path, sizeof(path), "$.source.topics[%d]", i);
                if ((err = sc_conf_check_decode(conf, &t->decode, path, errstr, errstr_size)))
                        return err;
                for (const char *c = t->topic; *c; c++) {
                        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                              (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-')) {
                                snprintf(path, sizeof(path), "$.source.topics[%d].topic", i);
                                return sc_conf_fail(errstr, errstr_size, o, path,
                                                    "\"%s\" is not a topic name (1..249 of "
                                                    "[a-zA-Z0-9._-])",
                                                    t->topic);
                        }
                }
                if (!t->topic[0] || strlen(t->topic) > 249) {
                        snprintf(path, sizeof(path), "$.source.topics[%d].topic", i);
                        return sc_conf_fail(errstr, errstr_size, o, path,
                                            "a topic name has 1..249 characters");
                }
                for (int j = 0; j < i; j++) {
                        if (strcmp(conf->source.topics[j].topic, t->topic))
                                continue;
                        snprintf(path, sizeof(path), "$.source.topics[%d].topic", i);
                        return sc_conf_fail(errstr, errstr_size, o, path,
                                            "\"%s\" is listed twice (also topics[%d])", t->topic,
                                            j);
                }
        }
        return SC_OK;
}

/* Cross-property rules of the job section. */
static sc_err_t sc_conf_validate_job(const sc_conf_t *conf, char *errstr, size_t errstr_size)
{
        const sc_conf_job_t *j = &conf->job;
        sc_sync_spec_t sync = j->sync;
        char sub[256];

        if (!j->name[0])
                return sc_conf_fail(errstr, errstr_size, conf->origin, "$.job.name",
                                    "a job name has 1..%d characters", SC_CONF_JOB_NAME_MAX - 1);
        for (const char *c = j->name; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                      (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-'))
                        return sc_conf_fail(errstr, errstr_size, conf->origin, "$.job.name",
                                            "\"%s\" is not a topic name prefix (only "
                                            "[a-zA-Z0-9._-])",
                                            j->name);
        if (j->sync.b_min > j->sync.b_max)
                return sc_conf_fail(errstr, errstr_size, conf->origin, "$.job.sync.b_min",
                                    "must be at most b_max (%d > %d)", j->sync.b_min,
                                    j->sync.b_max);
        if (sc_sync_spec_check(&sync, sub, sizeof(sub)))
                return sc_conf_fail(errstr, errstr_size, conf->origin, "$.job", "%s", sub);
        return SC_OK;
}

/* The eval section: one held-out source, labels only for IDX, a decoder
 * that names a listed topic. */
static sc_err_t sc_conf_validate_eval(const sc_conf_t *conf, char *errstr, size_t errstr_size)
{
        const sc_conf_eval_t *e = &conf->eval;
        const char *o = conf->origin;
        if (e->file[0] && e->topic[0])
                return sc_conf_fail(errstr, errstr_size, o, "$.eval.topic",
                                    "give eval.file or eval.topic, not both");
        if (e->labels[0] && !e->file[0])
                return sc_conf_fail(errstr, errstr_size, o, "$.eval.labels",
                                    "labels of an IDX eval.file, which is not given");
        if (e->labels[0] && e->format != SC_CONF_EVAL_AUTO && e->format != SC_CONF_EVAL_IDX)
                return sc_conf_fail(errstr, errstr_size, o, "$.eval.labels",
                                    "only an IDX eval.file has a labels file");
        if (e->format == SC_CONF_EVAL_IDX && !e->labels[0])
                return sc_conf_fail(errstr, errstr_size, o, "$.eval.labels",
                                    "an IDX eval.file needs its labels file");
        if (e->decoder[0]) {
                for (int i = 0; i < conf->source.n_topics; i++)
                        if (!strcmp(conf->source.topics[i].topic, e->decoder))
                                return SC_OK;
                return sc_conf_fail(errstr, errstr_size, o, "$.eval.decoder",
                                    "\"%s\" is not a topic of source.topics", e->decoder);
        }
        return SC_OK;
}

sc_err_t sc_conf_validate(sc_conf_t *conf, char *errstr, size_t errstr_size)
{
        const char *o = conf->origin;
        sc_conf_optim_t *op = &conf->optim;
        const sc_sched_spec_t *s = &op->sched;

        if (op->nesterov && op->momentum <= 0)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.nesterov",
                                    "needs optim.momentum > 0");
        if (conf->job.auth_key_file[0] && conf->job.auth_key_env[0])
                return sc_conf_fail(errstr, errstr_size, o, "$.job.auth.key_env",
                                    "give job.auth.key_file or job.auth.key_env, not both");
        if (sc_conf_validate_eval(conf, errstr, errstr_size))
                return SC_ERR_CONFIG;
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
        sc_conf_inherit_scalars(conf);
        sc_err_t err = sc_conf_validate_streaming(conf, errstr, errstr_size);
        return err ? err : sc_conf_validate_job(conf, errstr, errstr_size);
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

int sc_conf_kafka_secret(const char *key)
{
        static const char *const words[] = {"password", "secret", "key.pem", "oauthbearer.config"};
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
                if (strstr(key, words[i]))
                        return 1;
        return 0;
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
        static char names[256][96];
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
                        if (k >= 256)
                                return NULL;
                        snprintf(names[k], sizeof(names[k]), "%s[].%s", p->path,
                                 p->list->props[j].path);
                        return names[k];
                }
        }
        return NULL;
}
