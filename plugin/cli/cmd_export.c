/* cmd_export.c — `scadles export`: a checkpoint as a standard ONNX model
 * whose first nodes apply the decoder's input normalization. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "sc_ckpt.h"
#include "sc_conf.h"
#include "sc_file.h"
#include "sc_nn.h"
#include "sc_onnx.h"

static void sc_export_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles export -c CONFIG --checkpoint CKPT --onnx OUT.onnx\n"
                "                      [--normalize FROM] [--set KEY=VALUE ...]\n"
                "\n"
                "Writes the checkpoint's model (the configuration's model.*) as a standard\n"
                "ONNX file (opset %d, IR version %d): input \"input\" of raw feature values,\n"
                "float (N, n) for a flat model input [n], else (N, C, H, W); output\n"
                "\"probabilities\" (N, classes) after a Softmax (\"output\" for the mse loss).\n"
                "The first nodes normalize the input as a decoder does, x' = (x * scale -\n"
                "mean) / std, with the settings FROM names:\n"
                "  auto         (default) the first source.topics element's decoder keys;\n"
                "               without source.topics, streams.* when source.pattern or\n"
                "               streams.fields is set, else data.*\n"
                "  topic        the first source.topics element's scale/mean/std\n"
                "  topic:NAME   the source.topics element of topic NAME\n"
                "  streams      streams.scale/mean/std (every topic without its own keys)\n"
                "  data         `scadles train`'s data.*: fashion-mnist scale 1/255 and\n"
                "               data.mean/std; synthetic none\n"
                "  none         no normalization (the input is already normalized)\n"
                "  S,M,D        scale S, mean M, std D\n"
                "The choice is printed on stderr and stored in the file's metadata\n"
                "(scadles.normalization.*). A decoder with named fields (streams.fields)\n"
                "adds each feature's standardization: the model then takes the encoded\n"
                "features before it (metadata scadles.input.features names them).\n"
                "docs/EXPORT.md shows the graph and how to run\n"
                "it with onnxruntime.\n"
                "\n"
                "options:\n"
                "  -c, --config FILE      JSON configuration of the model (and decoders)\n"
                "  -k, --checkpoint CKPT  checkpoint of that model\n"
                "  -o, --onnx OUT         ONNX file written (atomically)\n"
                "  -n, --normalize FROM   input normalization, see above (default auto)\n"
                "  -s, --set KEY=VALUE    override one property (repeatable)\n"
                "  -h, --help             this text\n"
                "\n"
                "exit status: 0 written, 1 runtime error (checkpoint, file), 2 usage or\n"
                "configuration error.\n",
                SC_ONNX_OPSET, SC_ONNX_IR_VERSION);
}

static void sc_export_from_decode(const sc_conf_decode_t *d, sc_onnx_norm_t *n)
{
        n->scale = (float)d->scale;
        n->mean = (float)d->mean;
        n->std = (float)d->std;
}

/* "S,M,D" into n; -1 if it is not three numbers. */
static int sc_export_parse_numbers(const char *s, sc_onnx_norm_t *n)
{
        double v[3];
        char *end;
        for (int k = 0; k < 3; k++) {
                errno = 0;
                v[k] = strtod(s, &end);
                if (errno || end == s || !isfinite(v[k]) || *end != (k < 2 ? ',' : '\0'))
                        return -1;
                s = end + 1;
        }
        n->scale = (float)v[0];
        n->mean = (float)v[1];
        n->std = (float)v[2];
        return 0;
}

/* Resolves --normalize FROM into n and a description of where it came
 * from; returns 0, or 2 after printing the error. */
static int sc_export_norm(const sc_conf_t *conf, const char *from, sc_onnx_norm_t *n,
                          const sc_conf_decode_t **dec, char *what, size_t what_size)
{
        const sc_conf_source_t *src = &conf->source;
        if (!strcmp(from, "auto")) {
                from = src->n_topics                                    ? "topic"
                       : src->pattern[0] || conf->streams.decode.fields ? "streams"
                                                                        : "data";
        }
        if (!strcmp(from, "topic") || !strncmp(from, "topic:", 6)) {
                int i = 0;
                if (from[5] == ':') {
                        for (i = 0; i < src->n_topics; i++)
                                if (!strcmp(src->topics[i].topic, from + 6))
                                        break;
                }
                if (i >= src->n_topics) {
                        fprintf(stderr, "scadles export: --normalize %s: %s: $.source.topics %s\n",
                                from, conf->origin,
                                src->n_topics ? "has no element of that topic" : "is empty");
                        return 2;
                }
                sc_export_from_decode(&src->topics[i].decode, n);
                *dec = &src->topics[i].decode;
                snprintf(what, what_size, "$.source.topics[%d] (%s)", i, src->topics[i].topic);
        } else if (!strcmp(from, "streams")) {
                sc_export_from_decode(&conf->streams.decode, n);
                *dec = &conf->streams.decode;
                snprintf(what, what_size, "$.streams");
        } else if (!strcmp(from, "data")) {
                int fm = !strcmp(conf->data.source, "fashion-mnist");
                n->scale = fm ? 1.0f / 255.0f : 1.0f;
                n->mean = fm ? (float)conf->data.mean : 0.0f;
                n->std = fm ? (float)conf->data.std : 1.0f;
                snprintf(what, what_size, "$.data (%s)", conf->data.source);
        } else if (!strcmp(from, "none")) {
                *n = (sc_onnx_norm_t){1.0f, 0.0f, 1.0f};
                snprintf(what, what_size, "none");
        } else if (!sc_export_parse_numbers(from, n)) {
                snprintf(what, what_size, "--normalize");
        } else {
                fprintf(stderr,
                        "scadles export: --normalize %s: expected auto, topic, topic:NAME, "
                        "streams, data, none or SCALE,MEAN,STD\n",
                        from);
                return 2;
        }
        if (n->std == 0.0f || !isfinite(n->scale / n->std) || !isfinite(n->mean / n->std)) {
                fprintf(stderr,
                        "scadles export: %s: scale %g, mean %g, std %g: std must be non-zero\n",
                        what, (double)n->scale, (double)n->mean, (double)n->std);
                return 2;
        }
        return 0;
}

/* The named fields' per-feature standardization and feature names into af;
 * 0, else an exit status after printing the error (2: the fields do not fit
 * model.input, 1: out of memory). */
static int sc_export_fields(const sc_fields_t *fs, const sc_conf_t *conf, sc_onnx_affine_t *af)
{
        size_t numel = sc_shape_numel(conf->model.input);
        if (fs->width != numel) {
                fprintf(stderr,
                        "scadles export: %s: the named fields encode %zu features, model.input "
                        "takes %zu\n",
                        conf->origin, fs->width, numel);
                return 2;
        }
        float *mul = malloc(numel * sizeof(float)), *add = malloc(numel * sizeof(float));
        json_t *names = json_array();
        char name[2 * SC_FIELDS_PATH_MAX];
        for (size_t i = 0; names && i < numel; i++) {
                sc_fields_feature_name(fs, i, name, sizeof(name));
                json_array_append_new(names, json_string(name));
        }
        char *text = names ? json_dumps(names, JSON_COMPACT) : NULL;
        json_decref(names);
        if (!mul || !add || !text) {
                free(mul);
                free(add);
                free(text);
                fprintf(stderr, "scadles export: out of memory\n");
                return 1;
        }
        sc_fields_affine(fs, mul, add);
        *af = (sc_onnx_affine_t){mul, add, numel, text};
        return 0;
}

typedef struct sc_export_opts {
        sc_cli_conf_opts_t co;
        const char *checkpoint, *onnx, *normalize;
} sc_export_opts_t;

/* Parses the options; returns -1 to go on, else an exit code. */
static int sc_export_args(int argc, char **argv, sc_export_opts_t *o)
{
        static const struct option longopts[] = {
            {"config", required_argument, NULL, 'c'},
            {"checkpoint", required_argument, NULL, 'k'},
            {"onnx", required_argument, NULL, 'o'},
            {"normalize", required_argument, NULL, 'n'},
            {"set", required_argument, NULL, 's'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        int c;

        memset(o, 0, sizeof(*o));
        o->normalize = "auto";
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":c:k:o:n:s:h", longopts, NULL)) != -1) {
                int taken = sc_cli_conf_opt("export", &o->co, c, optarg);
                if (taken < 0)
                        return 2;
                if (taken)
                        continue;
                switch (c) {
                case 'k':
                        o->checkpoint = optarg;
                        break;
                case 'o':
                        o->onnx = optarg;
                        break;
                case 'n':
                        o->normalize = optarg;
                        break;
                default:
                        return sc_cli_opt_other("export", c, argv, sc_export_usage);
                }
        }
        if (sc_cli_no_operands("export", argc, argv, sc_export_usage))
                return 2;
        if (!o->co.config || !o->checkpoint || !o->onnx) {
                fprintf(stderr, "scadles export: %s is required\n\n",
                        !o->co.config    ? "-c CONFIG"
                        : !o->checkpoint ? "--checkpoint CKPT"
                                         : "--onnx OUT");
                sc_export_usage(stderr);
                return 2;
        }
        return -1;
}

int sc_cmd_export(int argc, char **argv)
{
        char err[1024], what[320];
        sc_export_opts_t o;
        sc_conf_t conf;
        sc_model_t *model = NULL;
        sc_onnx_opts_t oo = {.producer_version = SC_VERSION_STR};
        const sc_conf_decode_t *dec = NULL;
        size_t size = 0;
        int rc;

        if ((rc = sc_export_args(argc, argv, &o)) >= 0)
                return rc;
        if ((rc = sc_cli_conf_load("export", &conf, &o.co)))
                return rc;
        if ((rc = sc_export_norm(&conf, o.normalize, &oo.norm, &dec, what, sizeof(what))))
                goto out;
        if ((rc = sc_cli_model_load("export", &conf, o.checkpoint, &model)))
                goto out;
        if (dec && dec->fields && (rc = sc_export_fields(dec->fields, &conf, &oo.affine)))
                goto out;
        const sc_vocab_t *names = dec ? dec->labels : conf.streams.decode.labels;
        json_t *cls = names ? json_array() : NULL;
        for (size_t k = 0; cls && k < sc_vocab_size(names); k++)
                json_array_append_new(cls, json_string(sc_vocab_name(names, k)));
        oo.classes = cls ? json_dumps(cls, JSON_COMPACT) : NULL;
        json_decref(cls);
        if (sc_onnx_save(o.onnx, model, &oo, &size, err, sizeof(err))) {
                fprintf(stderr, "scadles export: %s\n", err);
                rc = 1;
                goto out;
        }
        if (oo.affine.mul)
                fprintf(stderr,
                        "scadles export: input standardization from %s: %zu features of %zu "
                        "named fields, each x' = (x - mean) / std (metadata "
                        "scadles.input.features names them)\n",
                        what, oo.affine.n, dec->fields->n);
        else
                fprintf(stderr,
                        "scadles export: input normalization from %s: x' = (x * %.9g - %.9g) / "
                        "%.9g\n",
                        what, (double)oo.norm.scale, (double)oo.norm.mean, (double)oo.norm.std);
        const sc_shape_t in = conf.model.input;
        sc_shape_t out = sc_model_output_shape(model);
        if (in.h == 1 && in.w == 1)
                printf("wrote %s: %zu bytes, ONNX opset %d, input (N, %d)", o.onnx, size,
                       SC_ONNX_OPSET, in.c);
        else
                printf("wrote %s: %zu bytes, ONNX opset %d, input (N, %d, %d, %d)", o.onnx, size,
                       SC_ONNX_OPSET, in.c, in.h, in.w);
        if (conf.model.loss == SC_LOSS_SOFTMAX_XENT)
                printf(", output %s (N, %zu)\n", SC_ONNX_OUTPUT_PROBS, sc_shape_numel(out));
        else
                printf(", output %s (%zu values per sample)\n", SC_ONNX_OUTPUT_VALUES,
                       sc_shape_numel(out));
out:
        free((void *)oo.affine.mul);
        free((void *)oo.affine.add);
        free((void *)oo.affine.features);
        free((void *)oo.classes);
        sc_model_destroy(model);
        sc_conf_free(&conf);
        return rc;
}
