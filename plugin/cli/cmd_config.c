/* cmd_config.c — `scadles config`: lists the configuration properties, writes
 * docs/CONFIG.md, or checks a configuration file (with overrides), and
 * decodes sample records with it. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "sc_conf.h"
#include "sc_file.h"
#include "sc_job_auth.h"
#include "sc_kafka_source.h"
#include "sc_kafka_util.h"

static void sc_config_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles config --list\n"
                "       scadles config --markdown\n"
                "       scadles config --markdown-sections SECTION[,SECTION...]\n"
                "       scadles config --check [-c FILE] [--set PROPERTY=VALUE ...]\n"
                "                      [--sample FILE [--topic NAME]]\n"
                "\n"
                "  --list            every property with type, range, default and meaning\n"
                "  --markdown        the same as the docs/CONFIG.md page\n"
                "  --markdown-sections S\n"
                "                    the tables of the sections S (e.g. source,streams),\n"
                "                    as docs/STREAMS.md embeds them\n"
                "  --check           validate FILE (or the defaults) with the overrides applied,\n"
                "                    check the kafka properties with librdkafka, compile\n"
                "                    source.pattern, build the model to check its shapes, and\n"
                "                    print the resolved configuration as JSON (secrets such as\n"
                "                    kafka.sasl.password print as \"(redacted)\")\n"
                "  --sample FILE     with --check: decode each line of FILE (a record: JSON\n"
                "                    or CSV text; for an avro topic the record's JSON) with\n"
                "                    the decoder of --topic and print what\n"
                "                    it becomes (label and features, by name for named\n"
                "                    fields) or why it is refused; exit 2 if one is\n"
                "  --topic NAME      the topic whose decoder reads the sample (default: the\n"
                "                    first of source.topics, else streams.*)\n"
                "  -c, --config FILE configuration file (JSON)\n"
                "  --set P=V         override property P (V is JSON, or else a string);\n"
                "                    e.g. --set optim.lr=0.05 --set model.layers[0].units=128\n"
                "  -h, --help        this text\n"
                "\n"
                "Exit status: 0 ok, 1 runtime failure, 2 usage or configuration error.\n");
}

/* For a job: whether it is authenticated and where its processes will find
 * the key (never the key itself). */
static void sc_config_auth(const sc_conf_t *conf)
{
        const sc_conf_job_t *job = &conf->job;
        if (!sc_conf_section_given(conf, "job"))
                return;
        if (job->auth_none) {
                fprintf(stderr,
                        "scadles config: job %s: NOT authenticated (job.auth.mode \"none\"): "
                        "any client that can write to its topics can forge its records\n",
                        job->name);
                return;
        }
        if (job->auth_key_file[0]) {
                int ok = access(job->auth_key_file, R_OK) == 0;
                fprintf(stderr, "scadles config: job %s: authenticated; key from the file %s",
                        job->name, job->auth_key_file);
                if (!ok)
                        fprintf(stderr, " (cannot be read here: %s)", strerror(errno));
                fputc('\n', stderr);
                return;
        }
        const char *var = job->auth_key_env[0] ? job->auth_key_env : SC_JOB_KEY_ENV;
        const char *v = getenv(var);
        fprintf(stderr,
                "scadles config: job %s: authenticated; key from the environment variable %s%s\n",
                job->name, var,
                v && *v ? ""
                        : " (not set here: the job's processes do not start without it; "
                          "`scadles keygen` makes a key)");
}

static int sc_config_print(char *text)
{
        if (!text) {
                fprintf(stderr, "scadles config: out of memory\n");
                return 1;
        }
        fputs(text, stdout);
        free(text);
        return 0;
}

typedef struct sc_config_opts {
        enum { SC_CONFIG_NONE, SC_CONFIG_LIST, SC_CONFIG_MARKDOWN, SC_CONFIG_CHECK } mode;
        const char *sections;
        const char *sample, *topic; /* --sample, --topic */
        sc_cli_conf_opts_t co;      /* -c and --set */
} sc_config_opts_t;

/* Returns -1 to go on, else an exit code. */
static int sc_config_args(int argc, char **argv, sc_config_opts_t *o)
{
        static const struct option longopts[] = {
            {"list", no_argument, NULL, 'L'},
            {"markdown", no_argument, NULL, 'M'},
            {"markdown-sections", required_argument, NULL, 'S'},
            {"check", no_argument, NULL, 'C'},
            {"sample", required_argument, NULL, 'P'},
            {"topic", required_argument, NULL, 'T'},
            {"config", required_argument, NULL, 'c'},
            {"set", required_argument, NULL, 's'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        int c;
        memset(o, 0, sizeof(*o));
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
                int taken = sc_cli_conf_opt("config", &o->co, c, optarg);
                if (taken < 0)
                        return 2;
                if (taken)
                        continue;
                switch (c) {
                case 'L':
                        o->mode = SC_CONFIG_LIST;
                        break;
                case 'M':
                        o->mode = SC_CONFIG_MARKDOWN;
                        break;
                case 'S':
                        o->sections = optarg;
                        break;
                case 'C':
                        o->mode = SC_CONFIG_CHECK;
                        break;
                case 'P':
                        o->sample = optarg;
                        break;
                case 'T':
                        o->topic = optarg;
                        break;
                default:
                        return sc_cli_opt_other("config", c, argv, sc_config_usage);
                }
        }
        if (sc_cli_no_operands("config", argc, argv, sc_config_usage))
                return 2;
        if ((o->sample || o->topic) && (o->mode != SC_CONFIG_CHECK || !o->sample)) {
                fprintf(stderr, "scadles config: --sample FILE goes with --check, --topic with "
                                "--sample\n");
                return 2;
        }
        return -1;
}

/* 1 when the file is a simulator configuration (a top-level "sim" object):
 * it is then read as `scadles sim` reads it. 0 otherwise, and when the file
 * does not parse (the loader then names the error). */
static int sc_config_is_sim(const char *path)
{
        json_error_t jerr;
        json_t *root = path ? json_load_file(path, 0, &jerr) : NULL;
        int sim = json_is_object(json_object_get(root, "sim"));
        json_decref(root);
        return sim;
}

/* What only a client checks: a throwaway producer and consumer built with
 * the resolved kafka settings and destroyed at once (nothing is sent), so a
 * SASL mechanism librdkafka does not know or an ssl.ca.location it cannot
 * read fails here rather than in the first process that starts. */
static sc_err_t sc_config_clients(const sc_conf_t *conf, char *why, size_t why_size)
{
        static const rd_kafka_type_t types[] = {RD_KAFKA_PRODUCER, RD_KAFKA_CONSUMER};
        static const char *const sect[] = {"kafka_producer", "kafka_consumer"};
        for (int i = 0; i < 2; i++) {
                rd_kafka_conf_t *kc = NULL;
                char err[512];
                sc_err_t e = sc_kafka_client_conf(&kc, conf, types[i], NULL, why, why_size);
                if (e)
                        return e;
                /* Warnings and errors only: a file without bootstrap.servers
                 * (given by -b where it runs) draws a notice otherwise. */
                (void)rd_kafka_conf_set(kc, "log_level", "4", err, sizeof(err));
                /* No broker to dial: the client is only built. */
                (void)rd_kafka_conf_set(kc, "bootstrap.servers", "", err, sizeof(err));
                rd_kafka_t *rk = rd_kafka_new(types[i], kc, err, sizeof(err));
                if (!rk) {
                        rd_kafka_conf_destroy(kc);
                        snprintf(why, why_size,
                                 "$.kafka / $.%s: librdkafka refuses a client with these "
                                 "settings: %s",
                                 sect[i], err);
                        return SC_ERR_CONFIG;
                }
                rd_kafka_destroy(rk);
        }
        return SC_OK;
}

/* Each decoder's class names against the model's classes; 0, or -1 after
 * printing the mismatch. */
static int sc_config_class_names(const sc_conf_t *conf, int n_classes)
{
        const sc_vocab_t *names = conf->streams.decode.labels;
        char where[64] = "$.streams.labels";
        for (int i = -1; i < conf->source.n_topics; i++) {
                if (i >= 0) {
                        names = conf->source.topics[i].decode.labels;
                        snprintf(where, sizeof(where), "$.source.topics[%d].labels", i);
                }
                if (names && sc_vocab_size(names) != (size_t)n_classes) {
                        fprintf(stderr,
                                "scadles config: %s: %s: %zu class names, the model has %d "
                                "classes\n",
                                conf->origin, where, sc_vocab_size(names), n_classes);
                        return -1;
                }
        }
        return 0;
}

/* One decoded sample's label and features, on one line of stderr. */
static void sc_config_sample_ok(const sc_decode_spec_t *ds, const char *where, int32_t label,
                                const float *x)
{
        char name[2 * SC_FIELDS_PATH_MAX];
        const char *cls = label >= 0 ? sc_vocab_name(ds->labels, (size_t)label) : NULL;
        if (label < 0)
                fprintf(stderr, "scadles config: sample %s: ok, no label; %zu features:", where,
                        ds->numel);
        else
                fprintf(stderr,
                        "scadles config: sample %s: ok, label %d%s%s%s; %zu features:", where,
                        (int)label, cls ? " (" : "", cls ? cls : "", cls ? ")" : "", ds->numel);
        size_t shown = 0;
        for (size_t i = 0; i < ds->numel && shown < 64; i++) {
                if (ds->fields) { /* by name; one-hot slots only when set */
                        const sc_field_t *fd = NULL;
                        for (size_t k = 0; k < ds->fields->n; k++)
                                if (i >= ds->fields->field[k].offset &&
                                    i < ds->fields->field[k].offset + ds->fields->field[k].width)
                                        fd = &ds->fields->field[k];
                        int slot =
                            fd && (fd->kind == SC_FIELD_CATEGORICAL || fd->kind == SC_FIELD_HASHED);
                        if (slot && x[i] == 0.0f)
                                continue;
                        sc_fields_feature_name(ds->fields, i, name, sizeof(name));
                        fprintf(stderr, " %s=%.6g", name, (double)x[i]);
                } else {
                        fprintf(stderr, " %.6g", (double)x[i]);
                }
                shown++;
        }
        fprintf(stderr, "%s\n", shown == 64 ? " ..." : "");
}

/* --sample: each non-blank line of path decoded by topic's decoder.
 * Returns 0 when every line decodes, 2 when one does not, 1 on I/O. */
static int sc_config_sample(const sc_conf_t *conf, const char *path, const char *topic,
                            int n_classes)
{
        char why[512], where[64];
        sc_decode_spec_t ds;
        if (!topic)
                topic = conf->source.n_topics ? conf->source.topics[0].topic : "";
        sc_ks_decode_spec(conf, topic, sc_shape_numel(conf->model.input), n_classes, &ds);
        if (conf->source.unlabelled)
                sc_decode_spec_unlabelled(&ds);
        if (ds.format == SC_DECODE_AVRO) {
                /* binary records: the sample is their JSON, as eval.file */
                ds.format = SC_DECODE_JSON;
                fprintf(stderr,
                        "scadles config: --sample: %s%s is avro: each line is read as "
                        "the JSON of a record (the same named fields)\n",
                        topic[0] ? "topic " : "streams.*", topic);
        }
        if (sc_decode_spec_check(&ds, why, sizeof(why))) {
                fprintf(stderr, "scadles config: --sample: the decoder of %s%s: %s\n",
                        topic[0] ? "topic " : "streams.*", topic, why);
                return 2;
        }
        FILE *f = fopen(path, "r");
        if (!f) {
                fprintf(stderr, "scadles config: --sample %s: %s\n", path, strerror(errno));
                return 1;
        }
        float *x = malloc(ds.numel * sizeof(float));
        char *line = NULL;
        size_t cap = 0, lines = 0, bad = 0;
        ssize_t n;
        while (x && (n = getline(&line, &cap, f)) >= 0) {
                lines++;
                while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
                        n--;
                if (n == 0)
                        continue;
                sc_record_t rec = {.value = line, .value_size = (size_t)n};
                int32_t label = -1;
                snprintf(where, sizeof(where), "%s:%zu", path, lines);
                sc_decode_fault_t fault = sc_decode_record(&ds, &rec, x, &label, why, sizeof(why));
                if (fault == SC_DECODE_OK) {
                        sc_config_sample_ok(&ds, where, label, x);
                } else {
                        bad++;
                        fprintf(stderr, "scadles config: sample %s: refused (%s): %s\n", where,
                                sc_decode_fault_name(fault), why);
                }
        }
        int rc = !x ? 1 : ferror(f) ? 1 : bad ? 2 : 0;
        if (!x)
                fprintf(stderr, "scadles config: --sample: out of memory\n");
        else if (ferror(f))
                fprintf(stderr, "scadles config: --sample %s: read error\n", path);
        else
                fprintf(stderr, "scadles config: sample %s: %zu line(s), %zu refused\n", path,
                        lines, bad);
        free(line);
        free(x);
        fclose(f);
        return rc;
}

/* --check: the file (or the defaults) with the overrides, checked. */
static int sc_config_check(const sc_cli_conf_opts_t *co, const char *sample, const char *topic)
{
        int n_classes = 0;
        char errstr[1024], why[768];
        sc_conf_t conf;
        sc_err_t err;

        if (sc_config_is_sim(co->config)) {
                if (sc_conf_load_sim(&conf, co->config, errstr, sizeof(errstr))) {
                        fprintf(stderr, "scadles config: %s\n", errstr);
                        return 2;
                }
                if (sc_cli_conf_apply("config", &conf, co))
                        return 2;
        } else if (sc_cli_conf_load("config", &conf, co)) {
                return 2;
        }
        /* librdkafka's own checks, on a throwaway client configuration. */
        err = sc_kafka_conf_check((const json_t *)conf.kafka, "$.kafka", why, sizeof(why));
        if (!err)
                err = sc_kafka_conf_check((const json_t *)conf.kafka_consumer, "$.kafka_consumer",
                                          why, sizeof(why));
        if (!err)
                err = sc_kafka_conf_check((const json_t *)conf.kafka_producer, "$.kafka_producer",
                                          why, sizeof(why));
        if (!err)
                err = sc_config_clients(&conf, why, sizeof(why));
        if (err) {
                fprintf(stderr, "scadles config: %s: %s\n", conf.origin, why);
                sc_conf_free(&conf);
                return err == SC_ERR_NOMEM ? 1 : 2;
        }
        /* Shapes are the model's to check: build it (parameters stay zero). */
        if (conf.model.n_layers > 0) {
                sc_model_t *model = NULL;
                err = sc_model_new(&model, &conf.model, errstr, sizeof(errstr));
                if (err) {
                        sc_conf_model_error(&conf, errstr, sizeof(errstr));
                        fprintf(stderr, "scadles config: %s\n", errstr);
                        sc_conf_free(&conf);
                        return err == SC_ERR_NOMEM ? 1 : 2;
                }
                sc_shape_t out = sc_model_output_shape(model);
                n_classes = (int)sc_shape_numel(out);
                if (sc_config_class_names(&conf, n_classes)) {
                        sc_model_destroy(model);
                        sc_conf_free(&conf);
                        return 2;
                }
                fprintf(stderr,
                        "scadles config: %s: ok; model of %d layers, %zu parameters, "
                        "output %dx%dx%d\n",
                        conf.origin, conf.model.n_layers, sc_model_nparams(model), out.c, out.h,
                        out.w);
                sc_model_destroy(model);
        }
        sc_config_auth(&conf);
        int rc = sc_config_print(sc_conf_dump(&conf));
        if (!rc)
                putchar('\n');
        if (!rc && sample)
                rc = sc_config_sample(&conf, sample, topic, n_classes ? n_classes : 10);
        sc_conf_free(&conf);
        return rc;
}

int sc_cmd_config(int argc, char **argv)
{
        char errstr[1024];
        sc_config_opts_t o;
        int rc;

        if ((rc = sc_config_args(argc, argv, &o)) >= 0)
                return rc;
        if (o.sections) {
                char *text;
                if (sc_conf_describe_sections(o.sections, &text, errstr, sizeof(errstr))) {
                        fprintf(stderr, "scadles config: --markdown-sections: %s\n", errstr);
                        return 2;
                }
                return sc_config_print(text);
        }
        if (o.mode == SC_CONFIG_LIST)
                return sc_config_print(sc_conf_describe(0));
        if (o.mode == SC_CONFIG_MARKDOWN)
                return sc_config_print(sc_conf_describe(1));
        if (o.mode == SC_CONFIG_CHECK)
                return sc_config_check(&o.co, o.sample, o.topic);
        sc_config_usage(stderr);
        return 2;
}
