/* cmd_worker.c — `scadles worker`: trains a model online on Kafka topics,
 * standalone or as a worker of a distributed job, with progress lines,
 * periodic test accuracy and a final machine-readable summary (the runtime
 * is connectors/worker.c). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cmd.h"
#include "sc_clock.h"
#include "sc_batch.h"
#include "sc_conf.h"
#include "sc_kafka_util.h"
#include "sc_stream.h"
#include "sc_worker.h"

typedef struct sc_wcli_opts {
        sc_cli_conf_opts_t co;
        double max_samples, duration, idle_exit, throttle; /* < 0 = from the config */
        double alpha, beta;
        int id;
        int quiet;
} sc_wcli_opts_t;

static void sc_wcli_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles worker -c CONFIG [--set KEY=VALUE ...] [--id N] [options]\n"
                "\n"
                "Trains the configured model online on Kafka topics as one member of the\n"
                "consumer group source.group_id. Standalone (no job section): the update is\n"
                "applied locally. Distributed (the config has a job section, or --id is\n"
                "given): worker --id of job job.name, sending updates to J.grad under\n"
                "job.sync.policy and job.codec, following the global model on J.model and\n"
                "its membership on J.ctl (docs/DISTRIBUTED.md). Each topic of\n"
                "source.topics / source.pattern is one stream, decoded per streams.* (or the\n"
                "topic's own keys: json, csv, raw, or avro framed for a Schema Registry whose\n"
                "schemas come from source.schema_registry.url; docs/STREAMS.md) into a\n"
                "buffer with the streams.policy policy: persist pauses\n"
                "the topic's partitions at the high watermark (the backlog stays in Kafka),\n"
                "truncate keeps one window and counts what it drops. Batches are fixed or\n"
                "rate-proportional (worker.*), trained with SGD (optim.*, linear LR scaling by\n"
                "optim.base_batch). Offsets are committed only for records trained on (for a\n"
                "distributed worker: once the broker acknowledged the update that used them),\n"
                "dropped or rejected as malformed.\n"
                "\n"
                "A progress line (samples/s in, trained, batch size, buffer occupancy, drops,\n"
                "rejects, records lost to retention, consumer lag, paused partitions, loss,\n"
                "prequential accuracy: each batch scored before it trains, test accuracy)\n"
                "goes to stderr every worker.progress_interval seconds; test accuracy on the\n"
                "held-out set (eval.file or eval.topic, else Fashion-MNIST's test set) is\n"
                "measured every worker.eval_interval seconds. With train.checkpoint the model\n"
                "is saved every train.checkpoint_interval seconds and at stop, with the\n"
                "records it holds; a standalone worker started again goes on from it (model,\n"
                "optimizer, step, each partition at the checkpoint's offset, records the\n"
                "model holds skipped; train.resume false starts afresh). On stop the\n"
                "worker reads nothing more and trains its shuffle pool (the last batch\n"
                "partial; not after --max-samples), then it commits and prints\n"
                "\"test accuracy: A (hits/total)\" and \"summary: {JSON}\" to stdout\n"
                "(docs/STREAMS.md).\n"
                "\n"
                "With metrics.listen (e.g. --set metrics.listen=127.0.0.1:9464) the worker\n"
                "serves Prometheus metrics on /metrics and its health on /healthz; a drift\n"
                "of the prequential error (drift.*) is logged and counted\n"
                "(docs/OPERATIONS.md).\n"
                "\n"
                "options:\n"
                "  -c, --config FILE        JSON configuration (see `scadles config`)\n"
                "  -s, --set KEY=VALUE      override one property (repeatable), e.g.\n"
                "                           --set streams.policy=truncate\n"
                "  -b, --bootstrap ADDR     Kafka bootstrap servers (kafka.bootstrap.servers)\n"
                "  -B, --bootstrap-file F   read the bootstrap address from F (as written by\n"
                "                           `scadles broker --bootstrap-file`)\n"
                "  -n, --max-samples N      stop after training on N samples (worker.max_samples)\n"
                "  -d, --duration S         stop after S seconds (worker.duration)\n"
                "  -i, --idle-exit S        stop when no record arrived for S seconds and nothing\n"
                "                           is left to train (worker.idle_exit; 3 x S while a\n"
                "                           revocation left it no partition); time without a\n"
                "                           reachable broker does not count. A job worker\n"
                "                           also stops once its policy waited S seconds plus\n"
                "                           job.session_timeout and job.sync.round_timeout\n"
                "                           for a model (no aggregator): its batches stay\n"
                "                           uncommitted for a later run\n"
                "  -t, --throttle R         train at most R samples/s: a slower device, for\n"
                "                           experiments and tests (default: no limit)\n"
                "      --id N               distributed: this worker's id, 0 .. job.workers-1\n"
                "      --inject-alpha A     distributed: probability that a batch shares part of\n"
                "                           itself on J.inject (default: job.inject_alpha)\n"
                "      --inject-beta B      fraction of a batch shared, and the most foreign\n"
                "                           samples mixed into one (default: job.inject_beta)\n"
                "  -q, --quiet              no progress or informational lines\n"
                "  -h, --help               this text\n"
                "\n"
                "SIGINT/SIGTERM stop the worker cleanly (commit, summary, exit 0).\n"
                "exit status: 0 stopped, 1 runtime error (Kafka, data, divergence),\n"
                "2 usage or configuration error.\n");
}

/* Returns -1 to go on, else an exit code. */
static int sc_wcli_args(int argc, char **argv, sc_wcli_opts_t *o)
{
        static const struct option longopts[] = {
            {"config", required_argument, NULL, 'c'},
            {"set", required_argument, NULL, 's'},
            {"bootstrap", required_argument, NULL, 'b'},
            {"bootstrap-file", required_argument, NULL, 'B'},
            {"max-samples", required_argument, NULL, 'n'},
            {"duration", required_argument, NULL, 'd'},
            {"idle-exit", required_argument, NULL, 'i'},
            {"throttle", required_argument, NULL, 't'},
            {"id", required_argument, NULL, 'I'},
            {"inject-alpha", required_argument, NULL, 'A'},
            {"inject-beta", required_argument, NULL, 'E'},
            {"quiet", no_argument, NULL, 'q'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        int c;
        long long id;
        memset(o, 0, sizeof(*o));
        o->max_samples = o->duration = o->idle_exit = o->throttle = -1;
        o->id = -1;
        o->alpha = o->beta = -1; /* unset: job.inject_alpha / job.inject_beta */
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":c:s:b:B:n:d:i:t:qh", longopts, NULL)) != -1) {
                int taken = sc_cli_conf_opt("worker", &o->co, c, optarg);
                if (taken < 0)
                        return 2;
                if (taken)
                        continue;
                switch (c) {
                case 'n':
                        if (sc_cli_number("worker", "--max-samples", optarg, &o->max_samples))
                                return 2;
                        break;
                case 'd':
                        if (sc_cli_number("worker", "--duration", optarg, &o->duration))
                                return 2;
                        break;
                case 'i':
                        if (sc_cli_number("worker", "--idle-exit", optarg, &o->idle_exit))
                                return 2;
                        break;
                case 't':
                        if (sc_cli_number("worker", "--throttle", optarg, &o->throttle))
                                return 2;
                        break;
                case 'I':
                        if (sc_cli_integer("worker", "--id", optarg, 0, 65535, &id))
                                return 2;
                        o->id = (int)id;
                        break;
                case 'A':
                case 'E':
                        if (sc_cli_number_in("worker",
                                             c == 'A' ? "--inject-alpha" : "--inject-beta", optarg,
                                             0, 1, c == 'A' ? &o->alpha : &o->beta))
                                return 2;
                        break;
                case 'q':
                        o->quiet = 1;
                        break;
                default:
                        return sc_cli_opt_other("worker", c, argv, sc_wcli_usage);
                }
        }
        if (sc_cli_no_operands("worker", argc, argv, sc_wcli_usage))
                return 2;
        if (!o->co.config) {
                fprintf(stderr, "scadles worker: -c CONFIG is required\n\n");
                sc_wcli_usage(stderr);
                return 2;
        }
        return -1;
}

static void sc_wcli_log(void *opaque, int level, const char *msg)
{
        /* Progress lines read "worker: ...", the others name the command. */
        if (level == 6 && !sc_cli_quiet && isdigit((unsigned char)msg[strspn(msg, " ")]))
                fprintf(stderr, "worker: %s\n", msg);
        else
                sc_cli_log(opaque, level, msg);
}

/* Configuration, overrides and options; returns -1 to go on or an exit code. */
static int sc_wcli_conf(sc_conf_t *conf, const sc_wcli_opts_t *o)
{
        if (sc_cli_conf_load("worker", conf, &o->co))
                return 2;
        if (o->max_samples >= 0)
                conf->worker.max_samples = (long)o->max_samples;
        if (o->duration >= 0)
                conf->worker.duration = o->duration;
        if (o->idle_exit >= 0)
                conf->worker.idle_exit = o->idle_exit;
        return -1;
}

/* The worker's spec from the options and the configuration; returns -1 to
 * go on, else an exit code. */
static int sc_wcli_spec(sc_worker_spec_t *spec, sc_conf_t *conf, const sc_wcli_opts_t *o)
{
        sc_worker_spec_defaults(spec);
        spec->conf = conf;
        spec->distributed = o->id >= 0 || sc_conf_section_given(conf, "job");
        spec->worker_id = o->id >= 0 ? o->id : 0;
        spec->throttle = o->throttle > 0 ? o->throttle : 0;
        spec->inject_alpha = o->alpha >= 0 ? o->alpha : conf->job.inject_alpha;
        spec->inject_beta =
            spec->distributed ? (o->beta >= 0 ? o->beta : conf->job.inject_beta) : 0;
        spec->log = sc_wcli_log;
        spec->log_opaque = "worker";
        if (spec->distributed && o->id < 0) {
                fprintf(stderr,
                        "scadles worker: %s has a job section: give this worker's --id "
                        "(0 .. job.workers-1)\n",
                        o->co.config);
                return 2;
        }
        return -1;
}

/* Polls the worker until it is done or a signal stops it (a signal is seen
 * after the poll under way: the worker sleeps at most 250 ms, less when it
 * has work due), then finishes it; returns the exit code so far. */
static int sc_wcli_run(sc_worker_t *w)
{
        char err[1024];
        int rc = 0;
        while (!sc_worker_done(w, NULL)) {
                if (sc_cli_stop) {
                        sc_worker_stop(w, "signal");
                        break;
                }
                if (sc_worker_poll(w, sc_clock_mono(), 250, err, sizeof(err))) {
                        fprintf(stderr, "scadles worker: %s\n", err);
                        sc_worker_stop(w, "error");
                        rc = 1;
                }
        }
        if (sc_worker_finish(w, 10000, err, sizeof(err))) {
                fprintf(stderr, "scadles worker: %s\n", err);
                if (!rc)
                        rc = 1;
        }
        return rc;
}

/* The accounting line on stderr, and a warning when it does not add up. */
static void sc_wcli_accounting(json_t *j, const char *reason)
{
        json_t *ok = json_object_get(j, "identity_ok");
        fprintf(stderr,
                "worker: stopped (%s) after %.1f s: consumed %lld = trained %lld + "
                "dropped %lld + rejected %lld + returned %lld + buffered %lld + inflight "
                "%lld (%s); lost %lld, %lld batches\n",
                reason, json_real_value(json_object_get(j, "elapsed")),
                (long long)json_integer_value(json_object_get(j, "consumed")),
                (long long)json_integer_value(json_object_get(j, "trained")),
                (long long)json_integer_value(json_object_get(j, "dropped")),
                (long long)json_integer_value(json_object_get(j, "rejected")),
                (long long)json_integer_value(json_object_get(j, "returned")),
                (long long)json_integer_value(json_object_get(j, "buffered")),
                (long long)json_integer_value(json_object_get(j, "inflight")),
                json_is_true(ok) ? "exact" : "MISMATCH",
                (long long)json_integer_value(json_object_get(j, "lost")),
                (long long)json_integer_value(json_object_get(j, "batches")));
        json_int_t skipped = json_integer_value(json_object_get(j, "skipped"));
        if (skipped)
                fprintf(stderr, "worker: %lld record(s) skipped: %s had trained them\n",
                        (long long)skipped,
                        json_object_get(j, "job")
                            ? "the job's model (the group's commits name them)"
                            : "the checkpoint it resumed from");
        if (!json_is_true(ok))
                fprintf(stderr, "scadles worker: accounting does not add up: %s\n",
                        json_string_value(json_object_get(j, "identity_error")));
}

/* "test accuracy: ..." and "summary: {JSON}" on stdout, the accounting on
 * stderr. */
static void sc_wcli_report(sc_worker_t *w, const char *reason)
{
        char *text = sc_worker_stats_json(w);
        json_t *j = text ? json_loads(text, 0, NULL) : NULL;
        json_t *acc = j ? json_object_get(j, "test_accuracy") : NULL;
        if (acc) {
                /* Over the whole test set, after the last update. */
                double a = json_real_value(acc);
                long long n = (long long)json_integer_value(json_object_get(j, "test_samples"));
                printf("test accuracy: %.4f (%lld/%lld)\n", a, (long long)llround(a * (double)n),
                       n);
        }
        if (text)
                printf("summary: %s\n", text);
        fflush(stdout);
        if (j)
                sc_wcli_accounting(j, reason);
        json_decref(j);
        free(text);
}

int sc_cmd_worker(int argc, char **argv)
{
        char err[1024];
        sc_wcli_opts_t o;
        sc_conf_t conf;
        sc_worker_t *w = NULL;
        sc_worker_spec_t spec;
        int rc, have_conf = 0;
        const char *reason;

        if ((rc = sc_wcli_args(argc, argv, &o)) >= 0)
                return rc;
        sc_cli_quiet = o.quiet;
        sc_cli_signals();
        memset(&conf, 0, sizeof(conf));
        have_conf = 1;
        if ((rc = sc_wcli_conf(&conf, &o)) >= 0 || (rc = sc_wcli_spec(&spec, &conf, &o)) >= 0)
                goto out;
        sc_kafka_log_set_sink(sc_cli_kafka_log, "worker");
        sc_err_t e = sc_worker_new(&w, &spec, err, sizeof(err));
        if (e) {
                fprintf(stderr, "scadles worker: %s\n", err);
                rc = e == SC_ERR_CONFIG ? 2 : 1;
                goto out;
        }
        if (!o.quiet)
                fprintf(stderr, "scadles worker: group %s, policy %s, batch %s%s\n",
                        conf.source.group_id,
                        conf.streams.buffer.policy == SC_STREAM_TRUNCATE ? "truncate" : "persist",
                        conf.worker.batch.mode == SC_BATCH_FIXED ? "fixed" : "rate",
                        spec.distributed ? ", distributed" : ", standalone");
        rc = sc_wcli_run(w);
        sc_worker_done(w, &reason);
        sc_wcli_report(w, reason);
        if (!strcmp(reason, "error") && !rc)
                rc = 1;
out:
        sc_worker_destroy(w);
        sc_kafka_log_set_sink(NULL, NULL);
        if (have_conf)
                sc_conf_free(&conf);
        return rc;
}
