/* cmd_demo.c — `scadles demo`: a whole distributed job on one machine: the
 * embedded broker in-process, a Fashion-MNIST feed on several topics at
 * heterogeneous rates, N workers and two aggregators as child processes, and
 * an evaluator that follows the model broadcast (J.bcast) and reports test accuracy over time;
 * ends with a summary computed from the children's counters and a PNG plot. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <jansson.h>

#include "cmd.h"
#include "sc_job_auth.h"
#include "sc_clock.h"
#include "sc_broker.h"
#include "sc_codec.h"
#include "sc_conf.h"
#include "sc_data.h"
#include "sc_idx.h"
#include "sc_eval_set.h"
#include "sc_feed.h"
#include "sc_job.h"
#include "sc_job_model.h"
#include "sc_model_out.h"
#include "sc_kafka_admin.h"
#include "sc_kafka_model.h"
#include "sc_kafka_util.h"
#include "sc_nn.h"

#define SC_DEMO_MAX_WORKERS 16
#define SC_DEMO_MAX_POINTS 4096
#define SC_DEMO_MAX_TOPICS 16

typedef struct sc_demo_opts {
        int workers, topics, partitions, quiet, plot;
        double rate, duration, target, eval_every;
        long long seed;
        const char *out, *bootstrap, *rate_set;
        sc_cli_conf_opts_t co; /* --set only */
} sc_demo_opts_t;

static void sc_demo_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles demo [options]\n"
                "\n"
                "Runs a distributed training job on this machine and reports how it learns:\n"
                "  - the embedded Kafka broker (in this process), or the Kafka cluster\n"
                "    --bootstrap names (the run's topics and job then get names of their\n"
                "    own, demo-<unix time>-<pid>[-fmnist.N], created there);\n"
                "  - `scadles feed`: Fashion-MNIST's training half to --topics topics\n"
                "    (demo-fmnist.0 ..), each at its own rate drawn uniformly around --rate\n"
                "    samples/s, or from --rate-set (heterogeneous streams);\n"
                "  - --workers `scadles worker` processes (one consumer group over the topics,\n"
                "    rate-proportional batches, updates compressed with top-k 25%% + error\n"
                "    feedback to J.grad under the scadles policy, sharing 10%% of a batch on\n"
                "    J.inject with probability 0.2);\n"
                "  - two `scadles aggregator` processes in one group, splitting the 4 model\n"
                "    shards and broadcasting every version on J.bcast;\n"
                "  - an evaluator here that follows J.bcast and measures test accuracy on\n"
                "    the 10,000 test images every --eval-every seconds (a model with\n"
                "    batchnorm, set by --set, first has its running statistics recomputed\n"
                "    on 5,000 training images: J.bcast carries parameters only).\n"
                "It stops at --target test accuracy or after --duration seconds (or Ctrl-C),\n"
                "stops the feed, the workers (they commit what the broker acknowledged) and\n"
                "the aggregators in turn, and prints a summary: test accuracy (of the final\n"
                "model, every shard at the version its aggregator released), time to 85%%\n"
                "and to --target, wall time, bytes up (updates) and down (models),\n"
                "compression ratio, records fed, trained and lost, all from the processes'\n"
                "own counters. Files go to --out: job.json, each process's output,\n"
                "accuracy.tsv and accuracy.png (gnuplot).\n"
                "\n"
                "options:\n"
                "  -w, --workers N      worker processes, 1..16 (default 4)\n"
                "  -t, --topics N       data topics, 1..16 (default 6)\n"
                "      --partitions N   partitions of each data topic, 1..64 (default 4; with\n"
                "                       1 and as many topics as workers, each worker reads one\n"
                "                       topic: one device's stream)\n"
                "  -r, --rate R         mean samples/s per topic (default 450)\n"
                "      --rate-set S     per-topic rates drawn from a ScaDLES rate set instead:\n"
                "                       S1, S2, S10 or S20 (scadles feed --help)\n"
                "      --seed N         seed of the feed's rates and sample order (default 1)\n"
                "  -b, --bootstrap ADDR a Kafka cluster to run on instead of the embedded\n"
                "                       broker (its settings, e.g. security, by --set\n"
                "                       kafka.NAME=VALUE)\n"
                "  -d, --duration S     longest run in seconds (default 170)\n"
                "  -a, --target A       stop once test accuracy >= A; 0 = run the whole\n"
                "                       duration (default 0.855)\n"
                "  -e, --eval-every S   seconds between evaluations (default 2)\n"
                "  -o, --out DIR        output folder (default build/demo)\n"
                "  -s, --set KEY=VALUE  override a property of the job's configuration\n"
                "                       (e.g. job.sync.policy=asp, job.codec.name=none)\n"
                "      --no-plot        do not run gnuplot\n"
                "  -q, --quiet          no progress lines\n"
                "  -h, --help           this text\n"
                "\n"
                "exit status: 0 done (whatever the accuracy), 1 runtime failure, 2 usage.\n");
}

static int sc_demo_args(int argc, char **argv, sc_demo_opts_t *o)
{
        static const struct option lo[] = {{"workers", required_argument, NULL, 'w'},
                                           {"topics", required_argument, NULL, 't'},
                                           {"rate", required_argument, NULL, 'r'},
                                           {"duration", required_argument, NULL, 'd'},
                                           {"target", required_argument, NULL, 'a'},
                                           {"eval-every", required_argument, NULL, 'e'},
                                           {"out", required_argument, NULL, 'o'},
                                           {"set", required_argument, NULL, 's'},
                                           {"no-plot", no_argument, NULL, 'P'},
                                           {"quiet", no_argument, NULL, 'q'},
                                           {"help", no_argument, NULL, 'h'},
                                           {"rate-set", required_argument, NULL, 'R'},
                                           {"partitions", required_argument, NULL, 'p'},
                                           {"seed", required_argument, NULL, 'S'},
                                           {"bootstrap", required_argument, NULL, 'b'},
                                           {NULL, 0, NULL, 0}};
        long long v;
        int c;
        memset(o, 0, sizeof(*o));
        o->workers = 4;
        o->topics = 6;
        o->partitions = 4;
        o->rate = 450;
        o->duration = 170;
        o->target = 0.855;
        o->eval_every = 2;
        o->out = "build/demo";
        o->plot = 1;
        o->seed = 1;
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":w:t:r:d:a:e:o:s:b:qh", lo, NULL)) != -1) {
                int taken = c == 's' ? sc_cli_conf_opt("demo", &o->co, c, optarg) : 0;
                if (taken < 0)
                        return 2;
                if (taken)
                        continue;
                switch (c) {
                case 'w':
                case 't':
                        if (sc_cli_integer("demo", c == 'w' ? "--workers" : "--topics", optarg, 1,
                                           c == 'w' ? SC_DEMO_MAX_WORKERS : SC_DEMO_MAX_TOPICS, &v))
                                return 2;
                        *(c == 'w' ? &o->workers : &o->topics) = (int)v;
                        break;
                case 'r':
                        if (sc_cli_number_in("demo", "--rate", optarg, 1, 100000, &o->rate))
                                return 2;
                        break;
                case 'd':
                        if (sc_cli_number_in("demo", "--duration", optarg, 1, 86400, &o->duration))
                                return 2;
                        break;
                case 'a':
                        if (sc_cli_number_in("demo", "--target", optarg, 0, 1, &o->target))
                                return 2;
                        break;
                case 'e':
                        if (sc_cli_number_in("demo", "--eval-every", optarg, 0.1, 3600,
                                             &o->eval_every))
                                return 2;
                        break;
                case 'o':
                        o->out = optarg;
                        break;
                case 'b':
                        o->bootstrap = optarg;
                        break;
                case 'R': {
                        char why[128];
                        if (sc_feed_rate_set_check(optarg, why, sizeof(why))) {
                                fprintf(stderr, "scadles demo: %s\n", why);
                                return 2;
                        }
                        o->rate_set = optarg;
                        break;
                }
                case 'S':
                        if (sc_cli_integer("demo", "--seed", optarg, 0, 0x7fffffff, &o->seed))
                                return 2;
                        break;
                case 'p':
                        if (sc_cli_integer("demo", "--partitions", optarg, 1, 64, &v))
                                return 2;
                        o->partitions = (int)v;
                        break;
                case 'P':
                        o->plot = 0;
                        break;
                case 'q':
                        o->quiet = 1;
                        break;
                default:
                        return sc_cli_opt_other("demo", c, argv, sc_demo_usage);
                }
        }
        if (sc_cli_no_operands("demo", argc, argv, sc_demo_usage))
                return 2;
        return -1;
}

/* The job's configuration (docs/CONFIG.md), before --set overrides. */
static const char sc_demo_job[] =
    "{\n"
    "  \"model\": {\"input\": [1, 28, 28], \"loss\": \"softmax_xent\",\n"
    "    \"layers\": [{\"type\": \"flatten\"}, {\"type\": \"dense\", \"units\": 128},\n"
    "                {\"type\": \"relu\"}, {\"type\": \"dense\", \"units\": 10}]},\n"
    "  \"optim\": {\"lr\": 0.05, \"momentum\": 0.9,\n"
    "    \"schedule\": {\"type\": \"cosine\", \"total_steps\": 600, \"min_lr\": 0.004}},\n"
    "  \"train\": {\"seed\": 1, \"threads\": 1},\n"
    "  \"data\": {\"source\": \"fashion-mnist\", \"mean\": 0.286, \"std\": 0.353},\n"
    "  \"source\": {\"group_id\": \"%s-workers\", \"pattern\": \"^%s\\\\..*\"},\n"
    "  \"streams\": {\"format\": \"raw\", \"label\": \"key\", \"scale\": 0.00392156862745098,\n"
    "    \"mean\": 0.286, \"std\": 0.353, \"policy\": \"persist\", \"cap\": 4096},\n"
    "  \"worker\": {\"batch\": \"rate\", \"window\": 0.1, \"b_min\": 16, \"b_max\": 128,\n"
    "    \"shuffle\": 256, \"progress_interval\": 5, \"eval\": false},\n"
    "  \"job\": {\"name\": \"%s\", \"shards\": 4, \"workers\": %d,\n"
    "    \"sync\": {\"policy\": \"scadles\", \"base_batch\": %d},\n"
    "    \"codec\": {\"name\": \"topk\", \"ratio\": 0.25, \"error_feedback\": 1},\n"
    "    \"session_timeout\": 6, \"progress_interval\": 5},\n"
    "  \"kafka\": {\"bootstrap.servers\": \"%s\"},\n"
    "  \"kafka_consumer\": {\"fetch.wait.max.ms\": 5, \"session.timeout.ms\": 6000,\n"
    "    \"heartbeat.interval.ms\": 500}\n"
    "}\n";

/* Before the aggregators are stopped: waits (at most max_s seconds) until
 * J.bcast shows every stopped worker's last sequence number applied on every
 * shard, so updates still in J.grad are applied rather than cut off. */
static void sc_demo_await_applied(sc_job_model_t *jm, const sc_cli_child_t *workers, int n,
                                  double max_s)
{
        uint64_t last[SC_DEMO_MAX_WORKERS] = {0};
        char err[256];
        if (!jm)
                return;
        for (int i = 0; i < n && i < SC_DEMO_MAX_WORKERS; i++) {
                json_t *j = sc_cli_child_summary(&workers[i]);
                json_t *seq = j ? json_object_get(json_object_get(j, "job"), "seq_last") : NULL;
                last[i] = json_is_integer(seq) ? (uint64_t)json_integer_value(seq) : 0;
                json_decref(j);
        }
        for (double end = sc_clock_mono() + max_s; sc_clock_mono() < end;) {
                int behind = 0;
                for (int s = 0; s < sc_job_model_shards(jm) && !behind; s++)
                        for (int i = 0; i < n && i < SC_DEMO_MAX_WORKERS && !behind; i++)
                                behind = sc_job_model_applied(jm, s, (uint32_t)i) < last[i];
                if (!behind)
                        return;
                if (sc_job_model_poll(jm, 50, NULL, err, sizeof(err)))
                        return;
        }
}

static long long sc_demo_feed_delivered(const sc_cli_child_t *ch)
{
        FILE *f = fopen(ch->out, "r");
        char line[512];
        long long delivered = -1, sent, failed;
        int n;
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "feed: total topics %d sent %lld delivered %lld failed %lld", &n,
                           &sent, &delivered, &failed) == 4)
                        break;
        fclose(f);
        return delivered;
}

static void sc_demo_sleep(double s)
{
        struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
        while (!sc_cli_stop && nanosleep(&ts, &ts) && errno == EINTR)
                ;
}

/* The samples a model with batchnorm is recalibrated on before each
 * evaluation (J.bcast carries parameters only): the held-out set of the
 * eval section, else Fashion-MNIST's training half. */
static const sc_dataset_t *sc_demo_calib(const sc_conf_t *conf, const sc_dataset_t *train,
                                         const sc_dataset_t *test)
{
        return sc_eval_set_configured(conf) ? test : train;
}

/* Test accuracy of m; a model with state first gets its running statistics
 * recomputed from calib. */
static int sc_demo_eval(sc_model_t *m, const sc_dataset_t *calib, const sc_dataset_t *ds,
                        double *acc)
{
        size_t correct = 0;
        char why[256];
        if (sc_model_out_recalibrate(m, calib, why, sizeof(why)) ||
            sc_model_eval_set(m, ds->x, ds->y, ds->n, 500, NULL, &correct))
                return -1;
        *acc = (double)correct / (double)ds->n;
        return 0;
}

static double sc_demo_jnum(json_t *j, const char *k)
{
        json_t *v = j ? json_object_get(j, k) : NULL;
        return v ? json_number_value(v) : 0.0;
}

static void sc_demo_plot(const char *out, int quiet)
{
        char cmd[2400];
        snprintf(cmd, sizeof(cmd),
                 "gnuplot -e \"set terminal pngcairo size 800,500; set output '%s/accuracy.png'; "
                 "set title 'scadles demo: test accuracy of the global model'; set xlabel "
                 "'wall time (s)'; set ylabel 'test accuracy'; set yrange [0:1]; set grid; set "
                 "key bottom right; plot '%s/accuracy.tsv' using 1:2 with linespoints title "
                 "'J.bcast', 0.85 with lines dt 2 title '85%%'\" 2>%s/gnuplot.err",
                 out, out, out);
        int rc = system(cmd);
        if (rc != 0)
                fprintf(stderr, "scadles demo: gnuplot failed (see %s/gnuplot.err)\n", out);
        else if (!quiet)
                fprintf(stderr, "demo: plot written to %s/accuracy.png\n", out);
}

/* The run: options, the processes, the evaluator and what it measured. */
typedef struct sc_demo {
        sc_demo_opts_t o;
        sc_cli_child_t feed, aggs[2], workers[SC_DEMO_MAX_WORKERS];
        sc_broker_t *broker;
        sc_job_model_t *jm;
        sc_model_t *model;
        sc_dataset_t test, calib;
        sc_conf_t conf;
        int have_conf;
        char err[1024], path[600], bs[256];
        char run[64], prefix[80]; /* the job's name, the data topics' prefix */
        double pt_t[SC_DEMO_MAX_POINTS], pt_a[SC_DEMO_MAX_POINTS];
        int npts;
        double t0, t_end, t85, t_first, acc, best; /* t_first: the first model version */
        sc_model_out_info_t final;                 /* the final model's shard versions */
        const char *why;
} sc_demo_t;

/* The job's configuration with the --set overrides, written to
 * OUT/job.json for the children; returns 0 or an exit code. */
static int sc_demo_write_job(sc_demo_t *d)
{
        char text[4096];
        /* B of the linear LR scaling grows with the workers: 32 samples of
         * each worker's 0.1 s window at the default rates (128 for 4). */
        snprintf(text, sizeof(text), sc_demo_job, d->run, d->prefix, d->run, d->o.workers,
                 32 * d->o.workers, d->bs);
        memset(&d->conf, 0, sizeof(d->conf));
        if (sc_conf_parse(&d->conf, text, "demo job", d->err, sizeof(d->err))) {
                fprintf(stderr, "scadles demo: %s\n", d->err);
                return 1;
        }
        if (sc_cli_conf_apply("demo", &d->conf, &d->o.co))
                return 2;
        /* authenticated like any job: a key of its own unless one is named */
        sc_conf_job_t *job = &d->conf.job;
        const char *env = getenv(SC_JOB_KEY_ENV);
        if (!job->auth_none && !job->auth_key_file[0] && !job->auth_key_env[0] && !(env && *env)) {
                snprintf(job->auth_key_file, sizeof(job->auth_key_file), "%s/job.key", d->o.out);
                if (sc_cli_keygen(job->auth_key_file, 1, d->err, sizeof(d->err))) {
                        fprintf(stderr, "scadles demo: %s\n", d->err);
                        return 1;
                }
        }
        d->have_conf = 1;
        char *dump = sc_conf_dump_secret(&d->conf);
        snprintf(d->path, sizeof(d->path), "%s/job.json", d->o.out);
        FILE *jf = fopen(d->path, "w");
        if (!dump || !jf || fputs(dump, jf) < 0) {
                fprintf(stderr, "scadles demo: %s: %s\n", d->path, strerror(errno));
                free(dump);
                if (jf)
                        fclose(jf);
                return 1;
        }
        fclose(jf);
        free(dump);
        return 0;
}

/* Every topic exists before any client asks: the workers' subscription sees
 * the data topics at once, and the job's have their partitions. On a
 * cluster (--bootstrap) a producer creates them with the Admin API. */
static int sc_demo_topics(sc_demo_t *d)
{
        sc_kafka_topic_spec_t ts[SC_DEMO_MAX_TOPICS + SC_JOB__NTOPICS];
        int n = d->o.topics;
        if (sc_kafka_admin_job_topics(d->conf.job.name, d->conf.job.shards, 1, ts + n, d->err,
                                      sizeof(d->err))) {
                fprintf(stderr, "scadles demo: %s\n", d->err);
                return -1;
        }
        for (int i = 0; i < n; i++) {
                memset(&ts[i], 0, sizeof(ts[i]));
                snprintf(ts[i].name, sizeof(ts[i].name), "%s.%d", d->prefix, i);
                ts[i].partitions = d->o.partitions;
                ts[i].replication = 1;
        }
        n += SC_JOB__NTOPICS;
        if (d->broker) {
                for (int i = 0; i < n; i++)
                        if (sc_broker_topic_create(d->broker, ts[i].name, ts[i].partitions, d->err,
                                                   sizeof(d->err))) {
                                fprintf(stderr, "scadles demo: %s\n", d->err);
                                return -1;
                        }
                return 0;
        }
        rd_kafka_conf_t *kc = NULL;
        rd_kafka_t *rk = NULL;
        char why[512];
        int rc = -1;
        if (sc_kafka_client_conf(&kc, &d->conf, RD_KAFKA_PRODUCER, NULL, d->err, sizeof(d->err)))
                goto out;
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, why, sizeof(why)))) {
                rd_kafka_conf_destroy(kc);
                snprintf(d->err, sizeof(d->err), "producer: %s", why);
                goto out;
        }
        rc = sc_kafka_admin_ensure(rk, ts, n, 30000, NULL, d->err, sizeof(d->err)) ? -1 : 0;
out:
        if (rc)
                fprintf(stderr, "scadles demo: %s: %s\n", d->bs, d->err);
        if (rk)
                rd_kafka_destroy(rk);
        return rc;
}

/* The evaluator: the held-out set (eval section, else Fashion-MNIST's test
 * half), the training half to recalibrate a model with batchnorm, and a
 * reader of J.bcast. */
static int sc_demo_evaluator(sc_demo_t *d)
{
        const sc_conf_t *conf = &d->conf;
        char *err = d->err;
        size_t errsz = sizeof(d->err);
        if (sc_job_initial(conf, &d->model, err, errsz)) {
                fprintf(stderr, "scadles demo: %s\n", err);
                return -1;
        }
        if (sc_eval_set_load(conf, (int)sc_shape_numel(sc_model_output_shape(d->model)), &d->test,
                             err, errsz)) {
                fprintf(stderr, "scadles demo: test set: %s\n", err);
                return -1;
        }
        if (sc_model_nstate(d->model) && !sc_eval_set_configured(conf) &&
            (sc_fmnist_load(conf->data.dir, &d->calib, NULL, err, errsz) ||
             sc_dataset_normalize(&d->calib, (float)conf->data.mean, (float)conf->data.std, err,
                                  errsz))) {
                fprintf(stderr, "scadles demo: Fashion-MNIST training set: %s\n", err);
                return -1;
        }
        if (sc_job_model_new(&d->jm, conf, sc_model_params(d->model), sc_model_nparams(d->model),
                             err, errsz)) {
                fprintf(stderr, "scadles demo: %s\n", err);
                return -1;
        }
        return 0;
}

/* The output folder, the broker, the job's configuration and topics, and
 * the evaluator; returns 0 or an exit code. */
static int sc_demo_prepare(sc_demo_t *d)
{
        struct stat st;
        int rc;
        mkdir(d->o.out, 0755);
        if (stat(d->o.out, &st) || !S_ISDIR(st.st_mode)) {
                fprintf(stderr, "scadles demo: --out %s: cannot create the folder\n", d->o.out);
                return 2;
        }
        if (d->o.bootstrap) {
                /* a cluster keeps its topics: this run's get names of their own */
                snprintf(d->run, sizeof(d->run), "demo-%lld-%ld", (long long)time(NULL),
                         (long)getpid());
                snprintf(d->bs, sizeof(d->bs), "%s", d->o.bootstrap);
        } else {
                snprintf(d->run, sizeof(d->run), "demo");
                if (sc_broker_new(&d->broker, 1, d->err, sizeof(d->err))) {
                        fprintf(stderr, "scadles demo: embedded broker: %s\n", d->err);
                        return 1;
                }
                snprintf(d->bs, sizeof(d->bs), "%s", sc_broker_bootstraps(d->broker));
        }
        snprintf(d->prefix, sizeof(d->prefix), "%s-fmnist", d->run);
        if ((rc = sc_demo_write_job(d)))
                return rc;
        if (sc_demo_topics(d) || sc_demo_evaluator(d))
                return 1;
        char rates[64];
        if (d->o.rate_set)
                snprintf(rates, sizeof(rates), "the rates of set %s", d->o.rate_set);
        else
                snprintf(rates, sizeof(rates), "~%.0f samples/s each", d->o.rate);
        if (!d->o.quiet)
                fprintf(stderr,
                        "demo: broker %s; job %s: %zu parameters in %d shards, policy %s, codec "
                        "%s; %d workers, 2 aggregators, %d topics at %s; output in %s/\n",
                        d->bs, d->conf.job.name, sc_model_nparams(d->model), d->conf.job.shards,
                        sc_sync_kind_name(d->conf.job.sync.kind), sc_codec_name(d->conf.job.codec),
                        d->o.workers, d->o.topics, rates, d->o.out);
        return 0;
}

static int sc_demo_start_aggregators(sc_demo_t *d)
{
        char dur[32];
        snprintf(dur, sizeof(dur), "%.0f", d->o.duration + 90);
        for (int i = 0; i < 2; i++) {
                char name[32];
                snprintf(name, sizeof(name), "aggregator%d", i);
                char *av[] = {"scadles", "aggregator", "-c", d->path, "-b",
                              d->bs,     "--duration", dur,  NULL};
                if (sc_cli_child_spawn(&d->aggs[i], d->o.out, name, av) < 0)
                        return -1;
        }
        return 0;
}

static int sc_demo_start_workers(sc_demo_t *d)
{
        char dur[32], id[16];
        snprintf(dur, sizeof(dur), "%.0f", d->o.duration + 60);
        for (int i = 0; i < d->o.workers; i++) {
                char name[32];
                snprintf(name, sizeof(name), "worker%d", i);
                snprintf(id, sizeof(id), "%d", i);
                char *av[] = {"scadles",
                              "worker",
                              "-c",
                              d->path,
                              "-b",
                              d->bs,
                              "--id",
                              id,
                              "--inject-alpha",
                              "0.2",
                              "--inject-beta",
                              "0.1",
                              "--duration",
                              dur,
                              NULL};
                if (sc_cli_child_spawn(&d->workers[i], d->o.out, name, av) < 0)
                        return -1;
        }
        return 0;
}

static int sc_demo_start_feed(sc_demo_t *d)
{
        char dur[32], rdist[64], ntop[16], seed[24];
        snprintf(rdist, sizeof(rdist), "uniform:%g:%g", d->o.rate, d->o.rate * 0.3);
        snprintf(ntop, sizeof(ntop), "%d", d->o.topics);
        snprintf(dur, sizeof(dur), "%.0f", d->o.duration + 30);
        snprintf(seed, sizeof(seed), "%lld", d->o.seed);
        char *fav[] = {"scadles",
                       "feed",
                       "-c",
                       d->path,
                       "--bootstrap",
                       d->bs,
                       "--topics",
                       ntop,
                       "--prefix",
                       d->prefix,
                       d->o.rate_set ? "--rate-set" : "--rate-dist",
                       d->o.rate_set ? (char *)d->o.rate_set : rdist,
                       "--seed",
                       seed,
                       "--duration",
                       dur,
                       "--quiet",
                       NULL};
        return sc_cli_child_spawn(&d->feed, d->o.out, "feed", fav) < 0 ? -1 : 0;
}

/* The aggregators first: their group settles; then the workers together,
 * so their group forms in one rebalance; then the feed. */
static int sc_demo_start(sc_demo_t *d)
{
        if (sc_demo_start_aggregators(d))
                return -1;
        sc_demo_sleep(3);
        return sc_demo_start_workers(d) || sc_demo_start_feed(d) ? -1 : 0;
}

/* 1 (after saying so) when a worker exited before the demo stopped it. */
static int sc_demo_worker_died(sc_demo_t *d)
{
        int dead = 0;
        for (int i = 0; i < d->o.workers; i++) {
                sc_cli_child_t *w = &d->workers[i];
                if (!w->done && waitpid(w->pid, &w->status, WNOHANG) == w->pid)
                        w->done = dead = 1;
        }
        if (dead)
                fprintf(stderr, "scadles demo: a worker exited early (see %s/)\n", d->o.out);
        return dead;
}

/* Test accuracy of the model J.model holds now, kept as a point at t
 * seconds from the start (at most SC_DEMO_MAX_POINTS). */
static void sc_demo_measure(sc_demo_t *d, double t)
{
        sc_model_out_assemble(d->model, d->jm, NULL);
        if (sc_demo_eval(d->model, sc_demo_calib(&d->conf, &d->calib, &d->test), &d->test,
                         &d->acc) == 0 &&
            d->npts < SC_DEMO_MAX_POINTS) {
                d->pt_t[d->npts] = t;
                d->pt_a[d->npts++] = d->acc;
        }
        if (d->acc > d->best)
                d->best = d->acc;
        if (d->t85 < 0 && d->acc >= 0.85)
                d->t85 = t;
}

/* Follows J.model and measures test accuracy every --eval-every seconds
 * until the target, the duration, a signal, a worker's exit or an error;
 * d->why says which. */
static void sc_demo_evaluate(sc_demo_t *d)
{
        double t_eval, t_prev;
        uint64_t v_prev = 0;
        d->t0 = sc_clock_mono();
        t_eval = t_prev = d->t0;
        d->why = "duration";
        for (;;) {
                int changed = 0;
                if (sc_job_model_poll(d->jm, 50, &changed, d->err, sizeof(d->err))) {
                        fprintf(stderr, "scadles demo: %s\n", d->err);
                        d->why = "error";
                        break;
                }
                double t = sc_clock_mono();
                if (sc_cli_stop) {
                        d->why = "interrupted";
                        break;
                }
                if (sc_demo_worker_died(d)) {
                        d->why = "worker exited";
                        break;
                }
                if (d->t_first < 0 && sc_job_model_min_version(d->jm) > 0)
                        d->t_first = t - d->t0;
                if (t - t_eval >= d->o.eval_every) {
                        sc_demo_measure(d, t - d->t0);
                        uint64_t v = sc_job_model_min_version(d->jm);
                        if (!d->o.quiet)
                                fprintf(stderr,
                                        "demo: %6.1f s  test accuracy %.4f  model v%llu "
                                        "(%.1f versions/s)  J.bcast read %.1f MB\n",
                                        t - d->t0, d->acc, (unsigned long long)v,
                                        (double)(v - v_prev) / (t - t_prev),
                                        sc_job_model_stats(d->jm)->bytes / 1e6);
                        v_prev = v;
                        t_prev = t;
                        t_eval = t;
                        if (d->o.target > 0 && d->acc >= d->o.target) {
                                d->why = "target reached";
                                break;
                        }
                }
                if (t - d->t0 >= d->o.duration)
                        break;
        }
        d->t_end = sc_clock_mono() - d->t0;
}

/* Stops the feed, the workers (they commit what the broker acknowledged),
 * then, once J.model shows their last updates, the aggregators. */
static void sc_demo_stop_all(sc_demo_t *d)
{
        if (!d->o.quiet)
                fprintf(stderr, "demo: stopping (%s): feed, workers, aggregators\n", d->why);
        sc_cli_child_stop(&d->feed, SIGTERM, 10);
        for (int i = 0; i < d->o.workers; i++)
                if (d->workers[i].pid > 0 && !d->workers[i].done)
                        kill(d->workers[i].pid, SIGTERM);
        for (int i = 0; i < d->o.workers; i++)
                sc_cli_child_stop(&d->workers[i], SIGTERM, 30);
        sc_demo_await_applied(d->jm, d->workers, d->o.workers, 15);
        for (int i = 0; i < 2; i++)
                if (d->aggs[i].pid > 0 && !d->aggs[i].done)
                        kill(d->aggs[i].pid, SIGTERM);
        for (int i = 0; i < 2; i++)
                sc_cli_child_stop(&d->aggs[i], SIGTERM, 30);
}

/* The versions the stopped aggregators released each shard at, from their
 * summaries (0 for a shard no summary names); 1 when every shard has one. */
static int sc_demo_released(const sc_demo_t *d, uint64_t *rel, int nshards)
{
        int known = 0;
        memset(rel, 0, (size_t)nshards * sizeof(*rel));
        for (int i = 0; i < 2; i++) {
                json_t *j = sc_cli_child_summary(&d->aggs[i]), *sh;
                size_t k;
                json_array_foreach(json_object_get(j, "shards"), k, sh)
                {
                        json_int_t s = json_integer_value(json_object_get(sh, "shard"));
                        json_int_t v = json_integer_value(json_object_get(sh, "version"));
                        if (s >= 0 && s < nshards && v > 0 && (uint64_t)v > rel[s]) {
                                known += rel[s] == 0;
                                rel[s] = (uint64_t)v;
                        }
                }
                json_decref(j);
        }
        return known == nshards;
}

/* Reads J.bcast until it shows every shard at the version its aggregator
 * released it at (at most max_s seconds), so the final model is the one
 * the aggregators hold, not a mix of a shard's last version and another's
 * earlier one; says so when it is not. */
static void sc_demo_await_released(sc_demo_t *d, double max_s)
{
        int ns = sc_job_model_shards(d->jm);
        uint64_t *rel = calloc((size_t)ns + 1, sizeof(*rel));
        if (!rel || !sc_demo_released(d, rel, ns)) {
                fprintf(stderr, "scadles demo: the aggregators' summaries do not name every "
                                "shard's final version: the final model is what J.bcast shows\n");
                ns = 0;
        }
        for (double end = sc_clock_mono() + max_s;;) {
                int behind = 0;
                for (int s = 0; s < ns; s++)
                        behind += sc_job_model_version(d->jm, s) < rel[s];
                if (!behind)
                        break;
                if (sc_clock_mono() >= end) {
                        fprintf(stderr,
                                "scadles demo: J.bcast shows %d of %d shard(s) behind "
                                "their released versions after %.0f s\n",
                                behind, ns, max_s);
                        break;
                }
                if (sc_job_model_poll(d->jm, 50, NULL, d->err, sizeof(d->err))) {
                        fprintf(stderr, "scadles demo: %s\n", d->err);
                        break;
                }
        }
        free(rel);
}

/* The final model's test accuracy (what the aggregators released), kept as
 * the last point; every point goes to OUT/accuracy.tsv. */
static double sc_demo_final(sc_demo_t *d)
{
        double final_acc = 0;
        for (int k = 0; k < 10; k++)
                sc_job_model_poll(d->jm, 50, NULL, d->err, sizeof(d->err));
        sc_demo_await_released(d, 30);
        sc_model_out_assemble(d->model, d->jm, &d->final);
        sc_demo_eval(d->model, sc_demo_calib(&d->conf, &d->calib, &d->test), &d->test, &final_acc);
        if (d->npts < SC_DEMO_MAX_POINTS && d->npts > 0) {
                d->pt_t[d->npts] = sc_clock_mono() - d->t0;
                d->pt_a[d->npts++] = final_acc;
        }
        snprintf(d->path, sizeof(d->path), "%s/accuracy.tsv", d->o.out);
        FILE *tf = fopen(d->path, "w");
        if (tf) {
                fprintf(tf, "# seconds\ttest_accuracy\n");
                for (int i = 0; i < d->npts; i++)
                        fprintf(tf, "%.2f\t%.4f\n", d->pt_t[i], d->pt_a[i]);
                fclose(tf);
        }
        return final_acc;
}

/* The children's counters, summed. */
typedef struct sc_demo_sums {
        double up, dense, down, trained, consumed, lost, sent, acked, injected, applied, stale,
            dups, rejected, pq_n, pq_hits, pq_wacc;
        int identity, nsum;
        long long fed;
} sc_demo_sums_t;

static void sc_demo_add_worker(sc_demo_sums_t *m, json_t *j)
{
        json_t *jj = json_object_get(j, "job");
        m->nsum++;
        m->up += sc_demo_jnum(jj, "bytes_up");
        m->dense += sc_demo_jnum(jj, "dense_bytes");
        m->down += sc_demo_jnum(jj, "bytes_down");
        m->sent += sc_demo_jnum(jj, "updates_sent");
        m->acked += sc_demo_jnum(jj, "updates_acked");
        m->injected += sc_demo_jnum(jj, "injected_in");
        m->trained += sc_demo_jnum(j, "trained");
        m->consumed += sc_demo_jnum(j, "consumed");
        m->lost += sc_demo_jnum(j, "lost");
        m->identity &= json_is_true(json_object_get(j, "identity_ok"));
        json_t *pq = json_object_get(j, "prequential");
        m->pq_n += sc_demo_jnum(pq, "samples");
        m->pq_hits += sc_demo_jnum(pq, "accuracy") * sc_demo_jnum(pq, "samples");
        m->pq_wacc += sc_demo_jnum(pq, "window_accuracy");
}

static void sc_demo_sums(const sc_demo_t *d, sc_demo_sums_t *m)
{
        memset(m, 0, sizeof(*m));
        m->identity = 1;
        for (int i = 0; i < d->o.workers; i++) {
                json_t *j = sc_cli_child_summary(&d->workers[i]);
                if (!j)
                        continue;
                sc_demo_add_worker(m, j);
                json_decref(j);
        }
        for (int i = 0; i < 2; i++) {
                json_t *j = sc_cli_child_summary(&d->aggs[i]);
                m->applied += sc_demo_jnum(j, "applied");
                m->stale += sc_demo_jnum(j, "stale");
                m->dups += sc_demo_jnum(j, "duplicates");
                m->rejected += sc_demo_jnum(j, "rejected_total");
                json_decref(j);
        }
        m->fed = sc_demo_feed_delivered(&d->feed);
}

/* The summary on stdout, from every process's own counters; returns the
 * number of worker summaries found. */
static int sc_demo_report(const sc_demo_t *d, double final_acc)
{
        sc_demo_sums_t m;
        sc_demo_sums(d, &m);
        printf("demo summary (%s):\n", d->why);
        printf("  test accuracy     %.4f (best %.4f); 85%% %s %.1f s\n", final_acc,
               d->best > final_acc ? d->best : final_acc,
               d->t85 < 0 ? "not reached in" : "reached after", d->t85 < 0 ? d->t_end : d->t85);
        if (d->o.target > 0)
                printf("  target            %.4f %s %.1f s (%.1f s after the first model "
                       "version)\n",
                       d->o.target,
                       strcmp(d->why, "target reached") ? "not reached in" : "reached after",
                       d->t_end, d->t_first < 0 ? 0.0 : d->t_end - d->t_first);
        if (d->final.min_version == d->final.max_version)
                printf("  final model       v%llu (%d shards)\n",
                       (unsigned long long)d->final.max_version, d->final.shards);
        else
                printf("  final model       shards from v%llu to v%llu (%d shards)\n",
                       (unsigned long long)d->final.min_version,
                       (unsigned long long)d->final.max_version, d->final.shards);
        printf("  prequential       %.4f accuracy over %.0f samples, each scored before it "
               "trained (last windows: %.4f)\n",
               m.pq_n > 0 ? m.pq_hits / m.pq_n : 0.0, m.pq_n,
               m.nsum > 0 ? m.pq_wacc / m.nsum : 0.0);
        printf("  wall time         %.1f s of training (%d workers, 2 aggregators, %d topics)\n",
               d->t_end, d->o.workers, d->o.topics);
        printf("  updates           %.0f sent, %.0f acknowledged, %.0f applied, %.0f stale "
               "(their round had closed), %.0f duplicates, %.0f rejected\n",
               m.sent, m.acked, m.applied, m.stale, m.dups, m.rejected);
        printf("  bytes up          %.2f MB of updates (%.2f MB uncompressed): compression "
               "ratio %.1fx\n",
               m.up / 1e6, m.dense / 1e6, m.up > 0 ? m.dense / m.up : 0.0);
        printf(
            "  bytes down        %.2f MB of the model broadcast read by the workers (%.2f x up)\n",
            m.down / 1e6, m.up > 0 ? m.down / m.up : 0.0);
        printf("  records           %lld fed, %.0f consumed, %.0f trained, %.0f foreign samples "
               "mixed in; accounting %s (%d/%d worker summaries)\n",
               m.fed, m.consumed, m.trained, m.injected,
               m.identity && m.nsum == d->o.workers ? "exact" : "NOT exact", m.nsum, d->o.workers);
        printf("  records lost      %.0f\n", m.lost);
        fflush(stdout);
        return m.nsum;
}

/* Kills what still runs and frees everything. */
static void sc_demo_free(sc_demo_t *d)
{
        sc_cli_child_stop(&d->feed, SIGKILL, 1);
        for (int i = 0; i < d->o.workers; i++)
                sc_cli_child_stop(&d->workers[i], SIGKILL, 1);
        for (int i = 0; i < 2; i++)
                sc_cli_child_stop(&d->aggs[i], SIGKILL, 1);
        sc_job_model_destroy(d->jm);
        sc_model_destroy(d->model);
        sc_dataset_free(&d->test);
        sc_dataset_free(&d->calib);
        if (d->have_conf)
                sc_conf_free(&d->conf);
        sc_broker_destroy(d->broker);
}

int sc_cmd_demo(int argc, char **argv)
{
        static sc_demo_t d; /* the accuracy points are large */
        int rc;

        memset(&d, 0, sizeof(d));
        d.t0 = sc_clock_mono();
        d.t85 = d.t_first = -1;
        d.why = "error";
        if ((rc = sc_demo_args(argc, argv, &d.o)) >= 0)
                return rc;
        sc_cli_signals();
        if ((rc = sc_demo_prepare(&d)))
                goto out;
        if (sc_demo_start(&d) == 0)
                sc_demo_evaluate(&d);
        sc_demo_stop_all(&d);
        double final_acc = sc_demo_final(&d);
        int nsum = sc_demo_report(&d, final_acc);
        if (d.o.plot && d.npts > 0)
                sc_demo_plot(d.o.out, d.o.quiet);
        rc = d.npts > 0 && nsum == d.o.workers ? 0 : 1;
out:
        sc_demo_free(&d);
        return rc;
}
