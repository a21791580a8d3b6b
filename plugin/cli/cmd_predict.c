/* cmd_predict.c — `scadles predict`: scores the records of Kafka topics with
 * a checkpoint or a running job's model and produces one JSON prediction
 * per record to a topic (the processor is connectors/predictor.c). */
#include <getopt.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <jansson.h>

#include "cmd.h"
#include "sc_clock.h"
#include "sc_conf.h"
#include "sc_kafka_util.h"
#include "sc_nn.h"
#include "sc_predictor.h"

typedef struct sc_pcli_opts {
        sc_cli_conf_opts_t co;
        const char *in, *out, *checkpoint, *group, *dead_letter;
        int follow_job, quiet, unlabelled, avro;
        double batch, idle_exit, duration, progress;
} sc_pcli_opts_t;

static void sc_pcli_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles predict -c CONFIG --in TOPIC[,TOPIC...]|^REGEX --out TOPIC\n"
                "                       (--checkpoint CKPT | --follow-job) [options]\n"
                "\n"
                "Scores every record of the input topics with the configured model and\n"
                "produces one JSON prediction per record to the output topic:\n"
                "  {\"topic\":\"in\",\"partition\":0,\"offset\":42,\"label\":3,\"true_label\":3,\n"
                "   \"probabilities\":[...],\"model_version\":1200}\n"
                "with the input record's key (\"<topic>:<partition>\" when it has none) and\n"
                "headers; true_label is the record's own label (none with --unlabelled).\n"
                "Records are decoded as a worker decodes them (avro ones with their\n"
                "schemas from source.schema_registry.url): the topic's source.topics\n"
                "element when --in names it, else streams.*; the label too: a record\n"
                "without a valid one is malformed, unless --unlabelled (source.unlabelled)\n"
                "says records carry none: the decoder's layout without its label (a CSV\n"
                "label column before the features and a raw label byte before the tensor\n"
                "taken out; JSON's label_path, key and header labels not read). Malformed\n"
                "records go to the dead-letter topic (source.dead_letter_topic) with the\n"
                "worker's headers. The processor is a member of consumer group --group;\n"
                "input offsets are committed only once the predictions of every record\n"
                "before them were acknowledged by the broker (idempotent producer): a\n"
                "restart resumes where the acknowledged predictions end. model_version is\n"
                "the checkpoint's step, or with --follow-job the smallest shard version of\n"
                "the job's newest model on J.model, which is swapped in between batches.\n"
                "\n"
                "options:\n"
                "  -c, --config FILE        JSON configuration (model, streams.*, source.*)\n"
                "  -s, --set KEY=VALUE      override one property (repeatable)\n"
                "  -b, --bootstrap ADDR     Kafka bootstrap servers (kafka.bootstrap.servers)\n"
                "  -B, --bootstrap-file F   read the bootstrap address from F\n"
                "      --in TOPICS          input topics, comma-separated, or one ^regex\n"
                "      --out TOPIC          output topic (created when missing)\n"
                "  -k, --checkpoint CKPT    score with this checkpoint (from `scadles train`)\n"
                "      --follow-job         score with the newest model of the config's job\n"
                "      --unlabelled         records carry no label (source.unlabelled)\n"
                "      --avro               write the predictions as Avro framed for the\n"
                "                           registry of source.schema_registry.url, their\n"
                "                           schema (docs/STREAMS.md) registered under\n"
                "                           \"<out>-value\"; the same members as the JSON\n"
                "      --group G            consumer group (default scadles-predict)\n"
                "      --dead-letter TOPIC  dead-letter topic (default source.dead_letter_topic)\n"
                "      --batch N            most records scored at once (default 1024)\n"
                "  -i, --idle-exit S        stop when no record arrived for S seconds (from the\n"
                "                           first partition assignment on) and every\n"
                "                           prediction was acknowledged\n"
                "  -d, --duration S         stop after S seconds\n"
                "      --progress S         seconds between progress lines (default 5, 0 = none)\n"
                "  -q, --quiet              no progress or informational lines\n"
                "  -h, --help               this text\n"
                "\n"
                "A progress line (consumed, predicted, acknowledged, bad, records/s, lag,\n"
                "model version) goes to stderr; at exit \"summary: {JSON}\" goes to stdout\n"
                "(consumed, predicted, acknowledged, bad, dead_letters, model_version,\n"
                "model_swaps, records_per_s, cpu_s, committed and end offsets per input\n"
                "partition). With metrics.listen (--set metrics.listen=HOST:PORT) it\n"
                "serves Prometheus metrics on /metrics and its health on /healthz\n"
                "(docs/OPERATIONS.md).\n"
                "SIGINT/SIGTERM stop cleanly: what is buffered is scored, delivered and\n"
                "committed. exit status: 0 stopped, 1 runtime error (Kafka, undelivered\n"
                "predictions, checkpoint), 2 usage or configuration error.\n");
}

/* Returns -1 to go on, else an exit code. */
static int sc_pcli_args(int argc, char **argv, sc_pcli_opts_t *o)
{
        static const struct option longopts[] = {
            {"config", required_argument, NULL, 'c'},
            {"set", required_argument, NULL, 's'},
            {"bootstrap", required_argument, NULL, 'b'},
            {"bootstrap-file", required_argument, NULL, 'B'},
            {"in", required_argument, NULL, 'I'},
            {"out", required_argument, NULL, 'O'},
            {"checkpoint", required_argument, NULL, 'k'},
            {"follow-job", no_argument, NULL, 'F'},
            {"unlabelled", no_argument, NULL, 'U'},
            {"avro", no_argument, NULL, 'A'},
            {"group", required_argument, NULL, 'G'},
            {"dead-letter", required_argument, NULL, 'D'},
            {"batch", required_argument, NULL, 'N'},
            {"idle-exit", required_argument, NULL, 'i'},
            {"duration", required_argument, NULL, 'd'},
            {"progress", required_argument, NULL, 'P'},
            {"quiet", no_argument, NULL, 'q'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        int c;
        memset(o, 0, sizeof(*o));
        o->batch = 1024;
        o->progress = 5;
        o->group = "scadles-predict";
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":c:s:b:B:k:i:d:qh", longopts, NULL)) != -1) {
                int taken = sc_cli_conf_opt("predict", &o->co, c, optarg);
                if (taken < 0)
                        return 2;
                if (taken)
                        continue;
                switch (c) {
                case 'I':
                        o->in = optarg;
                        break;
                case 'O':
                        o->out = optarg;
                        break;
                case 'k':
                        o->checkpoint = optarg;
                        break;
                case 'F':
                        o->follow_job = 1;
                        break;
                case 'U':
                        o->unlabelled = 1;
                        break;
                case 'A':
                        o->avro = 1;
                        break;
                case 'G':
                        o->group = optarg;
                        break;
                case 'D':
                        o->dead_letter = optarg;
                        break;
                case 'N':
                        if (sc_cli_number("predict", "--batch", optarg, &o->batch))
                                return 2;
                        if (o->batch < 1 || o->batch > 65536 || o->batch != floor(o->batch)) {
                                fprintf(stderr,
                                        "scadles predict: --batch %s: expected an integer in "
                                        "[1, 65536]\n",
                                        optarg);
                                return 2;
                        }
                        break;
                case 'i':
                        if (sc_cli_number("predict", "--idle-exit", optarg, &o->idle_exit))
                                return 2;
                        break;
                case 'd':
                        if (sc_cli_number("predict", "--duration", optarg, &o->duration))
                                return 2;
                        break;
                case 'P':
                        if (sc_cli_number("predict", "--progress", optarg, &o->progress))
                                return 2;
                        break;
                case 'q':
                        o->quiet = 1;
                        break;
                default:
                        return sc_cli_opt_other("predict", c, argv, sc_pcli_usage);
                }
        }
        if (sc_cli_no_operands("predict", argc, argv, sc_pcli_usage))
                return 2;
        const char *missing = !o->co.config ? "-c CONFIG"
                              : !o->in      ? "--in TOPIC|^REGEX"
                              : !o->out     ? "--out TOPIC"
                              : !o->checkpoint && !o->follow_job
                                  ? "--checkpoint CKPT or --follow-job"
                                  : NULL;
        if (missing) {
                fprintf(stderr, "scadles predict: %s is required\n\n", missing);
                sc_pcli_usage(stderr);
                return 2;
        }
        if (o->checkpoint && o->follow_job) {
                fprintf(stderr, "scadles predict: give --checkpoint or --follow-job, not both\n");
                return 2;
        }
        return -1;
}

/* The input: a ^regex becomes source.pattern (every matching topic decoded
 * per streams.*); a topic list becomes source.topics, each element the
 * configuration's own for that topic when there is one. */
static int sc_pcli_input(sc_conf_t *conf, const char *in)
{
        sc_conf_source_t src = conf->source;
        src.n_topics = 0;
        src.pattern[0] = '\0';
        if (in[0] == '^') {
                if (strlen(in) >= sizeof(src.pattern)) {
                        fprintf(stderr, "scadles predict: --in %s: pattern too long\n", in);
                        return 2;
                }
                snprintf(src.pattern, sizeof(src.pattern), "%s", in);
                conf->source = src;
                return 0;
        }
        const char *s = in;
        while (*s) {
                size_t len = strcspn(s, ",");
                if (len == 0 || len >= SC_CONF_TOPIC_MAX || src.n_topics == SC_CONF_MAX_TOPICS) {
                        fprintf(stderr,
                                "scadles predict: --in %s: expected 1..%d topic names of 1..%d "
                                "characters, comma-separated\n",
                                in, SC_CONF_MAX_TOPICS, SC_CONF_TOPIC_MAX - 1);
                        return 2;
                }
                sc_conf_topic_t *t = &src.topics[src.n_topics++];
                memset(t, 0, sizeof(*t));
                memcpy(t->topic, s, len);
                t->decode = conf->streams.decode;
                for (int i = 0; i < conf->source.n_topics; i++)
                        if (!strcmp(conf->source.topics[i].topic, t->topic))
                                t->decode = conf->source.topics[i].decode;
                s += len + (s[len] == ',');
        }
        conf->source = src;
        return 0;
}

static void sc_pcli_progress(sc_predictor_t *p, double now, double t0, uint64_t *last_n,
                             double *last_t)
{
        sc_predictor_stats_t st;
        sc_predictor_stats(p, &st);
        double dt = now - *last_t;
        double rate = dt > 0 ? (double)(st.acked - *last_n) / dt : 0;
        int64_t lag = sc_kafka_source_lag(sc_predictor_source(p));
        fprintf(stderr,
                "predict: %6.1fs  consumed %llu  predicted %llu  acked %llu  bad %llu  %.0f/s  "
                "lag %lld  model v%llu\n",
                now - t0, (unsigned long long)st.consumed, (unsigned long long)st.predicted,
                (unsigned long long)st.acked, (unsigned long long)st.bad, rate, (long long)lag,
                (unsigned long long)st.model_version);
        *last_n = st.acked;
        *last_t = now;
}

/* The configuration with the command's overrides (input topics, group,
 * --unlabelled, dead-letter topic); an exit code, 0 to go on. */
static int sc_pcli_conf(sc_conf_t *conf, const sc_pcli_opts_t *o)
{
        int rc;
        if ((rc = sc_cli_conf_load("predict", conf, &o->co)) || (rc = sc_pcli_input(conf, o->in)))
                return rc;
        if (strlen(o->group) >= sizeof(conf->source.group_id) ||
            (o->dead_letter && strlen(o->dead_letter) >= sizeof(conf->source.dead_letter))) {
                fprintf(stderr, "scadles predict: --group / --dead-letter: name too long\n");
                return 2;
        }
        snprintf(conf->source.group_id, sizeof(conf->source.group_id), "%s", o->group);
        if (o->unlabelled)
                conf->source.unlabelled = 1;
        if (o->dead_letter)
                snprintf(conf->source.dead_letter, sizeof(conf->source.dead_letter), "%s",
                         o->dead_letter);
        if (conf->train.threads > 0)
                sc_nn_set_threads(conf->train.threads);
        return 0;
}

/* The predictor for conf and the options; an exit code, 0 to go on. */
static int sc_pcli_start(sc_predictor_t **pp, const sc_conf_t *conf, const sc_pcli_opts_t *o)
{
        char err[1024];
        sc_predictor_spec_t spec;
        sc_predictor_spec_defaults(&spec);
        spec.conf = conf;
        spec.out_topic = o->out;
        spec.checkpoint = o->checkpoint;
        spec.follow_job = o->follow_job;
        spec.avro = o->avro;
        spec.batch = (int)o->batch;
        spec.log = sc_cli_log;
        spec.log_opaque = "predict";
        sc_err_t e = sc_predictor_new(pp, &spec, err, sizeof(err));
        if (e) {
                fprintf(stderr, "scadles predict: %s\n", err);
                return e == SC_ERR_CONFIG || e == SC_ERR_SHAPE || e == SC_ERR_INVAL ? 2 : 1;
        }
        if (!o->quiet)
                fprintf(stderr, "scadles predict: %s -> %s, group %s, %s%s\n", o->in, o->out,
                        o->group, o->follow_job ? "following job " : "checkpoint ",
                        o->follow_job ? conf->job.name : o->checkpoint);
        return 0;
}

/* Polls until a signal, --duration, --idle-exit or an error; the reason it
 * stopped ("error": *rc set to 1). */
static const char *sc_pcli_run(sc_predictor_t *p, const sc_pcli_opts_t *o, double t0, int *rc)
{
        char err[1024];
        double t_prog = t0, t_rate = t0, t_assigned = -1;
        uint64_t n_rate = 0;
        for (;;) {
                double now = sc_clock_mono();
                if (sc_cli_stop)
                        return "signal";
                if (o->duration > 0 && now - t0 >= o->duration)
                        return "duration";
                if (sc_predictor_poll(p, now, 10, err, sizeof(err))) {
                        fprintf(stderr, "scadles predict: %s\n", err);
                        *rc = 1;
                        return "error";
                }
                sc_predictor_stats_t st;
                sc_predictor_stats(p, &st);
                /* Idle from the last record, else from the first assignment
                 * (joining the group takes a while; before it, never idle). */
                if (t_assigned < 0 && sc_kafka_source_stats(sc_predictor_source(p))->ks_assigns)
                        t_assigned = now;
                double quiet_since = st.t_last_record >= 0 ? st.t_last_record : t_assigned;
                if (o->idle_exit > 0 && t_assigned >= 0 && now - quiet_since >= o->idle_exit &&
                    sc_predictor_idle(p))
                        return "idle";
                if (!o->quiet && o->progress > 0 && now - t_prog >= o->progress) {
                        t_prog = now;
                        sc_pcli_progress(p, now, t0, &n_rate, &t_rate);
                }
        }
}

/* "summary: {JSON}" on stdout: the predictor's counters, why it stopped,
 * the elapsed and processor seconds; says so when the accounting does not
 * add up. */
static void sc_pcli_summary(sc_predictor_t *p, const char *reason, double t0)
{
        json_t *j = sc_predictor_summary(p, 5000);
        if (!j)
                return;
        json_object_set_new(j, "stop_reason", json_string(reason));
        json_object_set_new(j, "elapsed", json_real(sc_clock_mono() - t0));
        /* Processor seconds of the whole process (every thread), the measure
         * of its cost on a machine it shares. */
        struct rusage ru;
        if (!getrusage(RUSAGE_SELF, &ru))
                json_object_set_new(
                    j, "cpu_s",
                    json_real((double)ru.ru_utime.tv_sec + 1e-6 * ru.ru_utime.tv_usec +
                              (double)ru.ru_stime.tv_sec + 1e-6 * ru.ru_stime.tv_usec));
        char *text = json_dumps(j, JSON_COMPACT);
        if (text)
                printf("summary: %s\n", text);
        free(text);
        if (!json_is_true(json_object_get(j, "identity_ok")))
                fprintf(stderr, "scadles predict: accounting does not add up: %s\n",
                        json_string_value(json_object_get(j, "identity_error")));
        json_decref(j);
}

int sc_cmd_predict(int argc, char **argv)
{
        char err[1024];
        sc_pcli_opts_t o;
        sc_conf_t conf;
        sc_predictor_t *p = NULL;
        int rc;

        if ((rc = sc_pcli_args(argc, argv, &o)) >= 0)
                return rc;
        sc_cli_quiet = o.quiet;
        sc_cli_signals();
        /* librdkafka's fetch buffers (up to max.partition.fetch.bytes each)
         * would each be a fresh mmap whose pages the kernel zeroes on first
         * touch, and freed heap tops would be trimmed likewise: an eighth of
         * the processor's time at 40k records/s. Kept, they are reused. */
        mallopt(M_MMAP_THRESHOLD, 64 << 20);
        mallopt(M_TRIM_THRESHOLD, 256 << 20);
        memset(&conf, 0, sizeof(conf));
        sc_kafka_log_set_sink(sc_cli_kafka_log, "predict");
        if (!(rc = sc_pcli_conf(&conf, &o)) && !(rc = sc_pcli_start(&p, &conf, &o))) {
                double t0 = sc_clock_mono();
                const char *reason = sc_pcli_run(p, &o, t0, &rc);
                if (sc_predictor_finish(p, sc_clock_mono(), 30000, err, sizeof(err))) {
                        fprintf(stderr, "scadles predict: %s\n", err);
                        if (!rc)
                                rc = 1;
                }
                sc_pcli_summary(p, reason, t0);
                fflush(stdout);
        }
        sc_predictor_destroy(p);
        sc_kafka_log_set_sink(NULL, NULL);
        sc_conf_free(&conf);
        return rc;
}
