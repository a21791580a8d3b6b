/* feed.c — the feed (sc_feed.h): a labelled image data set published to
 * Kafka topics, each at its own rate, through an idempotent producer. */
#include "sc_feed.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "sc_clock.h"
#include "sc_data.h"
#include "sc_kafka_admin.h"
#include "sc_idx.h"
#include "sc_kafka_util.h"
#include "sc_rng.h"

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

struct sc_feed {
        sc_feed_spec_t spec;
        size_t n;     /* samples */
        size_t numel; /* bytes per sample */
        int n_classes;
        uint8_t *pixels; /* (n, numel) */
        int32_t *labels; /* (n) */
        sc_feed_topic_t *topics;
        int n_topics;
        rd_kafka_t *rk;
        char *buf;
        size_t buf_size;
};

#define sc_feed_logf(f, level, ...) sc_logf((f)->spec.log, (f)->spec.log_opaque, level, __VA_ARGS__)

/* Draws one rate from "normal:M:SD" / "uniform:M:SD" or a named ScaDLES set. */
static sc_err_t sc_feed_rate_spec(const char *set, const char *dist, int *normal, double *mean,
                                  double *sd, char *errstr, size_t errstr_size)
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
                                return SC_OK;
                        }
                }
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "--rate-set %s: expected S1, S2, S10 or S20", set);
        }
        char kind[16];
        int used = 0;
        if (sscanf(dist, "%15[a-z]:%lf:%lf%n", kind, mean, sd, &used) != 3 || dist[used] != '\0' ||
            (strcmp(kind, "normal") && strcmp(kind, "uniform")) || !isfinite(*mean) ||
            !isfinite(*sd) || *sd < 0)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "--rate-dist %s: expected normal:MEAN:SD or uniform:MEAN:SD with "
                               "SD >= 0",
                               dist);
        *normal = !strcmp(kind, "normal");
        return SC_OK;
}

sc_err_t sc_feed_rate_set_check(const char *set, char *errstr, size_t errstr_size)
{
        int normal;
        double mean, sd;
        if (!set)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "--rate-set: no set named");
        return sc_feed_rate_spec(set, "", &normal, &mean, &sd, errstr, errstr_size);
}

static sc_err_t sc_feed_rates(sc_feed_t *f, sc_rng_t *rng, char *errstr, size_t errstr_size)
{
        const sc_feed_spec_t *sp = &f->spec;
        int normal = 0;
        double mean = 0, sd = 0;
        sc_err_t err;
        if ((sp->rate_set || sp->rate_dist) &&
            (err = sc_feed_rate_spec(sp->rate_set, sp->rate_dist, &normal, &mean, &sd, errstr,
                                     errstr_size)))
                return err;
        for (int i = 0; i < f->n_topics; i++) {
                double r = sp->rate;
                if (sp->rate_set || sp->rate_dist) {
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
        return SC_OK;
}

/* Loads the data set and keeps it as bytes: pixels mapped linearly from the
 * set's [min, max] to 0..255 (exact for Fashion-MNIST's [0, 1] scaling). */
static sc_err_t sc_feed_load(sc_feed_t *f, sc_rng_t *rng, char *errstr, size_t errstr_size)
{
        const sc_feed_spec_t *sp = &f->spec;
        char why[512];
        sc_dataset_t ds;
        memset(&ds, 0, sizeof(ds));
        sc_err_t err;
        if (!strcmp(sp->data, "synth")) {
                sc_synth_spec_t spec = {.n = sp->synth_n,
                                        .shape = {1, 28, 28},
                                        .n_classes = 10,
                                        .noise = 0.5f,
                                        .proto_seed = sp->seed};
                err = sc_synth_make(&ds, &spec, rng, why, sizeof(why));
        } else if (!strcmp(sp->split, "train")) {
                err = sc_fmnist_load(sp->data_dir, &ds, NULL, why, sizeof(why));
        } else {
                err = sc_fmnist_load(sp->data_dir, NULL, &ds, why, sizeof(why));
        }
        if (err)
                return sc_errf(err, errstr, errstr_size, "--data %s: %s", sp->data, why);
        f->n = ds.n;
        f->numel = sc_shape_numel(ds.shape);
        f->n_classes = ds.n_classes;
        f->pixels = malloc(f->n * f->numel);
        f->labels = malloc(f->n * sizeof(int32_t));
        if (!f->pixels || !f->labels || f->n == 0 || f->numel == 0) {
                sc_dataset_free(&ds);
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "out of memory (or empty data set)");
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
        return SC_OK;
}

/* Gives topic i its eligible samples: every label (IID), or K labels. */
static sc_err_t sc_feed_partition(sc_feed_t *f, sc_rng_t *rng, char *errstr, size_t errstr_size)
{
        int k = f->spec.labels_per_topic;
        int iid = k <= 0 || k >= f->n_classes;
        for (int i = 0; i < f->n_topics; i++) {
                sc_feed_topic_t *t = &f->topics[i];
                t->ft_order = malloc(f->n * sizeof(uint32_t));
                if (!t->ft_order)
                        return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
                for (size_t s = 0; s < f->n; s++) {
                        int y = f->labels[s], ok = iid;
                        for (int j = 0; !ok && j < k; j++)
                                ok = y == (i * k + j) % f->n_classes;
                        if (ok)
                                t->ft_order[t->ft_n++] = (uint32_t)s;
                }
                if (t->ft_n == 0)
                        return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                                       "topic %s: no sample has its labels", t->ft_name);
                sc_rng_split(rng, &t->ft_rng, (uint64_t)i);
                sc_rng_shuffle_u32(&t->ft_rng, t->ft_order, t->ft_n);
        }
        return SC_OK;
}

/* Makes the topics exist with spec.partitions partitions each (an existing
 * topic is taken as it is). */
static sc_err_t sc_feed_create_topics(sc_feed_t *f, char *errstr, size_t errstr_size)
{
        sc_kafka_topic_spec_t *ts = calloc((size_t)f->n_topics, sizeof(*ts));
        if (!ts)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        for (int i = 0; i < f->n_topics; i++) {
                snprintf(ts[i].name, sizeof(ts[i].name), "%s", f->topics[i].ft_name);
                ts[i].partitions = f->spec.partitions;
                ts[i].replication = -1;
        }
        int created = 0;
        sc_err_t err = SC_OK;
        /* At most 64 topics a request (sc_kafka_admin_ensure). */
        for (int i = 0; !err && i < f->n_topics; i += 64) {
                int c = 0;
                err = sc_kafka_admin_ensure(f->rk, ts + i,
                                            f->n_topics - i < 64 ? f->n_topics - i : 64, 15000, &c,
                                            errstr, errstr_size);
                created += c;
        }
        free(ts);
        if (!err && created)
                sc_feed_logf(f, 6, "created %d topic(s) with %d partition(s) each", created,
                             f->spec.partitions);
        return err;
}

/* The producer configuration: defaults, then the kafka object, then the
 * name=value properties. */
static sc_err_t sc_feed_conf(const sc_feed_spec_t *sp, rd_kafka_conf_t **out, char *errstr,
                             size_t errstr_size)
{
        char why[512];
        static const char *defaults[][2] = {
            {"enable.idempotence", "true"},
            {"linger.ms", "5"},
            {"client.id", "scadles-feed"},
            {"message.timeout.ms", "60000"},
            {"queue.buffering.max.kbytes", "1048576"},
        };
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        const char *origin = "";
        sc_kafka_conf_log_bridge(conf); /* remembers authentication failures */
        sc_err_t err = sc_kafka_conf_set(conf, "bootstrap.servers", sp->bootstrap, "--bootstrap",
                                         why, sizeof(why));
        for (size_t i = 0; !err && i < sizeof(defaults) / sizeof(defaults[0]); i++)
                err = sc_kafka_conf_set(conf, defaults[i][0], defaults[i][1], defaults[i][0], why,
                                        sizeof(why));
        if (!err && sp->kafka) {
                err = sc_kafka_conf_apply_json(conf, (json_t *)sp->kafka, "$.kafka", why,
                                               sizeof(why));
                origin = sp->kafka_origin ? sp->kafka_origin : "";
        }
        for (int i = 0; !err && i < sp->n_kv; i++) {
                err = sc_kafka_conf_set_kv(conf, sp->kv[i], why, sizeof(why));
                origin = "";
        }
        if (err) {
                rd_kafka_conf_destroy(conf);
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "%s%s%s", origin,
                               *origin ? ": " : "", why);
        }
        sc_kafka_conf_delivery(conf);
        *out = conf;
        return SC_OK;
}

/* The topics' names, targets and delivery counters. */
static sc_err_t sc_feed_topics(sc_feed_t *f, char *errstr, size_t errstr_size)
{
        f->n_topics = f->spec.n_topics;
        f->topics = calloc((size_t)f->n_topics, sizeof(*f->topics));
        if (!f->topics)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        for (int i = 0; i < f->n_topics; i++) {
                sc_feed_topic_t *t = &f->topics[i];
                if (!(t->ft_name = strdup(f->spec.topics[i])))
                        return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
                t->ft_target = f->spec.count > 0 ? f->spec.count : INT64_MAX;
                sc_kafka_delivery_init(&t->ft_dv);
        }
        return SC_OK;
}

sc_err_t sc_feed_new(sc_feed_t **fp, const sc_feed_spec_t *spec, char *errstr, size_t errstr_size)
{
        char why[512];
        sc_rng_t rng, rate_rng, data_rng, order_rng;
        rd_kafka_conf_t *conf = NULL;
        sc_err_t err;
        *fp = NULL;
        if (spec->n_topics < 1 || !spec->bootstrap)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "the feed needs a bootstrap address and a topic");
        sc_feed_t *f = calloc(1, sizeof(*f));
        if (!f)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        f->spec = *spec;
        sc_rng_seed(&rng, spec->seed);
        sc_rng_split(&rng, &rate_rng, 1);
        sc_rng_split(&rng, &data_rng, 2);
        sc_rng_split(&rng, &order_rng, 3);
        if ((err = sc_feed_topics(f, errstr, errstr_size)) ||
            (err = sc_feed_rates(f, &rate_rng, errstr, errstr_size)) ||
            (err = sc_feed_conf(spec, &conf, errstr, errstr_size)))
                goto fail;
        if (!(f->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof(why)))) {
                rd_kafka_conf_destroy(conf);
                err = sc_errf(SC_ERR_IO, errstr, errstr_size, "producer: %s", why);
                goto fail;
        }
        if (spec->partitions > 0 && (err = sc_feed_create_topics(f, errstr, errstr_size)))
                goto fail;
        if ((err = sc_feed_load(f, &data_rng, errstr, errstr_size)) ||
            (err = sc_feed_partition(f, &order_rng, errstr, errstr_size)))
                goto fail;
        f->buf_size = 64 + f->numel * 4;
        if (!(f->buf = malloc(f->buf_size))) {
                err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
                goto fail;
        }
        *fp = f;
        return SC_OK;
fail:
        sc_feed_destroy(f);
        return err;
}

void sc_feed_describe(const sc_feed_t *f, size_t *samples, size_t *numel, double *total_rate)
{
        double r = 0;
        for (int i = 0; i < f->n_topics; i++)
                r += f->topics[i].ft_rate;
        *samples = f->n;
        *numel = f->numel;
        *total_rate = r;
}

/* Encodes sample s into f->buf; returns its length. */
static size_t sc_feed_encode(sc_feed_t *f, uint32_t s)
{
        const uint8_t *px = f->pixels + (size_t)s * f->numel;
        sc_feed_format_t fmt = f->spec.format;
        char *p = f->buf;
        if (fmt == SC_FEED_RAW) {
                memcpy(p, px, f->numel);
                return f->numel;
        }
        if (fmt == SC_FEED_JSON)
                p += sprintf(p, "{\"label\":%d,\"pixels\":[", (int)f->labels[s]);
        else
                p += sprintf(p, "%d", (int)f->labels[s]);
        for (size_t i = 0; i < f->numel; i++) {
                if (fmt == SC_FEED_CSV || i > 0)
                        *p++ = ',';
                unsigned v = px[i];
                if (v >= 100)
                        *p++ = (char)('0' + v / 100);
                if (v >= 10)
                        *p++ = (char)('0' + v / 10 % 10);
                *p++ = (char)('0' + v % 10);
        }
        if (fmt == SC_FEED_JSON) {
                *p++ = ']';
                *p++ = '}';
        }
        return (size_t)(p - f->buf);
}

static void sc_feed_send_one(sc_feed_t *f, sc_feed_topic_t *t)
{
        char errstr[512], key[16];
        if (t->ft_cursor == t->ft_n) {
                sc_rng_shuffle_u32(&t->ft_rng, t->ft_order, t->ft_n);
                t->ft_cursor = 0;
        }
        uint32_t s = t->ft_order[t->ft_cursor++];
        size_t len = sc_feed_encode(f, s);
        int klen = snprintf(key, sizeof(key), "%d", (int)f->labels[s]);
        int raw = f->spec.format == SC_FEED_RAW;
        sc_err_t err =
            sc_kafka_produce(f->rk, t->ft_name, RD_KAFKA_PARTITION_UA, raw ? key : NULL,
                             raw ? (size_t)klen : 0, f->buf, len, raw ? "label" : NULL, key,
                             (size_t)klen, 0, &t->ft_dv, 1000, errstr, sizeof(errstr));
        if (err) {
                /* Not enqueued: counted as a failed delivery, reported once. */
                if (t->ft_dv.dv_failed == 0)
                        sc_feed_logf(f, 3, "%s", errstr);
                t->ft_dv.dv_failed++;
                if (t->ft_dv.dv_first_err == RD_KAFKA_RESP_ERR_NO_ERROR)
                        t->ft_dv.dv_first_err = RD_KAFKA_RESP_ERR__QUEUE_FULL;
        }
        t->ft_sent++;
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
        sc_feed_logf(f, 6,
                     "%6.1f s  sent %" PRId64 " (%.1f/s, target %.1f/s)  delivered %" PRId64
                     "  failed %" PRId64 "  per topic %.1f%%..%.1f%% of schedule",
                     elapsed, sent, (double)sent / elapsed, target, delivered, failed, lo, hi);
}

static int sc_feed_stopped(const sc_feed_t *f)
{
        return f->spec.stop && *f->spec.stop;
}

/* The send loop: topic i's k-th sample is due at t0 + k / rate_i; every tick
 * sends what is due (a batch of produce calls), then waits in rd_kafka_poll()
 * (serving delivery reports) until the next due time, at least 1 ms. */
double sc_feed_run(sc_feed_t *f)
{
        double t0 = sc_clock_mono(), last_progress = t0, now = t0, duration = f->spec.duration;
        for (;;) {
                now = sc_clock_mono();
                double el = now - t0;
                if (sc_feed_stopped(f) || (duration > 0 && el >= duration) ||
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
                                while (t->ft_sent < want && !sc_feed_stopped(f))
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
                if (f->spec.progress && now - last_progress >= 1.0) {
                        sc_feed_progress(f, el);
                        last_progress = now;
                }
                double wait = next_due - (sc_clock_mono() - t0);
                if (duration > 0 && duration - el < wait)
                        wait = duration - el;
                int ms = (int)ceil(wait * 1000.0);
                rd_kafka_poll(f->rk, ms < 1 ? 1 : ms > 100 ? 100 : ms);
        }
        return now - t0;
}

double sc_feed_flush(sc_feed_t *f)
{
        double t_flush = sc_clock_mono();
        for (int i = 0; i < 300 && rd_kafka_outq_len(f->rk) > 0 && !sc_kafka_fatal_check(NULL, 0);
             i++)
                rd_kafka_flush(f->rk, 100);
        rd_kafka_poll(f->rk, 0);
        return sc_clock_mono() - t_flush;
}

int sc_feed_topic_count(const sc_feed_t *f)
{
        return f->n_topics;
}

void sc_feed_topic_stats(const sc_feed_t *f, int i, sc_feed_topic_stats_t *st)
{
        const sc_feed_topic_t *t = &f->topics[i];
        /* Rate from the send times: the first sample goes at 0 s, so
         * (delivered - 1) intervals span 0 .. the last send. */
        int64_t dn = t->ft_dv.dv_delivered;
        st->name = t->ft_name;
        st->rate = t->ft_rate;
        st->sent = t->ft_sent;
        st->delivered = dn;
        st->failed = t->ft_dv.dv_failed;
        st->pending = t->ft_dv.dv_pending;
        /* One sample (or all at one instant) has no rate: NAN. */
        st->achieved = dn >= 2 && t->ft_t_last > 0 ? (double)(dn - 1) / t->ft_t_last : NAN;
        st->max_late = t->ft_max_late;
        st->first_err = t->ft_dv.dv_first_err;
}

void sc_feed_destroy(sc_feed_t *f)
{
        if (!f)
                return;
        if (f->rk) {
                /* Reports still reference the topics: purge and serve them
                 * before the topics are freed. */
                if (rd_kafka_outq_len(f->rk) > 0) {
                        rd_kafka_purge(f->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
                        rd_kafka_flush(f->rk, 5000);
                }
                rd_kafka_destroy(f->rk);
        }
        for (int i = 0; f->topics && i < f->n_topics; i++) {
                free(f->topics[i].ft_name);
                free(f->topics[i].ft_order);
        }
        free(f->topics);
        free(f->pixels);
        free(f->labels);
        free(f->buf);
        free(f);
}
