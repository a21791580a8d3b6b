/* cmd_demo.c — `scadles demo`: a whole distributed job on one machine: the
 * embedded broker in-process, a Fashion-MNIST feed on several topics at
 * heterogeneous rates, N workers and two aggregators as child processes, and
 * an evaluator that follows J.model and reports test accuracy over time;
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
#include "sc_broker.h"
#include "sc_codec.h"
#include "sc_conf.h"
#include "sc_data.h"
#include "sc_idx.h"
#include "sc_eval_set.h"
#include "sc_job_model.h"
#include "sc_model_out.h"
#include "sc_kafka_model.h"
#include "sc_kafka_util.h"
#include "sc_nn.h"

#define SC_DEMO_MAX_WORKERS 16
#define SC_DEMO_MAX_POINTS 4096

typedef struct sc_demo_opts {
        int workers, topics, quiet, plot;
        double rate, duration, target, eval_every;
        const char *out;
        sc_cli_conf_opts_t co; /* --set only */
} sc_demo_opts_t;

typedef struct sc_demo_child {
        pid_t pid;
        char name[32];
        char out[600], err[600];
        int status, done;
} sc_demo_child_t;

static void sc_demo_usage(FILE *out)
{
        fprintf(out,
                "usage: scadles demo [options]\n"
                "\n"
                "Runs a distributed training job on this machine and reports how it learns:\n"
                "  - the embedded Kafka broker (in this process);\n"
                "  - `scadles feed`: Fashion-MNIST's training half to --topics topics\n"
                "    (demo-fmnist.0 ..), each at its own rate drawn uniformly around --rate\n"
                "    samples/s (heterogeneous streams);\n"
                "  - --workers `scadles worker` processes (one consumer group over the topics,\n"
                "    rate-proportional batches, updates compressed with top-k 25%% + error\n"
                "    feedback to J.grad under the scadles policy, sharing 10%% of a batch on\n"
                "    J.inject with probability 0.2);\n"
                "  - two `scadles aggregator` processes in one group, splitting the 4 model\n"
                "    shards and publishing every version to J.model;\n"
                "  - an evaluator here that follows J.model and measures test accuracy on\n"
                "    the 10,000 test images every --eval-every seconds (a model with\n"
                "    batchnorm, set by --set, first has its running statistics recomputed\n"
                "    on 5,000 training images: J.model carries parameters only).\n"
                "It stops at --target test accuracy or after --duration seconds (or Ctrl-C),\n"
                "stops the feed, the workers (they commit what the broker acknowledged) and\n"
                "the aggregators in turn, and prints a summary: test accuracy, time to 85%%,\n"
                "wall time, bytes up (updates) and down (models), compression ratio, records\n"
                "fed, trained and lost, all from the processes' own counters. Files go to\n"
                "--out: job.json, each process's output, accuracy.tsv and accuracy.png\n"
                "(gnuplot).\n"
                "\n"
                "options:\n"
                "  -w, --workers N      worker processes, 1..16 (default 4)\n"
                "  -t, --topics N       data topics, 1..16 (default 6)\n"
                "  -r, --rate R         mean samples/s per topic (default 450)\n"
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
        static const struct option lo[] = {
            {"workers", required_argument, NULL, 'w'}, {"topics", required_argument, NULL, 't'},
            {"rate", required_argument, NULL, 'r'},    {"duration", required_argument, NULL, 'd'},
            {"target", required_argument, NULL, 'a'},  {"eval-every", required_argument, NULL, 'e'},
            {"out", required_argument, NULL, 'o'},     {"set", required_argument, NULL, 's'},
            {"no-plot", no_argument, NULL, 'P'},       {"quiet", no_argument, NULL, 'q'},
            {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
        long long v;
        int c;
        memset(o, 0, sizeof(*o));
        o->workers = 4;
        o->topics = 6;
        o->rate = 450;
        o->duration = 170;
        o->target = 0.855;
        o->eval_every = 2;
        o->out = "build/demo";
        o->plot = 1;
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":w:t:r:d:a:e:o:s:qh", lo, NULL)) != -1) {
                int taken = c == 's' ? sc_cli_conf_opt("demo", &o->co, c, optarg) : 0;
                if (taken < 0)
                        return 2;
                if (taken)
                        continue;
                switch (c) {
                case 'w':
                case 't':
                        if (sc_cli_integer("demo", c == 'w' ? "--workers" : "--topics", optarg, 1,
                                           16, &v))
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
    "  \"optim\": {\"lr\": 0.08, \"momentum\": 0.9,\n"
    "    \"schedule\": {\"type\": \"cosine\", \"total_steps\": 1200, \"min_lr\": 0.004}},\n"
    "  \"train\": {\"seed\": 1, \"threads\": 1},\n"
    "  \"data\": {\"source\": \"fashion-mnist\", \"mean\": 0.286, \"std\": 0.353},\n"
    "  \"source\": {\"group_id\": \"demo-workers\", \"pattern\": \"^demo-fmnist\\\\..*\"},\n"
    "  \"streams\": {\"format\": \"raw\", \"label\": \"key\", \"scale\": 0.00392156862745098,\n"
    "    \"mean\": 0.286, \"std\": 0.353, \"policy\": \"persist\", \"cap\": 4096},\n"
    "  \"worker\": {\"batch\": \"rate\", \"window\": 0.1, \"b_min\": 16, \"b_max\": 128,\n"
    "    \"shuffle\": 256, \"progress_interval\": 5, \"eval\": false},\n"
    "  \"job\": {\"name\": \"demo\", \"shards\": 4, \"workers\": %d,\n"
    "    \"sync\": {\"policy\": \"scadles\", \"base_batch\": %d},\n"
    "    \"codec\": {\"name\": \"topk\", \"ratio\": 0.25, \"error_feedback\": 1},\n"
    "    \"session_timeout\": 6, \"progress_interval\": 5},\n"
    "  \"kafka\": {\"bootstrap.servers\": \"%s\", \"fetch.wait.max.ms\": 5,\n"
    "    \"session.timeout.ms\": 6000, \"heartbeat.interval.ms\": 500}\n"
    "}\n";

static pid_t sc_demo_spawn(sc_demo_child_t *ch, const char *out_dir, const char *name,
                           char *const argv[])
{
        snprintf(ch->name, sizeof(ch->name), "%s", name);
        snprintf(ch->out, sizeof(ch->out), "%s/%s.out", out_dir, name);
        snprintf(ch->err, sizeof(ch->err), "%s/%s.err", out_dir, name);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                /* A process group of its own: Ctrl-C reaches the demo only, which
                 * stops the children in order. */
                setpgid(0, 0);
                int fo = open(ch->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                int fe = open(ch->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                if (fo >= 0)
                        dup2(fo, 1);
                if (fe >= 0)
                        dup2(fe, 2);
                execv("/proc/self/exe", argv);
                _exit(127);
        }
        ch->pid = pid;
        ch->done = 0;
        return pid;
}

/* Signals the child and waits up to secs for it; SIGKILL after that. */
static void sc_demo_stop(sc_demo_child_t *ch, int sig, double secs)
{
        if (ch->pid <= 0 || ch->done)
                return;
        kill(ch->pid, sig);
        double t0 = sc_cli_now();
        for (;;) {
                pid_t r = waitpid(ch->pid, &ch->status, WNOHANG);
                if (r == ch->pid) {
                        ch->done = 1;
                        return;
                }
                if (sc_cli_now() - t0 > secs) {
                        kill(ch->pid, SIGKILL);
                        waitpid(ch->pid, &ch->status, 0);
                        ch->done = 1;
                        return;
                }
                struct timespec ts = {0, 20000000};
                nanosleep(&ts, NULL);
        }
}

/* The last "summary: {JSON}" line of a child's stdout; NULL if none. */
static json_t *sc_demo_summary(const sc_demo_child_t *ch)
{
        FILE *f = fopen(ch->out, "r");
        char *line = NULL, *last = NULL;
        size_t cap = 0;
        if (!f)
                return NULL;
        while (getline(&line, &cap, f) > 0)
                if (!strncmp(line, "summary: ", 9)) {
                        free(last);
                        last = strdup(line + 9);
                }
        free(line);
        fclose(f);
        json_t *j = last ? json_loads(last, 0, NULL) : NULL;
        free(last);
        return j;
}

/* Before the aggregators are stopped: waits (at most max_s seconds) until
 * J.model shows every stopped worker's last sequence number applied on every
 * shard, so updates still in J.grad are applied rather than cut off. */
static void sc_demo_await_applied(sc_job_model_t *jm, const sc_demo_child_t *workers, int n,
                                  double max_s)
{
        uint64_t last[SC_DEMO_MAX_WORKERS] = {0};
        char err[256];
        if (!jm)
                return;
        for (int i = 0; i < n && i < SC_DEMO_MAX_WORKERS; i++) {
                json_t *j = sc_demo_summary(&workers[i]);
                json_t *seq = j ? json_object_get(json_object_get(j, "job"), "seq_last") : NULL;
                last[i] = json_is_integer(seq) ? (uint64_t)json_integer_value(seq) : 0;
                json_decref(j);
        }
        for (double end = sc_cli_now() + max_s; sc_cli_now() < end;) {
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

static long long sc_demo_feed_delivered(const sc_demo_child_t *ch)
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
 * evaluation (J.model carries parameters only): the held-out set of the
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
        size_t numel = sc_shape_numel(ds->shape), correct = 0;
        char why[256];
        if (sc_model_out_recalibrate(m, calib, why, sizeof(why)))
                return -1;
        for (size_t i = 0; i < ds->n; i += 500) {
                int b = (int)(ds->n - i < 500 ? ds->n - i : 500), c = 0;
                float l = sc_model_eval_batch(m, ds->x + i * numel, ds->y + i, NULL, b, &c, NULL);
                if (isnan(l))
                        return -1;
                correct += (size_t)c;
        }
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
                 "'J.model', 0.85 with lines dt 2 title '85%%'\" 2>%s/gnuplot.err",
                 out, out, out);
        int rc = system(cmd);
        if (rc != 0)
                fprintf(stderr, "scadles demo: gnuplot failed (see %s/gnuplot.err)\n", out);
        else if (!quiet)
                fprintf(stderr, "demo: plot written to %s/accuracy.png\n", out);
}

int sc_cmd_demo(int argc, char **argv)
{
        sc_demo_opts_t o;
        sc_demo_child_t feed = {0}, aggs[2] = {{0}}, workers[SC_DEMO_MAX_WORKERS] = {{0}};
        sc_broker_t *broker = NULL;
        sc_job_model_t *jm = NULL;
        sc_model_t *model = NULL;
        sc_dataset_t test = {0}, calib = {0};
        sc_conf_t conf;
        int have_conf = 0, rc;
        char err[1024], path[600], text[4096], bs[256];
        static double pt_t[SC_DEMO_MAX_POINTS], pt_a[SC_DEMO_MAX_POINTS];
        int npts = 0;
        double t0 = sc_cli_now(), t_end = 0, t85 = -1, acc = 0, best = 0;
        const char *why = "error";

        if ((rc = sc_demo_args(argc, argv, &o)) >= 0)
                return rc;
        rc = 1;
        sc_cli_signals();
        mkdir(o.out, 0755);
        struct stat st;
        if (stat(o.out, &st) || !S_ISDIR(st.st_mode)) {
                fprintf(stderr, "scadles demo: --out %s: cannot create the folder\n", o.out);
                return 2;
        }
        if (sc_broker_new(&broker, 1, err, sizeof(err))) {
                fprintf(stderr, "scadles demo: embedded broker: %s\n", err);
                return 1;
        }
        snprintf(bs, sizeof(bs), "%s", sc_broker_bootstraps(broker));
        /* The job's configuration, written for the children to read. */
        /* B of the linear LR scaling grows with the workers: 32 samples of
         * each worker's 0.1 s window at the default rates (128 for 4). */
        snprintf(text, sizeof(text), sc_demo_job, o.workers, 32 * o.workers, bs);
        memset(&conf, 0, sizeof(conf));
        if (sc_conf_parse(&conf, text, "demo job", err, sizeof(err))) {
                fprintf(stderr, "scadles demo: %s\n", err);
                goto out;
        }
        if (sc_cli_conf_apply("demo", &conf, &o.co)) {
                rc = 2;
                goto out;
        }
        have_conf = 1;
        char *dump = sc_conf_dump_secret(&conf);
        snprintf(path, sizeof(path), "%s/job.json", o.out);
        FILE *jf = fopen(path, "w");
        if (!dump || !jf || fputs(dump, jf) < 0) {
                fprintf(stderr, "scadles demo: %s: %s\n", path, strerror(errno));
                free(dump);
                if (jf)
                        fclose(jf);
                goto out;
        }
        fclose(jf);
        free(dump);
        /* Every topic exists before any client asks: the workers' subscription
         * sees the data topics at once, and the job's have their partitions. */
        for (int i = 0; i < o.topics + 4; i++) {
                char topic[300];
                int parts = 4;
                if (i < o.topics)
                        snprintf(topic, sizeof(topic), "demo-fmnist.%d", i);
                else {
                        static const char *const sfx[] = {"grad", "model", "inject", "ctl"};
                        snprintf(topic, sizeof(topic), "%s.%s", conf.job.name, sfx[i - o.topics]);
                        parts = i - o.topics < 2 ? conf.job.shards : 1;
                }
                if (sc_broker_topic_create(broker, topic, parts, err, sizeof(err))) {
                        fprintf(stderr, "scadles demo: %s\n", err);
                        goto out;
                }
        }
        /* The evaluator: the held-out set (eval section, else Fashion-MNIST's
         * test half) and a reader of J.model. */
        if (sc_kafka_model_initial(&conf, &model, err, sizeof(err))) {
                fprintf(stderr, "scadles demo: %s\n", err);
                goto out;
        }
        if (sc_eval_set_load(&conf, (int)sc_shape_numel(sc_model_output_shape(model)), &test, err,
                             sizeof(err))) {
                fprintf(stderr, "scadles demo: test set: %s\n", err);
                goto out;
        }
        size_t nparams = sc_model_nparams(model);
        if (sc_model_nstate(model) && !sc_eval_set_configured(&conf) &&
            (sc_fmnist_load(conf.data.dir, &calib, NULL, err, sizeof(err)) ||
             sc_dataset_normalize(&calib, (float)conf.data.mean, (float)conf.data.std, err,
                                  sizeof(err)))) {
                fprintf(stderr, "scadles demo: Fashion-MNIST training set: %s\n", err);
                goto out;
        }
        if (sc_job_model_new(&jm, &conf, sc_model_params(model), nparams, err, sizeof(err))) {
                fprintf(stderr, "scadles demo: %s\n", err);
                goto out;
        }
        if (!o.quiet)
                fprintf(stderr,
                        "demo: broker %s; job %s: %zu parameters in %d shards, policy %s, codec "
                        "%s; %d workers, 2 aggregators, %d topics at ~%.0f samples/s each; "
                        "output in %s/\n",
                        bs, conf.job.name, nparams, conf.job.shards,
                        sc_sync_kind_name(conf.job.sync.kind),
                        sc_codec_name((sc_codec_id_t)conf.job.codec), o.workers, o.topics, o.rate,
                        o.out);
        char dur[32], dur2[32], id[16], rdist[64], ntop[16];
        snprintf(dur, sizeof(dur), "%.0f", o.duration + 60);
        snprintf(dur2, sizeof(dur2), "%.0f", o.duration + 90);
        for (int i = 0; i < 2; i++) {
                char name[32];
                snprintf(name, sizeof(name), "aggregator%d", i);
                char *av[] = {"scadles", "aggregator", "-c", path, "-b",
                              bs,        "--duration", dur2, NULL};
                if (sc_demo_spawn(&aggs[i], o.out, name, av) < 0)
                        goto stop;
        }
        /* The aggregators' group settles first; the workers start together,
         * so their group forms in one rebalance. */
        sc_demo_sleep(3);
        for (int i = 0; i < o.workers; i++) {
                char name[32];
                snprintf(name, sizeof(name), "worker%d", i);
                snprintf(id, sizeof(id), "%d", i);
                char *av[] = {"scadles",
                              "worker",
                              "-c",
                              path,
                              "-b",
                              bs,
                              "--id",
                              id,
                              "--inject-alpha",
                              "0.2",
                              "--inject-beta",
                              "0.1",
                              "--duration",
                              dur,
                              NULL};
                if (sc_demo_spawn(&workers[i], o.out, name, av) < 0)
                        goto stop;
        }
        snprintf(rdist, sizeof(rdist), "uniform:%g:%g", o.rate, o.rate * 0.3);
        snprintf(ntop, sizeof(ntop), "%d", o.topics);
        snprintf(dur, sizeof(dur), "%.0f", o.duration + 30);
        char *fav[] = {"scadles",  "feed",        "--bootstrap", bs,    "--topics",   ntop,
                       "--prefix", "demo-fmnist", "--rate-dist", rdist, "--duration", dur,
                       "--quiet",  NULL};
        if (sc_demo_spawn(&feed, o.out, "feed", fav) < 0)
                goto stop;

        t0 = sc_cli_now();
        double t_eval = t0, t_prev = t0;
        uint64_t v_prev = 0;
        why = "duration";
        for (;;) {
                int changed = 0;
                if (sc_job_model_poll(jm, 50, &changed, err, sizeof(err))) {
                        fprintf(stderr, "scadles demo: %s\n", err);
                        why = "error";
                        break;
                }
                double t = sc_cli_now();
                if (sc_cli_stop) {
                        why = "interrupted";
                        break;
                }
                int dead = 0;
                for (int i = 0; i < o.workers; i++)
                        if (!workers[i].done &&
                            waitpid(workers[i].pid, &workers[i].status, WNOHANG) == workers[i].pid)
                                workers[i].done = dead = 1;
                if (dead) {
                        fprintf(stderr, "scadles demo: a worker exited early (see %s/)\n", o.out);
                        why = "worker exited";
                        break;
                }
                if (t - t_eval >= o.eval_every) {
                        sc_model_out_assemble(model, jm, NULL);
                        if (sc_demo_eval(model, sc_demo_calib(&conf, &calib, &test), &test, &acc) ==
                                0 &&
                            npts < SC_DEMO_MAX_POINTS) {
                                pt_t[npts] = t - t0;
                                pt_a[npts++] = acc;
                        }
                        if (acc > best)
                                best = acc;
                        if (t85 < 0 && acc >= 0.85)
                                t85 = t - t0;
                        uint64_t v = sc_job_model_min_version(jm);
                        if (!o.quiet)
                                fprintf(stderr,
                                        "demo: %6.1f s  test accuracy %.4f  model v%llu "
                                        "(%.1f versions/s)  J.model read %.1f MB\n",
                                        t - t0, acc, (unsigned long long)v,
                                        (double)(v - v_prev) / (t - t_prev),
                                        sc_job_model_stats(jm)->bytes / 1e6);
                        v_prev = v;
                        t_prev = t;
                        t_eval = t;
                        if (o.target > 0 && acc >= o.target) {
                                why = "target reached";
                                break;
                        }
                }
                if (t - t0 >= o.duration)
                        break;
        }
        t_end = sc_cli_now() - t0;
stop:
        if (!o.quiet)
                fprintf(stderr, "demo: stopping (%s): feed, workers, aggregators\n", why);
        sc_demo_stop(&feed, SIGTERM, 10);
        for (int i = 0; i < o.workers; i++)
                if (workers[i].pid > 0 && !workers[i].done)
                        kill(workers[i].pid, SIGTERM);
        for (int i = 0; i < o.workers; i++)
                sc_demo_stop(&workers[i], SIGTERM, 30);
        sc_demo_await_applied(jm, workers, o.workers, 15);
        for (int i = 0; i < 2; i++)
                if (aggs[i].pid > 0 && !aggs[i].done)
                        kill(aggs[i].pid, SIGTERM);
        for (int i = 0; i < 2; i++)
                sc_demo_stop(&aggs[i], SIGTERM, 30);
        /* The final model: what the aggregators published last. */
        for (int k = 0; k < 10; k++)
                sc_job_model_poll(jm, 50, NULL, err, sizeof(err));
        sc_model_out_assemble(model, jm, NULL);
        double final_acc = 0;
        sc_demo_eval(model, sc_demo_calib(&conf, &calib, &test), &test, &final_acc);
        if (npts < SC_DEMO_MAX_POINTS && npts > 0) {
                pt_t[npts] = sc_cli_now() - t0;
                pt_a[npts++] = final_acc;
        }
        snprintf(path, sizeof(path), "%s/accuracy.tsv", o.out);
        FILE *tf = fopen(path, "w");
        if (tf) {
                fprintf(tf, "# seconds\ttest_accuracy\n");
                for (int i = 0; i < npts; i++)
                        fprintf(tf, "%.2f\t%.4f\n", pt_t[i], pt_a[i]);
                fclose(tf);
        }
        /* The summary, from every process's own counters. */
        double up = 0, dense = 0, down = 0, trained = 0, consumed = 0, lost = 0, sent = 0,
               acked = 0, injected = 0, applied = 0, dups = 0, rejected = 0, pq_n = 0, pq_hits = 0,
               pq_wacc = 0;
        int identity = 1, nsum = 0;
        for (int i = 0; i < o.workers; i++) {
                json_t *j = sc_demo_summary(&workers[i]);
                if (!j)
                        continue;
                nsum++;
                json_t *jj = json_object_get(j, "job");
                up += sc_demo_jnum(jj, "bytes_up");
                dense += sc_demo_jnum(jj, "dense_bytes");
                down += sc_demo_jnum(jj, "bytes_down");
                sent += sc_demo_jnum(jj, "updates_sent");
                acked += sc_demo_jnum(jj, "updates_acked");
                injected += sc_demo_jnum(jj, "injected_in");
                trained += sc_demo_jnum(j, "trained");
                consumed += sc_demo_jnum(j, "consumed");
                lost += sc_demo_jnum(j, "lost");
                identity &= json_is_true(json_object_get(j, "identity_ok"));
                json_t *pq = json_object_get(j, "prequential");
                pq_n += sc_demo_jnum(pq, "samples");
                pq_hits += sc_demo_jnum(pq, "accuracy") * sc_demo_jnum(pq, "samples");
                pq_wacc += sc_demo_jnum(pq, "window_accuracy");
                json_decref(j);
        }
        for (int i = 0; i < 2; i++) {
                json_t *j = sc_demo_summary(&aggs[i]);
                applied += sc_demo_jnum(j, "applied");
                dups += sc_demo_jnum(j, "duplicates");
                rejected += sc_demo_jnum(j, "rejected_total");
                json_decref(j);
        }
        long long fed = sc_demo_feed_delivered(&feed);
        printf("demo summary (%s):\n", why);
        printf("  test accuracy     %.4f (best %.4f); 85%% %s %.1f s\n", final_acc,
               best > final_acc ? best : final_acc, t85 < 0 ? "not reached in" : "reached after",
               t85 < 0 ? t_end : t85);
        printf("  prequential       %.4f accuracy over %.0f samples, each scored before it "
               "trained (last windows: %.4f)\n",
               pq_n > 0 ? pq_hits / pq_n : 0.0, pq_n, nsum > 0 ? pq_wacc / nsum : 0.0);
        printf("  wall time         %.1f s of training (%d workers, 2 aggregators, %d topics)\n",
               t_end, o.workers, o.topics);
        printf("  updates           %.0f sent, %.0f acknowledged, %.0f applied, %.0f "
               "duplicates, %.0f rejected\n",
               sent, acked, applied, dups, rejected);
        printf("  bytes up          %.2f MB of updates (%.2f MB uncompressed): compression "
               "ratio %.1fx\n",
               up / 1e6, dense / 1e6, up > 0 ? dense / up : 0.0);
        printf("  bytes down        %.2f MB of model shards read by the workers\n", down / 1e6);
        printf("  records           %lld fed, %.0f consumed, %.0f trained, %.0f foreign samples "
               "mixed in; accounting %s (%d/%d worker summaries)\n",
               fed, consumed, trained, injected,
               identity && nsum == o.workers ? "exact" : "NOT exact", nsum, o.workers);
        printf("  records lost      %.0f\n", lost);
        fflush(stdout);
        if (o.plot && npts > 0)
                sc_demo_plot(o.out, o.quiet);
        rc = npts > 0 && nsum == o.workers ? 0 : 1;
out:
        sc_demo_stop(&feed, SIGKILL, 1);
        for (int i = 0; i < o.workers; i++)
                sc_demo_stop(&workers[i], SIGKILL, 1);
        for (int i = 0; i < 2; i++)
                sc_demo_stop(&aggs[i], SIGKILL, 1);
        sc_job_model_destroy(jm);
        sc_model_destroy(model);
        sc_dataset_free(&test);
        sc_dataset_free(&calib);
        if (have_conf)
                sc_conf_free(&conf);
        sc_broker_destroy(broker);
        return rc;
}
