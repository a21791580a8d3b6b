/* cmd_worker.c — `scadles worker`: trains a model online on Kafka topics
 * (standalone: no aggregator), with progress lines, periodic test accuracy
 * and a final machine-readable summary. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cmd.h"
#include "sc_batch.h"
#include "sc_conf.h"
#include "sc_data.h"
#include "sc_idx.h"
#include "sc_kafka_source.h"
#include "sc_kafka_util.h"
#include "sc_nn.h"
#include "sc_optim.h"
#include "sc_rng.h"

#define SC_WORKER_MAX_SETS 64
#define SC_WORKER_EVAL_BATCH 500
#define SC_WORKER_POLL_MAX 2048

typedef struct sc_worker_opts {
        const char *config, *bootstrap, *bootstrap_file;
        char *sets[SC_WORKER_MAX_SETS];
        int n_sets;
        double max_samples, duration, idle_exit, throttle; /* < 0 = from the config */
        int quiet;
} sc_worker_opts_t;

typedef struct sc_worker {
        sc_conf_t conf;
        int have_conf;
        int quiet;
        double throttle; /* samples/s the trainer is limited to; 0 = no limit */
        sc_dataset_t test;
        sc_model_t *model;
        sc_sgd_t sgd;
        sc_sched_spec_t sched;
        sc_rng_t rng; /* dropout */
        sc_kafka_source_t *src;
        sc_batch_t *batch;
        /* counters */
        uint64_t steps, samples, batches;
        double loss_sum, hits; /* since the last progress line */
        uint64_t seen;         /* samples since the last progress line */
        double last_acc, last_test_loss;
        double t_last_acc;
        double lr;
} sc_worker_t;

static void sc_worker_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles worker -c CONFIG [--set KEY=VALUE ...] [options]\n"
                "\n"
                "Trains the configured model online on Kafka topics as one member of the\n"
                "consumer group source.group_id (standalone: no aggregator). Each topic of\n"
                "source.topics / source.pattern is one stream, decoded per streams.* (or the\n"
                "topic's own keys) into a buffer with the streams.policy policy: persist pauses\n"
                "the topic's partitions at the high watermark (the backlog stays in Kafka),\n"
                "truncate keeps one window and counts what it drops. Batches are fixed or\n"
                "rate-proportional (worker.*), trained with SGD (optim.*, linear LR scaling by\n"
                "optim.base_batch). Offsets are committed only for records trained on,\n"
                "dropped or rejected as malformed.\n"
                "\n"
                "A progress line (samples/s in, trained, batch size, buffer occupancy, drops,\n"
                "rejects, records lost to retention, consumer lag, paused partitions, loss,\n"
                "test accuracy) goes to stderr every worker.progress_interval seconds; test\n"
                "accuracy on data.source's test half is measured every worker.eval_interval\n"
                "seconds. On stop the worker trains nothing more, commits, and prints\n"
                "\"test accuracy: A (hits/total)\" and \"summary: {JSON}\" to stdout "
                "(docs/STREAMS.md).\n"
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
                "                           is left to train (worker.idle_exit)\n"
                "  -t, --throttle R         train at most R samples/s: a slower device, for\n"
                "                           experiments and tests (default: no limit)\n"
                "  -q, --quiet              no progress or informational lines\n"
                "  -h, --help               this text\n"
                "\n"
                "SIGINT/SIGTERM stop the worker cleanly (commit, summary, exit 0).\n"
                "exit status: 0 stopped, 1 runtime error (Kafka, data, divergence),\n"
                "2 usage or configuration error.\n");
}

static int sc_worker_number(const char *opt, const char *s, double *out)
{
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (errno || end == s || *end || !isfinite(v) || v < 0) {
                fprintf(stderr, "scadles worker: %s %s: expected a number >= 0\n", opt, s);
                return -1;
        }
        *out = v;
        return 0;
}

/* Returns -1 to go on, else an exit code. */
static int sc_worker_args(int argc, char **argv, sc_worker_opts_t *o)
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
            {"quiet", no_argument, NULL, 'q'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        int c;
        memset(o, 0, sizeof(*o));
        o->max_samples = o->duration = o->idle_exit = o->throttle = -1;
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":c:s:b:B:n:d:i:t:qh", longopts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        o->config = optarg;
                        break;
                case 's':
                        if (o->n_sets == SC_WORKER_MAX_SETS) {
                                fprintf(stderr, "scadles worker: more than %d --set options\n",
                                        SC_WORKER_MAX_SETS);
                                return 2;
                        }
                        o->sets[o->n_sets++] = optarg;
                        break;
                case 'b':
                        o->bootstrap = optarg;
                        break;
                case 'B':
                        o->bootstrap_file = optarg;
                        break;
                case 'n':
                        if (sc_worker_number("--max-samples", optarg, &o->max_samples))
                                return 2;
                        break;
                case 'd':
                        if (sc_worker_number("--duration", optarg, &o->duration))
                                return 2;
                        break;
                case 'i':
                        if (sc_worker_number("--idle-exit", optarg, &o->idle_exit))
                                return 2;
                        break;
                case 't':
                        if (sc_worker_number("--throttle", optarg, &o->throttle))
                                return 2;
                        break;
                case 'q':
                        o->quiet = 1;
                        break;
                case 'h':
                        sc_worker_usage(stdout);
                        return 0;
                case ':':
                        fprintf(stderr, "scadles worker: option %s needs a value\n\n",
                                argv[optind - 1]);
                        sc_worker_usage(stderr);
                        return 2;
                default:
                        fprintf(stderr, "scadles worker: unknown option '%s'\n\n",
                                argv[optind - 1]);
                        sc_worker_usage(stderr);
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "scadles worker: unexpected argument '%s'\n\n", argv[optind]);
                sc_worker_usage(stderr);
                return 2;
        }
        if (!o->config) {
                fprintf(stderr, "scadles worker: -c CONFIG is required\n\n");
                sc_worker_usage(stderr);
                return 2;
        }
        return -1;
}

static void sc_worker_log(void *opaque, int level, const char *msg)
{
        const sc_worker_t *w = opaque;
        if (level > 6 || (level > 4 && w->quiet))
                return;
        fprintf(stderr, "scadles worker: %s\n", msg);
}

/* librdkafka's own log lines (from its threads): warnings and worse, or
 * notices too unless quiet. */
static void sc_worker_kafka_log(void *opaque, int level, const char *fac, const char *name,
                                const char *msg)
{
        const sc_worker_t *w = opaque;
        if (level > 5 || (level > 4 && w->quiet))
                return;
        fprintf(stderr, "scadles worker: kafka: %s: %s: %s\n", name, fac, msg);
}

/* Configuration, overrides and options; returns -1 to go on or an exit code. */
static int sc_worker_conf(sc_worker_t *w, const sc_worker_opts_t *o)
{
        char err[1024], line[1100];
        if (sc_conf_load(&w->conf, o->config, err, sizeof(err))) {
                fprintf(stderr, "scadles worker: %s\n", err);
                return 2;
        }
        w->have_conf = 1;
        for (int i = 0; i < o->n_sets; i++) {
                if (sc_conf_set(&w->conf, o->sets[i], err, sizeof(err))) {
                        fprintf(stderr, "scadles worker: %s\n", err);
                        return 2;
                }
        }
        const char *bs = o->bootstrap;
        char buf[1024];
        if (o->bootstrap_file) {
                FILE *f = fopen(o->bootstrap_file, "r");
                if (!f || !fgets(buf, sizeof(buf), f)) {
                        fprintf(stderr, "scadles worker: --bootstrap-file %s: %s\n",
                                o->bootstrap_file, f ? "empty" : strerror(errno));
                        if (f)
                                fclose(f);
                        return 2;
                }
                fclose(f);
                buf[strcspn(buf, "\r\n")] = '\0';
                bs = buf;
        }
        if (bs) {
                snprintf(line, sizeof(line), "kafka.bootstrap.servers=%s", bs);
                if (sc_conf_set(&w->conf, line, err, sizeof(err))) {
                        fprintf(stderr, "scadles worker: %s\n", err);
                        return 2;
                }
        }
        sc_conf_worker_t *wc = &w->conf.worker;
        if (o->max_samples >= 0)
                wc->max_samples = (long)o->max_samples;
        if (o->duration >= 0)
                wc->duration = o->duration;
        if (o->idle_exit >= 0)
                wc->idle_exit = o->idle_exit;
        w->throttle = o->throttle > 0 ? o->throttle : 0;
        const sc_conf_optim_t *op = &w->conf.optim;
        if (op->warmup_epochs > 0 || op->total_epochs > 0 || op->n_milestones_epochs > 0) {
                fprintf(stderr,
                        "scadles worker: %s: $.optim.schedule: epochs have no meaning on a "
                        "stream; give the schedule in steps\n",
                        w->conf.origin);
                return 2;
        }
        w->sched = op->sched;
        w->sched.lr = op->lr;
        if (w->sched.kind == SC_SCHED_COSINE && w->sched.total_steps == 0) {
                fprintf(stderr,
                        "scadles worker: %s: $.optim.schedule.total_steps: the cosine schedule "
                        "needs a horizon in steps on a stream\n",
                        w->conf.origin);
                return 2;
        }
        return -1;
}

/* Test set, model and optimizer; returns -1 to go on or an exit code. */
static int sc_worker_model(sc_worker_t *w)
{
        char err[1024];
        sc_conf_t *conf = &w->conf;
        if (sc_model_new(&w->model, &conf->model, err, sizeof(err))) {
                sc_conf_model_error(conf, err, sizeof(err));
                fprintf(stderr, "scadles worker: %s\n", err);
                return 2;
        }
        if (conf->model.loss != SC_LOSS_SOFTMAX_XENT) {
                fprintf(stderr,
                        "scadles worker: %s: $.model.loss: labelled streams need the softmax "
                        "cross-entropy loss\n",
                        conf->origin);
                return 2;
        }
        sc_nn_set_threads(conf->train.threads);
        sc_rng_t root, init;
        sc_rng_seed(&root, conf->train.seed);
        sc_rng_split(&root, &init, 1);
        sc_rng_split(&root, &w->rng, 2);
        sc_model_init(w->model, &init);
        sc_sgd_spec_t ss = {.momentum = conf->optim.momentum,
                            .nesterov = conf->optim.nesterov,
                            .weight_decay = conf->optim.weight_decay};
        if (sc_sgd_init(&w->sgd, &ss, sc_model_nparams(w->model))) {
                fprintf(stderr, "scadles worker: out of memory for the optimizer\n");
                return 1;
        }
        if (!conf->worker.eval)
                return -1;
        if (strcmp(conf->data.source, "fashion-mnist")) {
                fprintf(stderr,
                        "scadles worker: %s: $.data.source: the held-out set comes from "
                        "fashion-mnist (or set worker.eval=false)\n",
                        conf->origin);
                return 2;
        }
        if (sc_fmnist_load(conf->data.dir, NULL, &w->test, err, sizeof(err))) {
                fprintf(stderr, "scadles worker: Fashion-MNIST test set: %s\n", err);
                return 1;
        }
        if (sc_dataset_normalize(&w->test, (float)conf->data.mean, (float)conf->data.std, err,
                                 sizeof(err)) ||
            sc_shape_numel(w->test.shape) != sc_shape_numel(conf->model.input) ||
            sc_shape_numel(sc_model_output_shape(w->model)) != (size_t)w->test.n_classes) {
                fprintf(stderr,
                        "scadles worker: %s: $.model: does not fit the test set (%zu features, "
                        "%d classes)\n",
                        conf->origin, sc_shape_numel(w->test.shape), w->test.n_classes);
                return 2;
        }
        return -1;
}

/* Accuracy and mean loss on the first n test samples (0 = all); -1 on failure. */
static int sc_worker_eval(sc_worker_t *w, size_t n, double *acc, double *loss)
{
        const sc_dataset_t *ds = &w->test;
        size_t numel = sc_shape_numel(ds->shape), correct = 0;
        double sum = 0;
        if (n == 0 || n > ds->n)
                n = ds->n;
        for (size_t i = 0; i < n; i += SC_WORKER_EVAL_BATCH) {
                int b = (int)(n - i < SC_WORKER_EVAL_BATCH ? n - i : SC_WORKER_EVAL_BATCH), c = 0;
                float l =
                    sc_model_eval_batch(w->model, ds->x + i * numel, ds->y + i, NULL, b, &c, NULL);
                if (isnan(l))
                        return -1;
                sum += (double)l * b;
                correct += (size_t)c;
        }
        *acc = (double)correct / (double)n;
        *loss = sum / (double)n;
        return 0;
}

static void sc_worker_progress(sc_worker_t *w, double el, double dt, size_t in_since, int64_t lag)
{
        sc_stream_stats_t s;
        const sc_kafka_source_stats_t *ks = sc_kafka_source_stats(w->src);
        sc_kafka_source_totals(w->src, &s);
        sc_batcher_t *bt = sc_kafka_source_batcher(w->src);
        size_t pooled = bt ? sc_batcher_pooled(bt) : 0;
        int n_streams = sc_kafka_source_nstreams(w->src);
        double cap = (double)w->conf.streams.cap * (n_streams > 0 ? n_streams : 1);
        char acc[64] = "";
        if (w->t_last_acc > 0)
                snprintf(acc, sizeof(acc), "  test acc %.4f @%.0fs", w->last_acc, w->t_last_acc);
        fprintf(stderr,
                "worker: %6.1f s  in %.0f/s  trained %" PRIu64 " (%.0f/s)  batch %.0f  buf %" PRIu64
                " (%.0f%%) pool %zu  dropped %" PRIu64 "  rejected %" PRIu64 "  lost %" PRIu64
                "  lag %" PRId64 "  paused %d/%d  loss %.4f  train acc %.4f%s\n",
                el, dt > 0 ? (double)in_since / dt : 0.0, s.trained,
                dt > 0 ? (double)w->seen / dt : 0.0,
                w->batches ? (double)w->samples / (double)w->batches : 0.0, s.buffered,
                100.0 * (double)s.buffered / cap, pooled, s.dropped, s.rejected, ks->ks_lost, lag,
                ks->ks_paused_partitions, ks->ks_partitions,
                w->seen ? w->loss_sum / (double)w->seen : 0.0,
                w->seen ? w->hits / (double)w->seen : 0.0, acc);
        w->loss_sum = w->hits = 0;
        w->seen = 0;
}

/* Trains one ready batch; returns 0, or an exit code. */
static int sc_worker_step(sc_worker_t *w, sc_batcher_t *bt, double t)
{
        char err[512];
        if (sc_batcher_take(bt, t, w->batch, err, sizeof(err))) {
                fprintf(stderr, "scadles worker: %s\n", err);
                return 1;
        }
        int n = w->batch->n, correct = 0;
        float loss = sc_model_train_batch(w->model, w->batch->x, w->batch->labels, NULL, n, &w->rng,
                                          &correct);
        if (!isfinite(loss)) {
                fprintf(stderr,
                        "scadles worker: loss is %s at step %" PRIu64
                        " (diverged: lower optim.lr, or out of memory)\n",
                        isnan(loss) ? "NaN" : "infinite", w->steps);
                return 1;
        }
        double lr = sc_sched_lr(&w->sched, (long)w->steps);
        if (w->conf.optim.base_batch > 0)
                lr = sc_lr_scale_linear(lr, n, w->conf.optim.base_batch);
        w->lr = lr;
        sc_sgd_step(&w->sgd, sc_model_params(w->model), sc_model_grads(w->model), (float)lr);
        /* Standalone: the update is applied locally, so it is acknowledged at once. */
        if (sc_kafka_source_ack(w->src, w->batch->id, err, sizeof(err))) {
                fprintf(stderr, "scadles worker: %s\n", err);
                return 1;
        }
        w->steps++;
        w->batches++;
        w->samples += (uint64_t)n;
        w->seen += (uint64_t)n;
        w->loss_sum += (double)loss * n;
        w->hits += correct;
        if (w->throttle > 0) {
                double s = (double)n / w->throttle;
                struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
                nanosleep(&ts, NULL);
        }
        return 0;
}

/* The final summary: one "summary: {JSON}" line on stdout. */
static void sc_worker_summary(sc_worker_t *w, const char *reason, double el, double acc,
                              double test_loss, int evaluated)
{
        sc_stream_stats_t s;
        char err[512];
        const sc_kafka_source_stats_t *ks = sc_kafka_source_stats(w->src);
        sc_kafka_source_totals(w->src, &s);
        uint64_t rhs = s.trained + s.dropped + s.rejected + s.revoked + s.buffered + s.inflight;
        int ok = s.consumed == rhs && sc_kafka_source_check(w->src, err, sizeof(err)) == SC_OK;
        if (!ok)
                fprintf(stderr, "scadles worker: accounting does not add up: %s\n",
                        s.consumed == rhs ? err : "consumed != sum of outcomes");
        json_t *faults = json_object();
        for (int k = 1; k < SC_DECODE_FAULT__END; k++)
                if (s.faults.count[k])
                        json_object_set_new(faults, sc_decode_fault_name((sc_decode_fault_t)k),
                                            json_integer((json_int_t)s.faults.count[k]));
        json_t *j = json_pack(
            "{s:s, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:I, s:I, s:I, s:I, "
            "s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:o}",
            "reason", reason, "elapsed", el, "received", (json_int_t)ks->ks_received, "consumed",
            (json_int_t)s.consumed, "trained", (json_int_t)s.trained, "dropped",
            (json_int_t)s.dropped, "rejected", (json_int_t)s.rejected, "returned",
            (json_int_t)s.revoked, "buffered", (json_int_t)s.buffered, "inflight",
            (json_int_t)s.inflight, "held", (json_int_t)ks->ks_held, "identity_ok", ok, "lost",
            (json_int_t)ks->ks_lost, "orphaned", (json_int_t)ks->ks_orphaned, "duplicates",
            (json_int_t)ks->ks_duplicates, "dead_letter", (json_int_t)ks->ks_dead_letter,
            "dead_letter_failed", (json_int_t)ks->ks_dead_letter_failed, "batches",
            (json_int_t)w->batches, "pauses", (json_int_t)ks->ks_pauses, "resumes",
            (json_int_t)ks->ks_resumes, "peak_buffered", (json_int_t)s.peak_buffered, "rebalances",
            (json_int_t)(ks->ks_assigns + ks->ks_revokes), "commit_errors",
            (json_int_t)ks->ks_commit_errors, "mean_latency_s",
            s.taken ? s.latency_sum / (double)s.taken : 0.0, "faults", faults);
        if (!j)
                return;
        json_object_set_new(j, "redelivered", json_integer((json_int_t)ks->ks_redelivered));
        if (evaluated) {
                json_object_set_new(j, "test_accuracy", json_real(acc));
                json_object_set_new(j, "test_loss", json_real(test_loss));
        }
        json_t *streams = json_array();
        for (int i = 0; streams && i < sc_kafka_source_nstreams(w->src); i++) {
                const sc_stream_stats_t *ss;
                const char *topic = sc_kafka_source_stream(w->src, i, &ss);
                json_array_append_new(
                    streams,
                    json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "topic", topic, "consumed",
                              (json_int_t)ss->consumed, "trained", (json_int_t)ss->trained,
                              "dropped", (json_int_t)ss->dropped, "rejected",
                              (json_int_t)ss->rejected, "returned", (json_int_t)ss->revoked));
        }
        if (streams)
                json_object_set_new(j, "streams", streams);
        json_t *parts = sc_kafka_source_partitions(w->src, 5000);
        if (parts)
                json_object_set_new(j, "partitions", parts);
        char *text = json_dumps(j, JSON_COMPACT);
        if (text)
                printf("summary: %s\n", text);
        fflush(stdout);
        free(text);
        json_decref(j);
        fprintf(stderr,
                "worker: stopped (%s) after %.1f s: consumed %" PRIu64 " = trained %" PRIu64
                " + dropped %" PRIu64 " + rejected %" PRIu64 " + returned %" PRIu64
                " + buffered %" PRIu64 " + inflight %" PRIu64 " (%s); lost %" PRIu64
                ", held %" PRIu64 ", %" PRIu64 " batches\n",
                reason, el, s.consumed, s.trained, s.dropped, s.rejected, s.revoked, s.buffered,
                s.inflight, ok ? "exact" : "MISMATCH", ks->ks_lost, ks->ks_held, w->batches);
}

/* 1 while a batch can still form from what is buffered (once draining). */
static int sc_worker_left(sc_worker_t *w)
{
        sc_stream_stats_t s;
        sc_batcher_t *bt = sc_kafka_source_batcher(w->src);
        if (!bt)
                return 0;
        sc_kafka_source_totals(w->src, &s);
        uint64_t need = (uint64_t)(w->conf.worker.batch == SC_BATCH_FIXED ? w->conf.worker.b
                                                                          : w->conf.worker.b_min);
        return s.buffered + sc_batcher_pooled(bt) >= need;
}

/* The training loop; returns an exit code. */
static int sc_worker_run(sc_worker_t *w)
{
        char err[1024];
        const sc_conf_worker_t *wc = &w->conf.worker;
        double t0 = sc_cli_now(), t_rx = t0, t_prog = t0, t_eval = t0, t_commit = t0;
        size_t in_since = 0;
        uint64_t rebalances = 0;
        int draining = 0, rc = 0;
        const char *reason = "signal";

        for (;;) {
                double t = sc_cli_now();
                if (sc_cli_stop)
                        break;
                if (wc->duration > 0 && t - t0 >= wc->duration) {
                        reason = "duration";
                        break;
                }
                if (wc->max_samples > 0 && w->samples >= (uint64_t)wc->max_samples) {
                        reason = "max-samples";
                        break;
                }
                sc_batcher_t *bt = sc_kafka_source_batcher(w->src);
                double wake = INFINITY;
                int ready = bt && sc_batcher_ready(bt, t, &wake);
                /* Short waits: librdkafka hands over about one fetch per wake-up. */
                int timeout = ready ? 0 : (int)fmin(10.0, fmax(1.0, (wake - t) * 1000.0));
                size_t got = 0;
                if (sc_kafka_source_poll(w->src, t, timeout, SC_WORKER_POLL_MAX, &got, err,
                                         sizeof(err))) {
                        fprintf(stderr, "scadles worker: %s\n", err);
                        rc = 1;
                        break;
                }
                t = sc_cli_now();
                in_since += got;
                /* Idle time counts from the last record or the last rebalance. */
                uint64_t events = sc_kafka_source_stats(w->src)->ks_assigns +
                                  sc_kafka_source_stats(w->src)->ks_revokes;
                if (got || events != rebalances)
                        t_rx = t;
                rebalances = events;
                /* No arrivals for a while: end of input, release the shuffle buffer. */
                int quiet = t - t_rx > fmax(0.5, 2 * wc->window);
                bt = sc_kafka_source_batcher(w->src);
                if (bt && quiet != draining) {
                        sc_batcher_drain(bt, quiet);
                        draining = quiet;
                }
                ready = bt && sc_batcher_ready(bt, t, NULL);
                if (ready && (rc = sc_worker_step(w, bt, t)))
                        break;
                /* Idle: partitions were assigned once, nothing arrived for idle_exit
                 * seconds since the last record or rebalance, and no batch can form. */
                if (!ready && wc->idle_exit > 0 && rebalances > 0 && t - t_rx >= wc->idle_exit &&
                    sc_worker_left(w) == 0) {
                        reason = "idle";
                        break;
                }
                t = sc_cli_now();
                if (t - t_commit >= wc->commit_interval) {
                        if (sc_kafka_source_commit(w->src, 0, err, sizeof(err)))
                                fprintf(stderr, "scadles worker: %s\n", err);
                        t_commit = t;
                }
                if (w->test.n && wc->eval_interval > 0 && t - t_eval >= wc->eval_interval &&
                    w->steps > 0) {
                        if (sc_worker_eval(w, (size_t)wc->eval_samples, &w->last_acc,
                                           &w->last_test_loss) == 0)
                                w->t_last_acc = t - t0;
                        t_eval = sc_cli_now();
                }
                if (!w->quiet && wc->progress_interval > 0 && t - t_prog >= wc->progress_interval) {
                        int64_t lag = sc_kafka_source_lag(w->src, 500);
                        sc_worker_progress(w, t - t0, t - t_prog, in_since, lag);
                        in_since = 0;
                        t_prog = sc_cli_now();
                }
        }
        double el = sc_cli_now() - t0;
        if (sc_kafka_source_finish(w->src, 10000, err, sizeof(err))) {
                fprintf(stderr, "scadles worker: %s\n", err);
                if (!rc)
                        rc = 1;
        }
        double acc = 0, loss = 0;
        int evaluated = w->test.n > 0 && sc_worker_eval(w, 0, &acc, &loss) == 0;
        if (evaluated) {
                printf("test accuracy: %.4f (%zu/%zu)\n", acc,
                       (size_t)llround(acc * (double)w->test.n), w->test.n);
                fflush(stdout);
        }
        sc_worker_summary(w, rc ? "error" : reason, el, acc, loss, evaluated);
        return rc;
}

int sc_cmd_worker(int argc, char **argv)
{
        char err[1024];
        sc_worker_opts_t o;
        sc_worker_t w;
        int rc;

        memset(&w, 0, sizeof(w));
        if ((rc = sc_worker_args(argc, argv, &o)) >= 0)
                return rc;
        w.quiet = o.quiet;
        sc_cli_signals();
        if ((rc = sc_worker_conf(&w, &o)) >= 0 || (rc = sc_worker_model(&w)) >= 0)
                goto out;
        rc = 0;
        size_t numel = sc_shape_numel(w.conf.model.input);
        int n_classes = (int)sc_shape_numel(sc_model_output_shape(w.model));
        sc_batch_spec_t bs;
        sc_batch_spec_defaults(&bs);
        bs.mode = (sc_batch_mode_t)w.conf.worker.batch;
        bs.b = w.conf.worker.b;
        bs.b_max = w.conf.worker.b_max;
        if (sc_batch_new(&w.batch, sc_batch_spec_max(&bs), numel)) {
                fprintf(stderr, "scadles worker: out of memory for a batch\n");
                rc = 1;
                goto out;
        }
        sc_kafka_log_set_sink(sc_worker_kafka_log, &w);
        if (sc_kafka_source_new(&w.src, &w.conf, numel, n_classes, w.conf.train.seed, sc_worker_log,
                                &w, err, sizeof(err))) {
                fprintf(stderr, "scadles worker: %s\n", err);
                rc = 2;
                goto out;
        }
        if (!w.quiet)
                fprintf(stderr,
                        "scadles worker: %zu parameters, group %s, policy %s, batch %s, "
                        "%zu test samples\n",
                        sc_model_nparams(w.model), w.conf.source.group_id,
                        w.conf.streams.policy == SC_STREAM_TRUNCATE ? "truncate" : "persist",
                        w.conf.worker.batch == SC_BATCH_FIXED ? "fixed" : "rate", w.test.n);
        rc = sc_worker_run(&w);
out:
        sc_kafka_source_destroy(w.src);
        sc_kafka_log_set_sink(NULL, NULL);
        sc_batch_destroy(w.batch);
        sc_sgd_free(&w.sgd);
        sc_model_destroy(w.model);
        sc_dataset_free(&w.test);
        if (w.have_conf)
                sc_conf_free(&w.conf);
        return rc;
}
