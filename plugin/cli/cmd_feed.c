/* cmd_feed.c — `scadles feed`: publishes a labelled image data set
 * (Fashion-MNIST or synthetic) to N Kafka topics, each at its own rate. */
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
#include "sc_clock.h"
#include "sc_data.h"
#include "sc_idx.h"
#include "sc_kafka_util.h"
#include "sc_rng.h"

#define SC_FEED_MAX_TOPICS 1024
#define SC_FEED_MAX_KV 64

typedef enum { SC_FEED_RAW, SC_FEED_JSON, SC_FEED_CSV } sc_feed_format_t;

/* One output stream: a topic, its rate and the samples it may send. */
typedef struct sc_feed_topic {
        char *ft_name;
        double ft_rate;     /* target samples/s */
        uint32_t *ft_order; /* indices of eligible samples, shuffled */
        uint32_t ft_n;      /* eligible samples */
        uint32_t ft_cursor; /* next position in ft_order */
        sc_rng_t ft_rng;    /* reshuffles ft_order when it wraps */
        int64_t ft_sent;    /* produced (enqueued) */
        int64_t ft_target;  /* stop after this many; INT64_MAX = unbounded */
        double ft_t_last;   /* seconds from the start to the last produce */
        double ft_max_late; /* worst lateness of a send vs its schedule, s */
        sc_kafka_delivery_t ft_dv;
} sc_feed_topic_t;

typedef struct sc_feed {
        /* options */
        sc_cli_conf_opts_t co; /* -c (its "kafka" object only), -b, -B */
        const char *prefix, *data, *data_dir, *split;
        const char *names[SC_FEED_MAX_TOPICS];
        int n_names, n_topics, labels_per_topic, quiet;
        const char *kv[SC_FEED_MAX_KV];
        int n_kv;
        double rate, duration;
        const char *rate_set, *rate_dist;
        int64_t count;
        uint64_t seed;
        size_t synth_n;
        sc_feed_format_t format;
        /* state */
        size_t n;     /* samples */
        size_t numel; /* bytes per sample */
        int n_classes;
        uint8_t *pixels; /* (n, numel) */
        int32_t *labels; /* (n) */
        sc_feed_topic_t *topics;
        rd_kafka_t *rk;
        char *buf;
        size_t buf_size;
} sc_feed_t;

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
static int sc_feed_check(const sc_feed_t *f)
{
        if (!f->co.bootstrap && !f->co.bootstrap_file)
                fprintf(stderr, "scadles feed: --bootstrap or --bootstrap-file is required\n");
        else if ((f->rate_set != NULL) + (f->rate_dist != NULL) > 1)
                fprintf(stderr, "scadles feed: give at most one of --rate-set, --rate-dist\n");
        else if (strcmp(f->data, "fmnist") && strcmp(f->data, "synth"))
                fprintf(stderr, "scadles feed: --data %s: expected fmnist or synth\n", f->data);
        else if (strcmp(f->split, "train") && strcmp(f->split, "test"))
                fprintf(stderr, "scadles feed: --split %s: expected train or test\n", f->split);
        else
                return -1;
        return 2;
}

/* Parses the options into f; returns -1 to go on, else an exit code. */
static int sc_feed_options(sc_feed_t *f, int argc, char **argv)
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
                        if (sc_cli_number_in("feed", "--rate", optarg, 1e-3, INFINITY, &f->rate))
                                return 2;
                        break;
                case 'S':
                        f->rate_set = optarg;
                        break;
                case 'D':
                        f->rate_dist = optarg;
                        break;
                case 'N':
                        if (sc_cli_integer("feed", "--count", optarg, 1, INT64_MAX, &v))
                                return 2;
                        f->count = v;
                        break;
                case 'd':
                        if (sc_cli_number_in("feed", "--duration", optarg, 1e-3, INFINITY,
                                             &f->duration))
                                return 2;
                        break;
                case 'a':
                        f->data = optarg;
                        break;
                case 'A':
                        f->data_dir = optarg;
                        break;
                case 'L':
                        f->split = optarg;
                        break;
                case 'z':
                        if (sc_cli_integer("feed", "--synth-n", optarg, 1, 10000000, &v))
                                return 2;
                        f->synth_n = (size_t)v;
                        break;
                case 'k':
                        if (sc_cli_integer("feed", "--labels-per-topic", optarg, 0, 1000, &v))
                                return 2;
                        f->labels_per_topic = (int)v;
                        break;
                case 'f':
                        if (!strcmp(optarg, "raw"))
                                f->format = SC_FEED_RAW;
                        else if (!strcmp(optarg, "json"))
                                f->format = SC_FEED_JSON;
                        else if (!strcmp(optarg, "csv"))
                                f->format = SC_FEED_CSV;
                        else {
                                fprintf(stderr,
                                        "scadles feed: --format %s: expected raw, json or csv\n",
                                        optarg);
                                return 2;
                        }
                        break;
                case 'e':
                        if (sc_cli_integer("feed", "--seed", optarg, 0, INT64_MAX, &v))
                                return 2;
                        f->seed = (uint64_t)v;
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

/* Draws one rate from "normal:M:SD" / "uniform:M:SD" or a named ScaDLES set. */
static int sc_feed_rate_spec(const char *set, const char *dist, int *normal, double *mean,
                             double *sd)
{
        static const struct {
                const char *name;
                int normal;
                double mean, sd;
        } sets[] = {
            {"S1", 0, 38, 24},
            {"S2", 0, 300, 112},
            {"S10", 1, 64, 24},
            {"S20", 1, 256, 28},
        };
        if (set) {
                for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
                        if (!strcasecmp(set, sets[i].name)) {
                                *normal = sets[i].normal;
                                *mean = sets[i].mean;
                                *sd = sets[i].sd;
                                return 0;
                        }
                }
                fprintf(stderr, "scadles feed: --rate-set %s: expected S1, S2, S10 or S20\n", set);
                return -1;
        }
        char kind[16];
        int used = 0;
        if (sscanf(dist, "%15[a-z]:%lf:%lf%n", kind, mean, sd, &used) != 3 || dist[used] != '\0' ||
            (strcmp(kind, "normal") && strcmp(kind, "uniform")) || !isfinite(*mean) ||
            !isfinite(*sd) || *sd < 0) {
                fprintf(stderr,
                        "scadles feed: --rate-dist %s: expected normal:MEAN:SD or "
                        "uniform:MEAN:SD with SD >= 0\n",
                        dist);
                return -1;
        }
        *normal = !strcmp(kind, "normal");
        return 0;
}

static int sc_feed_rates(sc_feed_t *f, sc_rng_t *rng)
{
        int normal = 0;
        double mean = 0, sd = 0;
        if (f->rate_set || f->rate_dist) {
                if (sc_feed_rate_spec(f->rate_set, f->rate_dist, &normal, &mean, &sd))
                        return -1;
        }
        for (int i = 0; i < f->n_topics; i++) {
                double r = f->rate;
                if (f->rate_set || f->rate_dist) {
                        if (normal)
                                r = mean + sd * (double)sc_rng_normal(rng);
                        else
                                r = mean +
                                    sd * sqrt(3.0) * (2.0 * (double)sc_rng_uniform(rng) - 1.0);
                        if (r < 1.0)
                                r = 1.0;
                }
                f->topics[i].ft_rate = r;
        }
        return 0;
}

/* Loads the data set and keeps it as bytes: pixels mapped linearly from the
 * set's [min, max] to 0..255 (exact for Fashion-MNIST's [0, 1] scaling). */
static int sc_feed_load(sc_feed_t *f, sc_rng_t *rng)
{
        char errstr[512];
        sc_dataset_t ds;
        memset(&ds, 0, sizeof(ds));
        sc_err_t err;
        if (!strcmp(f->data, "synth")) {
                sc_synth_spec_t spec = {.n = f->synth_n,
                                        .shape = {1, 28, 28},
                                        .n_classes = 10,
                                        .noise = 0.5f,
                                        .proto_seed = f->seed};
                err = sc_synth_make(&ds, &spec, rng, errstr, sizeof(errstr));
        } else if (!strcmp(f->split, "train")) {
                err = sc_fmnist_load(f->data_dir, &ds, NULL, errstr, sizeof(errstr));
        } else {
                err = sc_fmnist_load(f->data_dir, NULL, &ds, errstr, sizeof(errstr));
        }
        if (err) {
                fprintf(stderr, "scadles feed: --data %s: %s\n", f->data, errstr);
                return -1;
        }
        f->n = ds.n;
        f->numel = sc_shape_numel(ds.shape);
        f->n_classes = ds.n_classes;
        f->pixels = malloc(f->n * f->numel);
        f->labels = malloc(f->n * sizeof(int32_t));
        if (!f->pixels || !f->labels || f->n == 0 || f->numel == 0) {
                fprintf(stderr, "scadles feed: out of memory (or empty data set)\n");
                sc_dataset_free(&ds);
                return -1;
        }
        float lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < f->n * f->numel; i++) {
                lo = ds.x[i] < lo ? ds.x[i] : lo;
                hi = ds.x[i] > hi ? ds.x[i] : hi;
        }
        float scale = hi > lo ? 255.0f / (hi - lo) : 0.0f;
        for (size_t i = 0; i < f->n * f->numel; i++) {
                float q = (ds.x[i] - lo) * scale + 0.5f;
                f->pixels[i] = (uint8_t)(q < 0 ? 0 : q > 255 ? 255 : q);
        }
        memcpy(f->labels, ds.y, f->n * sizeof(int32_t));
        sc_dataset_free(&ds);
        return 0;
}

/* Gives topic i its eligible samples: every label (IID), or K labels. */
static int sc_feed_partition(sc_feed_t *f, sc_rng_t *rng)
{
        int k = f->labels_per_topic;
        int iid = k <= 0 || k >= f->n_classes;
        for (int i = 0; i < f->n_topics; i++) {
                sc_feed_topic_t *t = &f->topics[i];
                t->ft_order = malloc(f->n * sizeof(uint32_t));
                if (!t->ft_order) {
                        fprintf(stderr, "scadles feed: out of memory\n");
                        return -1;
                }
                for (size_t s = 0; s < f->n; s++) {
                        int y = f->labels[s], ok = iid;
                        for (int j = 0; !ok && j < k; j++)
                                ok = y == (i * k + j) % f->n_classes;
                        if (ok)
                                t->ft_order[t->ft_n++] = (uint32_t)s;
                }
                if (t->ft_n == 0) {
                        fprintf(stderr, "scadles feed: topic %s: no sample has its labels\n",
                                t->ft_name);
                        return -1;
                }
                sc_rng_split(rng, &t->ft_rng, (uint64_t)i);
                sc_rng_shuffle_u32(&t->ft_rng, t->ft_order, t->ft_n);
        }
        return 0;
}

/* Builds the producer configuration: defaults, then -c FILE's "kafka"
 * object, then -X. Returns NULL after printing what is wrong. */
static rd_kafka_conf_t *sc_feed_conf(const sc_feed_t *f)
{
        char errstr[512], bootstrap[1024];
        static const char *defaults[][2] = {
            {"enable.idempotence", "true"},
            {"linger.ms", "5"},
            {"client.id", "scadles-feed"},
            {"message.timeout.ms", "60000"},
            {"queue.buffering.max.kbytes", "1048576"},
        };
        if (!f->co.bootstrap_file)
                snprintf(bootstrap, sizeof(bootstrap), "%s", f->co.bootstrap);
        else if (sc_cli_bootstrap_read("feed", f->co.bootstrap_file, bootstrap, sizeof(bootstrap)))
                return NULL;
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        const char *origin = "";
        sc_kafka_conf_log_bridge(conf); /* remembers authentication failures */
        sc_err_t err = sc_kafka_conf_set(conf, "bootstrap.servers", bootstrap, "--bootstrap",
                                         errstr, sizeof(errstr));
        for (size_t i = 0; !err && i < sizeof(defaults) / sizeof(defaults[0]); i++)
                err = sc_kafka_conf_set(conf, defaults[i][0], defaults[i][1], defaults[i][0],
                                        errstr, sizeof(errstr));
        if (!err && f->co.config) {
                json_error_t jerr;
                json_t *root = json_load_file(f->co.config, 0, &jerr);
                if (!root) {
                        char why[JSON_ERROR_TEXT_LENGTH];
                        sc_conf_json_error(jerr.text, why, sizeof(why));
                        if (jerr.line > 0)
                                fprintf(stderr, "scadles feed: %s:%d:%d: %s\n", f->co.config,
                                        jerr.line, jerr.column, why);
                        else
                                fprintf(stderr, "scadles feed: -c %s: %s\n", f->co.config, why);
                        rd_kafka_conf_destroy(conf);
                        return NULL;
                }
                err = sc_kafka_conf_apply_json(conf, json_object_get(root, "kafka"), "$.kafka",
                                               errstr, sizeof(errstr));
                json_decref(root);
                origin = f->co.config;
        }
        for (int i = 0; !err && i < f->n_kv; i++) {
                err = sc_kafka_conf_set_kv(conf, f->kv[i], errstr, sizeof(errstr));
                origin = "";
        }
        if (err) {
                fprintf(stderr, "scadles feed: %s%s%s\n", origin, *origin ? ": " : "", errstr);
                rd_kafka_conf_destroy(conf);
                return NULL;
        }
        sc_kafka_conf_delivery(conf);
        return conf;
}

/* Encodes sample s into f->buf; returns its length. */
static size_t sc_feed_encode(sc_feed_t *f, uint32_t s)
{
        const uint8_t *px = f->pixels + (size_t)s * f->numel;
        char *p = f->buf;
        if (f->format == SC_FEED_RAW) {
                memcpy(p, px, f->numel);
                return f->numel;
        }
        if (f->format == SC_FEED_JSON)
                p += sprintf(p, "{\"label\":%d,\"pixels\":[", (int)f->labels[s]);
        else
                p += sprintf(p, "%d", (int)f->labels[s]);
        for (size_t i = 0; i < f->numel; i++) {
                if (f->format == SC_FEED_CSV || i > 0)
                        *p++ = ',';
                unsigned v = px[i];
                if (v >= 100)
                        *p++ = (char)('0' + v / 100);
                if (v >= 10)
                        *p++ = (char)('0' + v / 10 % 10);
                *p++ = (char)('0' + v % 10);
        }
        if (f->format == SC_FEED_JSON) {
                *p++ = ']';
                *p++ = '}';
        }
        return (size_t)(p - f->buf);
}

static int sc_feed_send_one(sc_feed_t *f, sc_feed_topic_t *t)
{
        char errstr[512], key[16];
        if (t->ft_cursor == t->ft_n) {
                sc_rng_shuffle_u32(&t->ft_rng, t->ft_order, t->ft_n);
                t->ft_cursor = 0;
        }
        uint32_t s = t->ft_order[t->ft_cursor++];
        size_t len = sc_feed_encode(f, s);
        int klen = snprintf(key, sizeof(key), "%d", (int)f->labels[s]);
        int raw = f->format == SC_FEED_RAW;
        sc_err_t err =
            sc_kafka_produce(f->rk, t->ft_name, RD_KAFKA_PARTITION_UA, raw ? key : NULL,
                             raw ? (size_t)klen : 0, f->buf, len, raw ? "label" : NULL, key,
                             (size_t)klen, 0, &t->ft_dv, 1000, errstr, sizeof(errstr));
        if (err) {
                /* Not enqueued: counted as a failed delivery, reported once. */
                if (t->ft_dv.dv_failed == 0)
                        fprintf(stderr, "scadles feed: %s\n", errstr);
                t->ft_dv.dv_failed++;
                if (t->ft_dv.dv_first_err == RD_KAFKA_RESP_ERR_NO_ERROR)
                        t->ft_dv.dv_first_err = RD_KAFKA_RESP_ERR__QUEUE_FULL;
        }
        t->ft_sent++;
        return 0;
}

static void sc_feed_progress(const sc_feed_t *f, double elapsed)
{
        int64_t sent = 0, delivered = 0, failed = 0;
        double target = 0, lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < f->n_topics; i++) {
                const sc_feed_topic_t *t = &f->topics[i];
                double expect = floor(elapsed * t->ft_rate) + 1;
                if ((double)t->ft_target < expect)
                        expect = (double)t->ft_target;
                double pct = 100.0 * (double)t->ft_sent / expect;
                lo = pct < lo ? pct : lo;
                hi = pct > hi ? pct : hi;
                sent += t->ft_sent;
                delivered += t->ft_dv.dv_delivered;
                failed += t->ft_dv.dv_failed;
                target += t->ft_rate;
        }
        fprintf(stderr,
                "feed: %6.1f s  sent %" PRId64 " (%.1f/s, target %.1f/s)  delivered %" PRId64
                "  failed %" PRId64 "  per topic %.1f%%..%.1f%% of schedule\n",
                elapsed, sent, (double)sent / elapsed, target, delivered, failed, lo, hi);
}

/* The send loop: topic i's k-th sample is due at t0 + k / rate_i; every tick
 * sends what is due (a batch of produce calls), then waits in rd_kafka_poll()
 * (serving delivery reports) until the next due time, at least 1 ms. */
static void sc_feed_run(sc_feed_t *f, double *elapsedp)
{
        double t0 = sc_clock_mono(), last_progress = t0, now = t0;
        for (;;) {
                now = sc_clock_mono();
                double el = now - t0;
                if (sc_cli_stop || (f->duration > 0 && el >= f->duration) ||
                    sc_kafka_fatal_check(NULL, 0))
                        break;
                int done = 1;
                double next_due = INFINITY;
                for (int i = 0; i < f->n_topics; i++) {
                        sc_feed_topic_t *t = &f->topics[i];
                        double due = floor(el * t->ft_rate) + 1;
                        int64_t want = due < (double)t->ft_target ? (int64_t)due : t->ft_target;
                        if (t->ft_sent < want) {
                                double late = el - (double)t->ft_sent / t->ft_rate;
                                if (late > t->ft_max_late)
                                        t->ft_max_late = late;
                        }
                        if (t->ft_sent < want) {
                                while (t->ft_sent < want && !sc_cli_stop)
                                        sc_feed_send_one(f, t);
                                t->ft_t_last = sc_clock_mono() - t0;
                        }
                        if (t->ft_sent < t->ft_target) {
                                done = 0;
                                double nd = (double)t->ft_sent / t->ft_rate;
                                next_due = nd < next_due ? nd : next_due;
                        }
                }
                if (done)
                        break;
                if (!f->quiet && now - last_progress >= 1.0) {
                        sc_feed_progress(f, el);
                        last_progress = now;
                }
                double wait = next_due - (sc_clock_mono() - t0);
                if (f->duration > 0 && f->duration - el < wait)
                        wait = f->duration - el;
                int ms = (int)ceil(wait * 1000.0);
                rd_kafka_poll(f->rk, ms < 1 ? 1 : ms > 100 ? 100 : ms);
        }
        *elapsedp = now - t0;
}

static void sc_feed_free(sc_feed_t *f)
{
        if (f->rk)
                rd_kafka_destroy(f->rk);
        for (int i = 0; f->topics && i < f->n_topics; i++) {
                free(f->topics[i].ft_name);
                free(f->topics[i].ft_order);
        }
        free(f->topics);
        free(f->pixels);
        free(f->labels);
        free(f->buf);
}

/* The topics' names, targets and delivery counters. */
static int sc_feed_topics(sc_feed_t *f)
{
        f->topics = calloc((size_t)f->n_topics, sizeof(*f->topics));
        if (!f->topics) {
                fprintf(stderr, "scadles feed: out of memory\n");
                return -1;
        }
        for (int i = 0; i < f->n_topics; i++) {
                sc_feed_topic_t *t = &f->topics[i];
                char name[300];
                if (f->n_names)
                        snprintf(name, sizeof(name), "%s", f->names[i]);
                else
                        snprintf(name, sizeof(name), "%s.%d", f->prefix, i);
                t->ft_name = strdup(name);
                if (!t->ft_name) {
                        fprintf(stderr, "scadles feed: out of memory\n");
                        return -1;
                }
                t->ft_target = f->count > 0 ? f->count : INT64_MAX;
                sc_kafka_delivery_init(&t->ft_dv);
        }
        return 0;
}

/* The producer, the data set, each topic's samples and the encode buffer;
 * returns 0 or an exit code (2: configuration, checked before the data set
 * loads; 1: runtime). */
static int sc_feed_start(sc_feed_t *f, sc_rng_t *data_rng, sc_rng_t *order_rng)
{
        char errstr[512];
        rd_kafka_conf_t *conf = sc_feed_conf(f);
        if (!conf)
                return 2;
        f->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!f->rk) {
                fprintf(stderr, "scadles feed: producer: %s\n", errstr);
                rd_kafka_conf_destroy(conf);
                return 1;
        }
        if (sc_feed_load(f, data_rng) || sc_feed_partition(f, order_rng))
                return 1;
        f->buf_size = 64 + f->numel * 4;
        f->buf = malloc(f->buf_size);
        if (!f->buf) {
                fprintf(stderr, "scadles feed: out of memory\n");
                return 1;
        }
        return 0;
}

/* Waits for the delivery reports: up to 30 s, less when the broker refuses
 * the credentials; returns the seconds it took. */
static double sc_feed_flush(sc_feed_t *f)
{
        double t_flush = sc_clock_mono();
        for (int i = 0; i < 300 && rd_kafka_outq_len(f->rk) > 0 && !sc_kafka_fatal_check(NULL, 0);
             i++)
                rd_kafka_flush(f->rk, 100);
        rd_kafka_poll(f->rk, 0);
        return sc_clock_mono() - t_flush;
}

/* One line per topic and the total on stdout; returns the exit code (1 if
 * a record failed or is undelivered, or on a fatal error). */
static int sc_feed_report(sc_feed_t *f, double elapsed, double t_flush, double total_rate)
{
        char errstr[512];
        int64_t sent = 0, delivered = 0, failed = 0, pending = 0;
        double worst = 0;
        for (int i = 0; i < f->n_topics; i++) {
                sc_feed_topic_t *t = &f->topics[i];
                /* Rate from the send times: the first sample goes at 0 s,
                 * so (delivered - 1) intervals span 0 .. the last send. */
                int64_t dn = t->ft_dv.dv_delivered;
                double achieved = dn >= 2 && t->ft_t_last > 0
                                      ? (double)(dn - 1) / t->ft_t_last
                                      : (elapsed > 0 ? (double)dn / elapsed : 0);
                double dev = 100.0 * (achieved - t->ft_rate) / t->ft_rate;
                if (fabs(dev) > fabs(worst))
                        worst = dev;
                printf("feed: topic %s target %.2f/s sent %" PRId64 " delivered %" PRId64
                       " failed %" PRId64 " achieved %.2f/s (%+.2f%%) max-late %.1f ms\n",
                       t->ft_name, t->ft_rate, t->ft_sent, t->ft_dv.dv_delivered,
                       t->ft_dv.dv_failed, achieved, dev, t->ft_max_late * 1000.0);
                sent += t->ft_sent;
                delivered += t->ft_dv.dv_delivered;
                failed += t->ft_dv.dv_failed;
                pending += t->ft_dv.dv_pending;
        }
        printf("feed: total topics %d sent %" PRId64 " delivered %" PRId64 " failed %" PRId64
               " undelivered %" PRId64 " elapsed %.2f s flush %.2f s achieved %.1f/s "
               "target %.1f/s worst-topic %+.2f%%\n",
               f->n_topics, sent, delivered, failed, pending, elapsed, t_flush,
               elapsed > 0 ? (double)delivered / elapsed : 0, total_rate, worst);
        fflush(stdout);
        int rc = failed || pending ? 1 : 0;
        if (sc_kafka_fatal_check(errstr, sizeof(errstr))) {
                fprintf(stderr, "scadles feed: %s\n", errstr);
                rc = 1;
        } else if (failed || pending) {
                rd_kafka_resp_err_t first = RD_KAFKA_RESP_ERR_NO_ERROR;
                for (int i = 0; i < f->n_topics && !first; i++)
                        first = f->topics[i].ft_dv.dv_first_err;
                fprintf(stderr,
                        "scadles feed: %" PRId64 " record(s) failed, %" PRId64
                        " undelivered after 30 s flush; first error: %s\n",
                        failed, pending, rd_kafka_err2str(first));
        }
        if (pending) {
                /* Reports still reference the topics: purge and serve them
                 * before the topics are freed. */
                rd_kafka_purge(f->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
                rd_kafka_flush(f->rk, 5000);
        }
        return rc;
}

int sc_cmd_feed(int argc, char **argv)
{
        sc_feed_t f;
        sc_rng_t rng, rate_rng, data_rng, order_rng;
        memset(&f, 0, sizeof(f));
        f.prefix = "fmnist";
        f.data = "fmnist";
        f.split = "train";
        f.rate = 100;
        f.n_topics = 1;
        f.seed = 1;
        f.synth_n = 10000;
        f.format = SC_FEED_RAW;
        int rc = sc_feed_options(&f, argc, argv);
        if (rc >= 0)
                return rc;
        rc = 2;
        sc_rng_seed(&rng, f.seed);
        sc_rng_split(&rng, &rate_rng, 1);
        sc_rng_split(&rng, &data_rng, 2);
        sc_rng_split(&rng, &order_rng, 3);
        if (sc_feed_topics(&f) || sc_feed_rates(&f, &rate_rng) ||
            (rc = sc_feed_start(&f, &data_rng, &order_rng)))
                goto out;

        double total_rate = 0;
        for (int i = 0; i < f.n_topics; i++)
                total_rate += f.topics[i].ft_rate;
        fprintf(stderr,
                "feed: %d topic(s), %zu samples of %zu bytes (%s), format %s, "
                "target %.1f samples/s in all\n",
                f.n_topics, f.n, f.numel, f.data,
                f.format == SC_FEED_RAW    ? "raw"
                : f.format == SC_FEED_JSON ? "json"
                                           : "csv",
                total_rate);

        sc_cli_signals();
        double elapsed = 0;
        sc_feed_run(&f, &elapsed);
        double t_flush = sc_feed_flush(&f);
        rc = sc_feed_report(&f, elapsed, t_flush, total_rate);
out:
        sc_feed_free(&f);
        return rc;
}
