/* cmd_feed.c — `scadles feed`: its options, then the feed (connectors/feed.c,
 * a labelled image data set published to N Kafka topics, each at its own
 * rate) and its summary. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "cmd.h"
#include "sc_feed.h"
#include "sc_idx.h"
#include "sc_kafka_util.h"

#define SC_FEED_MAX_TOPICS 1024
#define SC_FEED_MAX_KV 64

/* The command's options; the feed itself is connectors/feed.c's. */
typedef struct sc_feed_cli {
        sc_cli_conf_opts_t co; /* -c (its "kafka" object only), -b, -B */
        const char *prefix;
        const char *names[SC_FEED_MAX_TOPICS];
        int n_names, n_topics, quiet;
        const char *kv[SC_FEED_MAX_KV];
        int n_kv;
        sc_feed_spec_t spec;
} sc_feed_cli_t;

static void sc_feed_usage(FILE *out)
{
        fprintf(
            out,
            "usage: scadles feed (--bootstrap ADDR | --bootstrap-file FILE) [options]\n\n"
            "Publishes samples of a labelled image data set to Kafka topics, each topic at\n"
            "its own constant rate (samples/s), until --count, --duration or SIGINT.\n\n"
            "topics and rates:\n"
            "  --topics N            number of topics, named PREFIX.0 .. PREFIX.N-1 (default 1)\n"
            "  --prefix P            topic name prefix (default fmnist)\n"
            "  --topic NAME          explicit topic name; repeat for several (overrides\n"
            "                        --topics/--prefix)\n"
            "  --partitions N        create missing topics with N partitions each (existing\n"
            "                        ones are used as they are; default: the broker creates\n"
            "                        them on first use, with its num.partitions)\n"
            "  --rate R              every topic at R samples/s (default 100)\n"
            "  --rate-set S          per-topic rates drawn from a ScaDLES set: S1 (uniform,\n"
            "                        mean 38, sd 24), S2 (uniform, 300, 112), S10 (normal,\n"
            "                        64, 24), S20 (normal, 256, 28)\n"
            "  --rate-dist D         per-topic rates from normal:MEAN:SD or uniform:MEAN:SD\n"
            "                        (uniform on MEAN -+ SD*sqrt(3)); rates are clamped to >= 1\n"
            "  --count N             stop each topic after N samples\n"
            "  --duration S          stop after S seconds\n"
            "data:\n"
            "  --data fmnist|synth   Fashion-MNIST from --data-dir (default %s)\n"
            "                        or a synthetic 28x28, 10-class set (default fmnist)\n"
            "  --split train|test    Fashion-MNIST half (default train)\n"
            "  --synth-n N           synthetic samples (default 10000)\n"
            "  --labels-per-topic K  non-IID: topic i gets labels (i*K + j) mod 10,\n"
            "                        j < K (default 0: every label, IID)\n"
            "  --format F            raw: numel uint8 pixel bytes, label as ASCII key and\n"
            "                        header \"label\"; json: {\"label\":3,\"pixels\":[...]};\n"
            "                        csv: label,p0,p1,... (default raw)\n"
            "  --seed S              seed for rates, order and synthetic data (default 1)\n"
            "kafka:\n"
            "  -c FILE               JSON config; its \"kafka\" object sets librdkafka\n"
            "                        properties\n"
            "  -X name=value         a librdkafka property (after -c; may be repeated)\n"
            "  --quiet               no progress lines\n\n"
            "Progress (at most once per second) goes to stderr; the summary, one line per\n"
            "topic and a total, to stdout. Exit 1 if any record failed delivery.\n",
            SC_FMNIST_DIR);
}

/* The checks across options; returns -1 to go on, else an exit code. */
static int sc_feed_check(const sc_feed_cli_t *f)
{
        if (!f->co.bootstrap && !f->co.bootstrap_file)
                fprintf(stderr, "scadles feed: --bootstrap or --bootstrap-file is required\n");
        else if ((f->spec.rate_set != NULL) + (f->spec.rate_dist != NULL) > 1)
                fprintf(stderr, "scadles feed: give at most one of --rate-set, --rate-dist\n");
        else if (strcmp(f->spec.data, "fmnist") && strcmp(f->spec.data, "synth"))
                fprintf(stderr, "scadles feed: --data %s: expected fmnist or synth\n",
                        f->spec.data);
        else if (strcmp(f->spec.split, "train") && strcmp(f->spec.split, "test"))
                fprintf(stderr, "scadles feed: --split %s: expected train or test\n",
                        f->spec.split);
        else
                return -1;
        return 2;
}

/* Parses the options into f; returns -1 to go on, else an exit code. */
static int sc_feed_options(sc_feed_cli_t *f, int argc, char **argv)
{
        static const struct option opts[] = {
            {"bootstrap", required_argument, NULL, 'b'},
            {"bootstrap-file", required_argument, NULL, 'B'},
            {"topics", required_argument, NULL, 'n'},
            {"prefix", required_argument, NULL, 'P'},
            {"topic", required_argument, NULL, 't'},
            {"rate", required_argument, NULL, 'r'},
            {"rate-set", required_argument, NULL, 'S'},
            {"rate-dist", required_argument, NULL, 'D'},
            {"count", required_argument, NULL, 'N'},
            {"duration", required_argument, NULL, 'd'},
            {"data", required_argument, NULL, 'a'},
            {"data-dir", required_argument, NULL, 'A'},
            {"split", required_argument, NULL, 'L'},
            {"synth-n", required_argument, NULL, 'z'},
            {"labels-per-topic", required_argument, NULL, 'k'},
            {"format", required_argument, NULL, 'f'},
            {"seed", required_argument, NULL, 'e'},
            {"partitions", required_argument, NULL, 'p'},
            {"quiet", no_argument, NULL, 'q'},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0},
        };
        long long v;
        int c;
        optind = 1;
        opterr = 0;
        while ((c = getopt_long(argc, argv, ":b:c:X:qh", opts, NULL)) != -1) {
                if (sc_cli_conf_opt("feed", &f->co, c, optarg))
                        continue; /* -c, -b, -B (no option of feed's is 's') */
                switch (c) {
                case 'X':
                        if (f->n_kv == SC_FEED_MAX_KV) {
                                fprintf(stderr, "scadles feed: more than %d -X options\n",
                                        SC_FEED_MAX_KV);
                                return 2;
                        }
                        f->kv[f->n_kv++] = optarg;
                        break;
                case 'n':
                        if (sc_cli_integer("feed", "--topics", optarg, 1, SC_FEED_MAX_TOPICS, &v))
                                return 2;
                        f->n_topics = (int)v;
                        break;
                case 'P':
                        f->prefix = optarg;
                        break;
                case 't':
                        if (f->n_names == SC_FEED_MAX_TOPICS) {
                                fprintf(stderr, "scadles feed: more than %d --topic options\n",
                                        SC_FEED_MAX_TOPICS);
                                return 2;
                        }
                        f->names[f->n_names++] = optarg;
                        break;
                case 'r':
                        if (sc_cli_number_in("feed", "--rate", optarg, 1e-3, INFINITY,
                                             &f->spec.rate))
                                return 2;
                        break;
                case 'S':
                        f->spec.rate_set = optarg;
                        break;
                case 'D':
                        f->spec.rate_dist = optarg;
                        break;
                case 'N':
                        if (sc_cli_integer("feed", "--count", optarg, 1, INT64_MAX, &v))
                                return 2;
                        f->spec.count = v;
                        break;
                case 'd':
                        if (sc_cli_number_in("feed", "--duration", optarg, 1e-3, INFINITY,
                                             &f->spec.duration))
                                return 2;
                        break;
                case 'a':
                        f->spec.data = optarg;
                        break;
                case 'A':
                        f->spec.data_dir = optarg;
                        break;
                case 'L':
                        f->spec.split = optarg;
                        break;
                case 'z':
                        if (sc_cli_integer("feed", "--synth-n", optarg, 1, 10000000, &v))
                                return 2;
                        f->spec.synth_n = (size_t)v;
                        break;
                case 'k':
                        if (sc_cli_integer("feed", "--labels-per-topic", optarg, 0, 1000, &v))
                                return 2;
                        f->spec.labels_per_topic = (int)v;
                        break;
                case 'f':
                        if (!strcmp(optarg, "raw"))
                                f->spec.format = SC_FEED_RAW;
                        else if (!strcmp(optarg, "json"))
                                f->spec.format = SC_FEED_JSON;
                        else if (!strcmp(optarg, "csv"))
                                f->spec.format = SC_FEED_CSV;
                        else {
                                fprintf(stderr,
                                        "scadles feed: --format %s: expected raw, json or csv\n",
                                        optarg);
                                return 2;
                        }
                        break;
                case 'p':
                        if (sc_cli_integer("feed", "--partitions", optarg, 1, 100000, &v))
                                return 2;
                        f->spec.partitions = (int)v;
                        break;
                case 'e':
                        if (sc_cli_integer("feed", "--seed", optarg, 0, INT64_MAX, &v))
                                return 2;
                        f->spec.seed = (uint64_t)v;
                        break;
                case 'q':
                        f->quiet = 1;
                        break;
                default:
                        return sc_cli_opt_other("feed", c, argv, sc_feed_usage);
                }
        }
        if (sc_cli_no_operands("feed", argc, argv, sc_feed_usage))
                return 2;
        if (f->n_names)
                f->n_topics = f->n_names;
        return sc_feed_check(f);
}

/* The "kafka" object of -c FILE (a JSON configuration), as the feed's
 * producer properties: *rootp owns it (NULL without -c). 0, or 2 after
 * printing what is wrong. */
static int sc_feed_kafka_json(const sc_feed_cli_t *f, json_t **rootp)
{
        json_error_t jerr;
        *rootp = NULL;
        if (!f->co.config)
                return 0;
        json_t *root = json_load_file(f->co.config, 0, &jerr);
        if (!root) {
                char why[JSON_ERROR_TEXT_LENGTH];
                sc_conf_json_error(jerr.text, why, sizeof(why));
                if (jerr.line > 0)
                        fprintf(stderr, "scadles feed: %s:%d:%d: %s\n", f->co.config, jerr.line,
                                jerr.column, why);
                else
                        fprintf(stderr, "scadles feed: -c %s: %s\n", f->co.config, why);
                return 2;
        }
        *rootp = root;
        return 0;
}

/* One line per topic and the total on stdout; returns the exit code (1 if
 * a record failed or is undelivered, or on a fatal error). */
static int sc_feed_report(sc_feed_t *feed, double elapsed, double t_flush, double total_rate)
{
        char errstr[512];
        int64_t sent = 0, delivered = 0, failed = 0, pending = 0;
        double worst = 0, rates = 0; /* rates: the achieved rates added up */
        int rated = 0;               /* topics with a rate */
        int n = sc_feed_topic_count(feed), first = 0;
        for (int i = 0; i < n; i++) {
                sc_feed_topic_stats_t t;
                sc_feed_topic_stats(feed, i, &t);
                char got[64] = "n/a (under 2 delivered)";
                if (!isnan(t.achieved)) {
                        double dev = 100.0 * (t.achieved - t.rate) / t.rate;
                        if (fabs(dev) > fabs(worst))
                                worst = dev;
                        snprintf(got, sizeof(got), "%.2f/s (%+.2f%%)", t.achieved, dev);
                        rates += t.achieved;
                        rated++;
                }
                printf("feed: topic %s target %.2f/s sent %" PRId64 " delivered %" PRId64
                       " failed %" PRId64 " achieved %s max-late %.1f ms\n",
                       t.name, t.rate, t.sent, t.delivered, t.failed, got, t.max_late * 1000.0);
                sent += t.sent;
                delivered += t.delivered;
                failed += t.failed;
                pending += t.pending;
                if (!first)
                        first = t.first_err;
        }
        char all[96] = "n/a", worst_s[32] = "n/a";
        if (rated) { /* the topics' rates added up, as the target is */
                snprintf(all, sizeof(all), "%.1f/s", rates);
                if (rated < n)
                        snprintf(all + strlen(all), sizeof(all) - strlen(all),
                                 " (the %d of %d topics with a rate)", rated, n);
                snprintf(worst_s, sizeof(worst_s), "%+.2f%%", worst);
        }
        printf("feed: total topics %d sent %" PRId64 " delivered %" PRId64 " failed %" PRId64
               " undelivered %" PRId64 " elapsed %.2f s flush %.2f s achieved %s "
               "target %.1f/s worst-topic %s\n",
               n, sent, delivered, failed, pending, elapsed, t_flush, all, total_rate, worst_s);
        fflush(stdout);
        int rc = failed || pending ? 1 : 0;
        if (sc_kafka_fatal_check(errstr, sizeof(errstr))) {
                fprintf(stderr, "scadles feed: %s\n", errstr);
                rc = 1;
        } else if (failed || pending) {
                fprintf(stderr,
                        "scadles feed: %" PRId64 " record(s) failed, %" PRId64
                        " undelivered after 30 s flush; first error: %s\n",
                        failed, pending, rd_kafka_err2str((rd_kafka_resp_err_t)first));
        }
        return rc;
}

/* Progress lines on stderr, other messages with the command's prefix. */
static void sc_feed_log(void *opaque, int level, const char *line)
{
        if (level >= 6)
                fprintf(stderr, "feed: %s\n", line);
        else
                fprintf(stderr, "scadles feed: %s\n", line);
}

int sc_cmd_feed(int argc, char **argv)
{
        static char names[SC_FEED_MAX_TOPICS][300];
        const char *topics[SC_FEED_MAX_TOPICS];
        char bootstrap[1024], errstr[1024];
        sc_feed_cli_t f;
        sc_feed_t *feed = NULL;
        json_t *kafka = NULL;
        memset(&f, 0, sizeof(f));
        f.prefix = "fmnist";
        f.n_topics = 1;
        f.spec.data = "fmnist";
        f.spec.split = "train";
        f.spec.rate = 100;
        f.spec.seed = 1;
        f.spec.synth_n = 10000;
        f.spec.format = SC_FEED_RAW;
        int rc = sc_feed_options(&f, argc, argv);
        if (rc >= 0)
                return rc;
        for (int i = 0; i < f.n_topics; i++) {
                if (f.n_names)
                        snprintf(names[i], sizeof(names[i]), "%s", f.names[i]);
                else
                        snprintf(names[i], sizeof(names[i]), "%s.%d", f.prefix, i);
                topics[i] = names[i];
        }
        if (!f.co.bootstrap_file)
                snprintf(bootstrap, sizeof(bootstrap), "%s", f.co.bootstrap);
        else if (sc_cli_bootstrap_read("feed", f.co.bootstrap_file, bootstrap, sizeof(bootstrap)))
                return 2;
        if ((rc = sc_feed_kafka_json(&f, &kafka)))
                return rc;
        f.spec.bootstrap = bootstrap;
        f.spec.kafka = kafka ? json_object_get(kafka, "kafka") : NULL;
        f.spec.kafka_origin = f.co.config;
        f.spec.kv = f.kv;
        f.spec.n_kv = f.n_kv;
        f.spec.topics = topics;
        f.spec.n_topics = f.n_topics;
        f.spec.data_dir = f.spec.data_dir ? f.spec.data_dir : SC_FMNIST_DIR;
        f.spec.progress = !f.quiet;
        f.spec.stop = &sc_cli_stop;
        f.spec.log = sc_feed_log;
        sc_err_t err = sc_feed_new(&feed, &f.spec, errstr, sizeof(errstr));
        json_decref(kafka);
        if (err) {
                fprintf(stderr, "scadles feed: %s\n", errstr);
                return err == SC_ERR_CONFIG ? 2 : 1;
        }
        size_t samples, numel;
        double total_rate;
        sc_feed_describe(feed, &samples, &numel, &total_rate);
        fprintf(stderr,
                "feed: %d topic(s), %zu samples of %zu bytes (%s), format %s, "
                "target %.1f samples/s in all\n",
                f.n_topics, samples, numel, f.spec.data,
                f.spec.format == SC_FEED_RAW    ? "raw"
                : f.spec.format == SC_FEED_JSON ? "json"
                                                : "csv",
                total_rate);
        sc_cli_signals();
        double elapsed = sc_feed_run(feed);
        double t_flush = sc_feed_flush(feed);
        rc = sc_feed_report(feed, elapsed, t_flush, total_rate);
        sc_feed_destroy(feed);
        return rc;
}
