/* predictor.c — scores Kafka records with a model and produces one JSON
 * prediction per record, committing input offsets after the predictions
 * were acknowledged (see sc_predictor.h). */
#include "sc_mem.h"
#include "sc_file.h"
#include "sc_predictor.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "sc_batch.h"
#include "sc_ckpt.h"
#include "sc_job.h"
#include "sc_job_model.h"
#include "sc_kafka_admin.h"
#include "sc_kafka_model.h"
#include "sc_kafka_util.h"
#include "sc_model_out.h"
#include "sc_monitor.h"
#include "sc_nn.h"
#include "sc_registry.h"

#define SC_PRED_PENDING 64 /* batches produced and not yet acknowledged */
/* Bytes of a prediction besides its topic and probabilities: the JSON text
 * (95 bytes, the terminating NUL included) and the longest partition (11),
 * offset (20), label (11), true_label (11) and model_version (20). */
#define SC_PRED_JSON_ROW 190
#define SC_PRED_JSON_PROB 12 /* a probability (at most 11 bytes) and its comma */
/* "class" and "true_class": a class name escaped (6 bytes a byte at most) and its key */
#define SC_PRED_JSON_CLASS (2 * (6 * SC_VOCAB_ENTRY_MAX + 20))

/* One scored batch whose predictions await their delivery reports. The
 * delivery counter's address is each message's opaque: the ring never
 * moves its entries. */
typedef struct sc_pred_pending {
        uint64_t id; /* the source batch, acknowledged once dv has nothing pending */
        sc_kafka_delivery_t dv;
} sc_pred_pending_t;

/* A batch row's origin, for producing a batch in input order (the batcher
 * shuffles within a batch). */
typedef struct sc_pred_row {
        int stream;
        int32_t partition;
        int64_t offset;
        int row;
} sc_pred_row_t;

static int sc_pred_row_cmp(const void *a, const void *b)
{
        const sc_pred_row_t *x = a, *y = b;
        if (x->stream != y->stream)
                return x->stream < y->stream ? -1 : 1;
        if (x->partition != y->partition)
                return x->partition < y->partition ? -1 : 1;
        return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* What a prediction carries of its input record besides where it came
 * from: its key and headers (either NULL when the record had none). */
typedef struct sc_pred_origin {
        int64_t offset;
        void *key;
        size_t key_len;
        rd_kafka_headers_t *hdrs;
} sc_pred_origin_t;

/* The origins of one input partition's buffered records, in offset order
 * (the predictor's batches take a partition's records in order: no
 * shuffle, sorted rows). */
typedef struct sc_pred_origins {
        int stream;
        int32_t partition;
        sc_pred_origin_t *q; /* ring of cap */
        size_t head, n, cap;
} sc_pred_origins_t;

struct sc_predictor_s {
        sc_predictor_spec_t spec;
        sc_conf_t conf; /* the caller's, with the predictor's batching (kafka borrowed) */
        sc_model_t *model;
        size_t numel, nparams;
        int n_classes;
        sc_job_model_t *jm;
        uint64_t jm_stamp; /* sum of the shards' install counters when last installed */
        sc_kafka_source_t *src;
        rd_kafka_t *prod;
        sc_batch_t *batch;
        float *out;          /* (batch, n_classes) logits */
        sc_pred_row_t *rows; /* (batch) the batch's rows in input order */
        char *text;          /* one prediction's JSON (or Avro) */
        size_t text_cap;
        sc_registry_t *reg; /* spec.avro: the registry of the predictions' schema */
        int32_t avro_id;    /* ... and its id */
        sc_pred_pending_t pend[SC_PRED_PENDING];
        size_t head, n_pend;
        sc_predictor_stats_t st;
        double t_commit;
        sc_mem_trim_t trim;      /* handing freed memory back (sc_mem.h) */
        uint64_t nomem_seen;     /* the source's ks_nomem at the last poll */
        sc_pred_origins_t *orig; /* per input partition */
        size_t n_orig;
        sc_monitor_t *mon; /* the Prometheus endpoint; NULL without metrics.listen */
};

#define sc_pred_logf(p, level, ...) sc_logf((p)->spec.log, (p)->spec.log_opaque, level, __VA_ARGS__)

void sc_predictor_spec_defaults(sc_predictor_spec_t *spec)
{
        memset(spec, 0, sizeof(*spec));
        spec->batch = 1024;
}

/* The model: the checkpoint's parameters and state, or the job's newest
 * model (its initial one until J.bcast has records). */
static sc_err_t sc_pred_model(sc_predictor_t *p, char *errstr, size_t errstr_size)
{
        const sc_conf_t *conf = &p->conf;
        sc_err_t err;
        if ((err = sc_job_initial(conf, &p->model, errstr, errstr_size)))
                return err;
        if (sc_model_spec(p->model)->loss != SC_LOSS_SOFTMAX_XENT)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: $.model.loss: predictions need a softmax_xent classifier",
                               conf->origin);
        p->numel = sc_shape_numel(conf->model.input);
        p->nparams = sc_model_nparams(p->model);
        p->n_classes = (int)sc_shape_numel(sc_model_output_shape(p->model));
        if (!p->spec.follow_job) {
                sc_ckpt_meta_t meta;
                int has_state = 0;
                if ((err = sc_ckpt_load(p->spec.checkpoint, p->model, NULL, &meta, &has_state,
                                        errstr, errstr_size)))
                        return err;
                if (sc_model_nstate(p->model) && !has_state)
                        sc_pred_logf(p, 4,
                                     "%s has no statistics for its batchnorm or standardize "
                                     "layers; predicting with "
                                     "mean 0, variance 1",
                                     p->spec.checkpoint);
                p->st.model_version = meta.step;
                return SC_OK;
        }
        if (!conf->job.name[0])
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: --follow-job needs a job section (job.name)", conf->origin);
        if (sc_model_nstate(p->model))
                sc_pred_logf(
                    p, 4,
                    "J.bcast carries no batchnorm or standardize statistics: predicting with "
                    "mean 0, variance 1 (a checkpoint keeps them)");
        return sc_job_model_new(&p->jm, conf, sc_model_params(p->model), p->nparams, errstr,
                                errstr_size);
}

/* Installs the job's model when a shard changed since the last install
 * (between batches only). */
static void sc_pred_follow(sc_predictor_t *p)
{
        uint64_t stamp = 0;
        for (int s = 0; s < sc_job_model_shards(p->jm); s++)
                stamp += sc_job_model_stamp(p->jm, s);
        if (stamp == p->jm_stamp)
                return;
        sc_model_out_info_t info;
        sc_model_out_assemble(p->model, p->jm, &info);
        if (p->jm_stamp)
                p->st.model_swaps++;
        p->jm_stamp = stamp;
        p->st.model_version = info.min_version;
}

static sc_err_t sc_pred_producer(sc_predictor_t *p, char *errstr, size_t errstr_size)
{
        char why[512];
        rd_kafka_conf_t *kc = NULL;
        sc_err_t err;
        if ((err = sc_kafka_conf_from_json(&kc, (const json_t *)p->conf.kafka, "$.kafka", errstr,
                                           errstr_size)))
                return err;
        sc_kafka_conf_log_bridge(kc);
        const char *const kv[][2] = {
            {"enable.idempotence", "true"}, {"linger.ms", "5"}, {"client.id", "scadles-predict"}};
        for (size_t i = 0; !err && i < sizeof(kv) / sizeof(kv[0]); i++)
                err = sc_kafka_conf_set(kc, kv[i][0], kv[i][1], "predictions producer", errstr,
                                        errstr_size);
        if (err) {
                rd_kafka_conf_destroy(kc);
                return err;
        }
        sc_kafka_conf_delivery(kc);
        if (!(p->prod = rd_kafka_new(RD_KAFKA_PRODUCER, kc, why, sizeof(why)))) {
                rd_kafka_conf_destroy(kc);
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "predictions producer: %s", why);
        }
        /* job.replication: -1 (the default) is the broker's default factor */
        sc_kafka_topic_spec_t ts = {.partitions = 1, .replication = p->conf.job.replication};
        snprintf(ts.name, sizeof(ts.name), "%s", p->spec.out_topic);
        return sc_kafka_admin_ensure(p->prod, &ts, 1, 10000, NULL, errstr, errstr_size);
}

static void sc_pred_origin_free(sc_pred_origin_t o)
{
        free(o.key);
        if (o.hdrs)
                rd_kafka_headers_destroy(o.hdrs);
}

static sc_pred_origin_t sc_pred_origin_pop(sc_pred_origins_t *o)
{
        sc_pred_origin_t e = o->q[o->head];
        o->head = (o->head + 1) % o->cap;
        o->n--;
        return e;
}

/* The origins of stream's partition; NULL when new and out of memory. */
static sc_pred_origins_t *sc_pred_origins(sc_predictor_t *p, int stream, int32_t partition)
{
        for (size_t i = 0; i < p->n_orig; i++)
                if (p->orig[i].stream == stream && p->orig[i].partition == partition)
                        return &p->orig[i];
        sc_pred_origins_t *a = realloc(p->orig, (p->n_orig + 1) * sizeof(*a));
        if (!a)
                return NULL;
        p->orig = a;
        a[p->n_orig] = (sc_pred_origins_t){.stream = stream, .partition = partition};
        return &a[p->n_orig++];
}

/* The source's record hook: keeps the key and headers of every record
 * buffered for scoring. A record at or below the partition's newest one
 * is a re-read (after a revocation): what was kept before is dropped. A
 * record whose origin cannot be kept (out of memory) gets the default key
 * and no headers. */
static void sc_pred_keep_origin(void *opaque, int stream, const rd_kafka_message_t *m)
{
        sc_predictor_t *p = opaque;
        sc_pred_origins_t *o = sc_pred_origins(p, stream, m->partition);
        rd_kafka_headers_t *h = NULL;
        if (!o)
                return;
        if (o->n && o->q[(o->head + o->n - 1) % o->cap].offset >= m->offset)
                while (o->n)
                        sc_pred_origin_free(sc_pred_origin_pop(o));
        if (o->n == o->cap) {
                size_t cap = o->cap ? 2 * o->cap : 64;
                sc_pred_origin_t *q = malloc(cap * sizeof(*q));
                if (!q)
                        return;
                for (size_t k = 0; k < o->n; k++)
                        q[k] = o->q[(o->head + k) % o->cap];
                free(o->q);
                o->q = q;
                o->cap = cap;
                o->head = 0;
        }
        sc_pred_origin_t e = {m->offset, NULL, 0, NULL};
        if (m->key && m->key_len && (e.key = malloc(m->key_len))) {
                memcpy(e.key, m->key, m->key_len);
                e.key_len = m->key_len;
        }
        if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR && h)
                e.hdrs = rd_kafka_headers_copy(h);
        o->q[(o->head + o->n++) % o->cap] = e;
}

/* The origin of stream's partition's record at offset (what was kept of
 * the records before it is dropped: they were not scored here); 0 when
 * none was kept. */
static int sc_pred_take_origin(sc_predictor_t *p, int stream, int32_t partition, int64_t offset,
                               sc_pred_origin_t *e)
{
        sc_pred_origins_t *o = NULL;
        for (size_t i = 0; i < p->n_orig && !o; i++)
                if (p->orig[i].stream == stream && p->orig[i].partition == partition)
                        o = &p->orig[i];
        while (o && o->n && o->q[o->head].offset < offset)
                sc_pred_origin_free(sc_pred_origin_pop(o));
        if (!o || !o->n || o->q[o->head].offset != offset)
                return 0;
        *e = sc_pred_origin_pop(o);
        return 1;
}

/* Avro predictions: their schema registered under "<out>-value". */
static sc_err_t sc_pred_avro_schema(sc_predictor_t *p, char *errstr, size_t errstr_size)
{
        const sc_conf_source_t *s = &p->conf.source;
        char why[512], subject[SC_CONF_TOPIC_MAX + 8];
        if (!s->registry_url[0])
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: $.source.schema_registry.url: Avro predictions register "
                               "their schema there: give the registry",
                               p->conf.origin);
        sc_registry_spec_t rs = {.url = s->registry_url,
                                 .auth_file = s->registry_auth_file,
                                 .ca = s->registry_ca,
                                 .timeout = s->registry_timeout};
        sc_err_t err = sc_registry_new(&p->reg, &rs, why, sizeof(why));
        if (err)
                return sc_errf(err, errstr, errstr_size, "%s: %s", p->conf.origin, why);
        snprintf(subject, sizeof(subject), "%s-value", p->spec.out_topic);
        if ((err = sc_registry_register(p->reg, subject, SC_PREDICTOR_AVRO_SCHEMA, &p->avro_id, why,
                                        sizeof(why))))
                return sc_errf(err, errstr, errstr_size, "--avro: %s", why);
        sc_pred_logf(p, 6, "predictions in Avro: schema id %d, subject %s", p->avro_id, subject);
        return SC_OK;
}

sc_err_t sc_predictor_new(sc_predictor_t **pp, const sc_predictor_spec_t *spec, char *errstr,
                          size_t errstr_size)
{
        sc_err_t err;
        *pp = NULL;
        if (!spec->conf || !spec->out_topic || !spec->out_topic[0] ||
            strlen(spec->out_topic) >= SC_KAFKA_ADMIN_NAME_MAX)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "predictor: a configuration and an output topic are needed");
        if (!spec->follow_job == !(spec->checkpoint && spec->checkpoint[0]))
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "predictor: give a checkpoint or follow the job, not both");
        if (spec->batch < 1 || spec->batch > SC_BATCH_MAX)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "predictor: batch %d outside 1..%d", spec->batch, SC_BATCH_MAX);
        sc_predictor_t *p = calloc(1, sizeof(*p));
        if (!p)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        p->spec = *spec;
        p->conf = *spec->conf;
        p->st.t_last_record = p->st.t_first_record = p->st.t_last_ack = -1;
        /* Every buffered record is scored as soon as it is there, up to
         * batch at a time: rate batches over a vanishing window, no
         * shuffle, and persistence (a full buffer pauses its partitions). */
        p->conf.worker.batch.mode = SC_BATCH_RATE;
        p->conf.worker.batch.b_min = 1;
        p->conf.worker.batch.b_max = spec->batch;
        p->conf.worker.batch.window = 1e-6;
        p->conf.worker.batch.shuffle = 0;
        p->conf.streams.buffer.policy = SC_STREAM_PERSIST;
        /* A ring of one batch per topic, reused while it is warm in the
         * caches (the backlog waits in Kafka, its partitions paused). */
        p->conf.streams.buffer.cap = (size_t)(spec->batch < 256 ? 256 : spec->batch);
        if ((err = sc_pred_model(p, errstr, errstr_size)) ||
            (err = sc_batch_new(&p->batch, spec->batch, p->numel)) ||
            !(p->out = malloc((size_t)spec->batch * (size_t)p->n_classes * sizeof(float))) ||
            !(p->rows = malloc((size_t)spec->batch * sizeof(*p->rows))) ||
            !(p->text =
                  malloc(p->text_cap = SC_PRED_JSON_ROW + SC_CONF_TOPIC_MAX + SC_PRED_JSON_CLASS +
                                       (size_t)p->n_classes * SC_PRED_JSON_PROB))) {
                if (!err)
                        err = sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
                goto fail;
        }
        if (spec->avro && (err = sc_pred_avro_schema(p, errstr, errstr_size)))
                goto fail;
        if ((err = sc_pred_producer(p, errstr, errstr_size)) ||
            (err =
                 sc_kafka_source_new(&p->src, &p->conf, p->numel, p->n_classes, p->conf.train.seed,
                                     spec->log, spec->log_opaque, errstr, errstr_size)))
                goto fail;
        sc_kafka_source_on_record(p->src, sc_pred_keep_origin, p);
        if ((err = sc_monitor_new(&p->mon, spec->conf, "predict", spec->log, spec->log_opaque,
                                  errstr, errstr_size)))
                goto fail;
        *pp = p;
        return SC_OK;
fail:
        sc_predictor_destroy(p);
        return err;
}

void sc_predictor_destroy(sc_predictor_t *p)
{
        if (!p)
                return;
        sc_monitor_destroy(p->mon);
        sc_kafka_source_destroy(p->src);
        if (p->prod) {
                rd_kafka_flush(p->prod, 10000);
                rd_kafka_destroy(p->prod);
        }
        sc_job_model_destroy(p->jm);
        sc_model_destroy(p->model);
        sc_batch_destroy(p->batch);
        free(p->out);
        free(p->rows);
        free(p->text);
        sc_registry_destroy(p->reg);
        for (size_t i = 0; i < p->n_orig; i++) {
                sc_pred_origins_t *o = &p->orig[i];
                while (o->n)
                        sc_pred_origin_free(sc_pred_origin_pop(o));
                free(o->q);
        }
        free(p->orig);
        free(p);
}

/* A snapshot of the predictor's Prometheus families when one is due
 * (docs/OPERATIONS.md). */
static void sc_pred_metrics(sc_predictor_t *p, double t)
{
        if (!sc_monitor_due(p->mon, t))
                return;
        sc_stream_stats_t sum;
        sc_prom_t *m = sc_monitor_begin(p->mon, t);
        sc_monitor_reach(p->mon, t, sc_kafka_source_reachable(p->src));
        sc_kafka_source_totals(p->src, &sum);
        sc_prom_one(m, "scadles_records_consumed_total", "counter",
                    "Records read and counted (decoded or malformed).", (double)sum.consumed);
        sc_monitor_rejected(m, &sum.faults);
        sc_monitor_source(m, p->src);
        sc_prom_one(m, "scadles_predictions_total", "counter", "Predictions produced.",
                    (double)p->st.predicted);
        sc_prom_one(m, "scadles_predictions_acked_total", "counter",
                    "Predictions acknowledged by the broker.", (double)p->st.acked);
        sc_prom_one(m, "scadles_prediction_batches_total", "counter", "Batches scored.",
                    (double)p->st.batches);
        sc_prom_one(m, "scadles_model_version", "gauge", "Version of the model scoring now.",
                    (double)p->st.model_version);
        sc_prom_one(m, "scadles_model_swaps_total", "counter",
                    "Models installed from the job after the first.", (double)p->st.model_swaps);
        sc_monitor_publish(p->mon, t, sc_monitor_finite(sc_model_params(p->model), p->nparams));
}

/* Records waiting to be scored: buffered, or held for room in a stream (a
 * batch taken is scored at once and stays inflight until acknowledged). */
static int sc_pred_has_records(const sc_predictor_t *p)
{
        sc_stream_stats_t sum;
        sc_kafka_source_totals(p->src, &sum);
        return sum.buffered || sc_kafka_source_stats(p->src)->ks_held;
}

/* Writes v (a probability: finite, in [0, 1]) with 6 significant digits,
 * like "%.6g" but without printf's cost (a tenth of the processor's time at
 * this rate); returns its length (at most 11: "0.000123457", "1.23457e-05"). */
static int sc_pred_prob(char *s, float v)
{
        static const double pow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10};
        if (!(v > 0) || !(v <= 1))
                return (int)(memcpy(s, v > 1 ? "1" : "0", 1), 1);
        int e = (int)floor(log10((double)v)); /* v = m * 10^e, 1 <= m < 10, e in [-45, 0] */
        int sci = e < -4;
        int d = sci ? 5 : 5 - e; /* digits after the point, <= 9 */
        double m = sci ? (double)v * pow(10.0, -e) : (double)v;
        uint64_t unit = (uint64_t)pow10[d];
        uint64_t q = (uint64_t)llround(m * pow10[d]); /* the digits, as an integer */
        if (sci && q >= 10 * unit) {                  /* m rounded up to 10 */
                q /= 10;
                e++;
        }
        int n = 0;
        s[n++] = (char)('0' + q / unit); /* < 10: v <= 1, or m < 10 */
        uint64_t frac = q % unit;
        if (frac) {
                char digits[10];
                for (int i = d - 1; i >= 0; i--, frac /= 10)
                        digits[i] = (char)('0' + frac % 10);
                int k = d;
                while (digits[k - 1] == '0')
                        k--;
                s[n++] = '.';
                memcpy(s + n, digits, (size_t)k);
                n += k;
        }
        if (sci) {
                s[n++] = 'e';
                s[n++] = '-';
                s[n++] = (char)('0' + (-e) / 10);
                s[n++] = (char)('0' + (-e) % 10);
        }
        return n;
}

/* Writes ,"key":"name" (name escaped as a JSON string) at s; its length. */
static size_t sc_pred_class(char *s, const char *key, const char *name)
{
        static const char hex[] = "0123456789abcdef";
        size_t n = (size_t)sprintf(s, ",\"%s\":\"", key);
        for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
                if (*c == '"' || *c == '\\') {
                        s[n++] = '\\';
                        s[n++] = (char)*c;
                } else if (*c < 0x20 || *c == 0x7f) {
                        memcpy(s + n, "\\u00", 4);
                        s[n + 4] = hex[*c >> 4];
                        s[n + 5] = hex[*c & 15];
                        n += 6;
                } else {
                        s[n++] = (char)*c;
                }
        }
        s[n++] = '"';
        return n;
}

/* Writes one prediction's JSON for row r of the batch into p->text (names:
 * the topic's class names, or NULL); returns its length. */
static size_t sc_pred_json(sc_predictor_t *p, int r, const char *topic, const sc_vocab_t *names,
                           int *label)
{
        float *z = p->out + (size_t)r * (size_t)p->n_classes;
        const sc_stream_ref_t *ref = &p->batch->refs[r];
        int32_t truth = p->batch->labels[r];
        int arg = sc_nn_softmax(z, p->n_classes, z); /* logits -> probabilities */
        char *s = p->text, *end = p->text + p->text_cap;
        s += snprintf(s, (size_t)(end - s),
                      "{\"topic\":\"%s\",\"partition\":%" PRId32 ",\"offset\":%" PRId64
                      ",\"label\":%d",
                      topic, ref->partition, ref->offset, arg);
        if (sc_vocab_name(names, (size_t)arg))
                s += sc_pred_class(s, "class", sc_vocab_name(names, (size_t)arg));
        if (truth >= 0) { /* the record's own label (not --unlabelled) */
                s += snprintf(s, (size_t)(end - s), ",\"true_label\":%" PRId32, truth);
                if (sc_vocab_name(names, (size_t)truth))
                        s += sc_pred_class(s, "true_class", sc_vocab_name(names, (size_t)truth));
        }
        s += snprintf(s, (size_t)(end - s), ",\"probabilities\":[");
        for (int j = 0; j < p->n_classes; j++) {
                if (j)
                        *s++ = ',';
                s += sc_pred_prob(s, z[j]);
        }
        s +=
            snprintf(s, (size_t)(end - s), "],\"model_version\":%" PRIu64 "}", p->st.model_version);
        *label = arg;
        return (size_t)(s - p->text);
}

/* Avro's binary encoding: a zig-zag varint; a string with its length. */
static char *sc_pred_avro_long(char *s, int64_t v)
{
        uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
        while (u >= 0x80) {
                *s++ = (char)(u | 0x80);
                u >>= 7;
        }
        *s++ = (char)u;
        return s;
}

static char *sc_pred_avro_str(char *s, const char *str)
{
        size_t n = strlen(str);
        s = sc_pred_avro_long(s, (int64_t)n);
        memcpy(s, str, n);
        return s + n;
}

/* A nullable string: the null branch (0), or the string's (1). */
static char *sc_pred_avro_opt(char *s, const char *str)
{
        if (!str)
                return sc_pred_avro_long(s, 0);
        return sc_pred_avro_str(sc_pred_avro_long(s, 1), str);
}

/* One prediction as Avro framed for the registry (SC_PREDICTOR_AVRO_SCHEMA)
 * into p->text; returns its length. */
static size_t sc_pred_avro(sc_predictor_t *p, int r, const char *topic, const sc_vocab_t *names,
                           int *label)
{
        float *z = p->out + (size_t)r * (size_t)p->n_classes;
        const sc_stream_ref_t *ref = &p->batch->refs[r];
        int32_t truth = p->batch->labels[r];
        int arg = sc_nn_softmax(z, p->n_classes, z);
        char *s = p->text;
        *s++ = 0;
        for (int k = 3; k >= 0; k--)
                *s++ = (char)((uint32_t)p->avro_id >> (8 * k));
        s = sc_pred_avro_str(s, topic);
        s = sc_pred_avro_long(s, ref->partition);
        s = sc_pred_avro_long(s, ref->offset);
        s = sc_pred_avro_long(s, arg);
        s = sc_pred_avro_opt(s, sc_vocab_name(names, (size_t)arg));
        if (truth >= 0) {
                s = sc_pred_avro_long(sc_pred_avro_long(s, 1), truth);
                s = sc_pred_avro_opt(s, sc_vocab_name(names, (size_t)truth));
        } else {
                s = sc_pred_avro_long(sc_pred_avro_long(s, 0), 0);
        }
        s = sc_pred_avro_long(s, p->n_classes);
        memcpy(s, z, (size_t)p->n_classes * sizeof(float)); /* little-endian floats */
        s += (size_t)p->n_classes * sizeof(float);
        s = sc_pred_avro_long(s, 0);
        s = sc_pred_avro_long(s, (int64_t)p->st.model_version);
        *label = arg;
        return (size_t)(s - p->text);
}

/* Scores the batch just taken and produces its predictions into the next
 * pending slot. */
static sc_err_t sc_pred_score(sc_predictor_t *p, char *errstr, size_t errstr_size)
{
        sc_batch_t *b = p->batch;
        sc_pred_pending_t *pe = &p->pend[(p->head + p->n_pend) % SC_PRED_PENDING];
        char key[SC_CONF_TOPIC_MAX + 16];
        float l = sc_model_eval_batch(p->model, b->x, NULL, NULL, b->n, NULL, p->out);
        if (isnan(l))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size,
                               "scoring a batch of %d records failed (out of memory)", b->n);
        pe->id = b->id;
        sc_kafka_delivery_init(&pe->dv);
        p->n_pend++;
        p->st.batches++;
        for (int r = 0; r < b->n; r++)
                p->rows[r] =
                    (sc_pred_row_t){b->streams[r], b->refs[r].partition, b->refs[r].offset, r};
        qsort(p->rows, (size_t)b->n, sizeof(*p->rows), sc_pred_row_cmp);
        const char *names_of = NULL; /* the topic whose class names are in names */
        const sc_vocab_t *names = NULL;
        for (int i = 0; i < b->n; i++) {
                int r = p->rows[i].row;
                const char *topic = sc_kafka_source_stream(p->src, b->streams[r], NULL);
                int label;
                if (topic != names_of) { /* rows come sorted by stream */
                        names = sc_ks_topic_decode(&p->conf, topic)->labels;
                        names_of = topic;
                }
                size_t len = p->spec.avro ? sc_pred_avro(p, r, topic, names, &label)
                                          : sc_pred_json(p, r, topic, names, &label);
                /* The input record's key and headers; "<topic>:<partition>"
                 * for a record without a key. */
                sc_pred_origin_t o = {0, NULL, 0, NULL};
                sc_pred_take_origin(p, b->streams[r], b->refs[r].partition, b->refs[r].offset, &o);
                const void *k = o.key;
                size_t klen = o.key_len;
                if (!k) {
                        k = key;
                        klen = (size_t)snprintf(key, sizeof(key), "%s:%" PRId32, topic,
                                                b->refs[r].partition);
                }
                sc_err_t err = sc_kafka_produce_headers(
                    p->prod, p->spec.out_topic, RD_KAFKA_PARTITION_UA, k, klen, p->text, len,
                    o.hdrs, &pe->dv, 30000, errstr, errstr_size);
                if (!err)
                        o.hdrs = NULL; /* librdkafka's now */
                sc_pred_origin_free(o);
                if (err)
                        return err;
                p->st.predicted++;
        }
        return SC_OK;
}

/* Acknowledges the oldest batches whose predictions were all delivered;
 * SC_ERR_IO when one failed. */
static sc_err_t sc_pred_settle(sc_predictor_t *p, double t, char *errstr, size_t errstr_size)
{
        rd_kafka_poll(p->prod, 0);
        while (p->n_pend) {
                sc_pred_pending_t *pe = &p->pend[p->head];
                if (pe->dv.dv_failed)
                        return sc_errf(SC_ERR_IO, errstr, errstr_size,
                                       "%s: %" PRId64 " prediction(s) not delivered: %s",
                                       p->spec.out_topic, pe->dv.dv_failed,
                                       rd_kafka_err2str(pe->dv.dv_first_err));
                if (pe->dv.dv_pending)
                        break;
                sc_err_t err = sc_kafka_source_ack(p->src, pe->id, errstr, errstr_size);
                if (err)
                        return err;
                p->st.acked += (uint64_t)pe->dv.dv_delivered;
                p->st.t_last_ack = t;
                p->head = (p->head + 1) % SC_PRED_PENDING;
                p->n_pend--;
        }
        return SC_OK;
}

/* Scores every ready batch while there is a free pending slot. */
static sc_err_t sc_pred_drain(sc_predictor_t *p, double t, char *errstr, size_t errstr_size)
{
        sc_batcher_t *bt = sc_kafka_source_batcher(p->src);
        sc_err_t err;
        if (p->jm && !sc_job_model_ready(p->jm))
                return SC_OK; /* the newest model first */
        while (bt && sc_batcher_ready(bt, t, NULL)) {
                if (p->n_pend == SC_PRED_PENDING) {
                        rd_kafka_poll(p->prod, 5); /* every slot awaits the broker */
                        if ((err = sc_pred_settle(p, t, errstr, errstr_size)) ||
                            p->n_pend == SC_PRED_PENDING)
                                return err;
                }
                if ((err = sc_batcher_take(bt, t, p->batch, errstr, errstr_size)))
                        return err == SC_ERR_AGAIN ? SC_OK : err;
                if ((err = sc_pred_score(p, errstr, errstr_size)))
                        return err;
        }
        return SC_OK;
}

sc_err_t sc_predictor_poll(sc_predictor_t *p, double t, int timeout_ms, char *errstr,
                           size_t errstr_size)
{
        sc_err_t err;
        size_t n = 0;
        /* Records to score: no waiting, unless the source held one for want
         * of memory for its row at the last poll (no spinning on it). Only
         * deliveries outstanding: short waits for records, the reports are
         * served after each. */
        uint64_t nomem = sc_kafka_source_stats(p->src)->ks_nomem;
        int short_of_memory = nomem != p->nomem_seen;
        p->nomem_seen = nomem;
        /* Records held for a Schema Registry that is down wait with it. */
        int for_registry = sc_kafka_source_registry_waiting(p->src);
        int wait = sc_pred_has_records(p) && !short_of_memory && !for_registry ? 0
                   : (p->n_pend || short_of_memory) && timeout_ms > 5          ? 5
                                                                               : timeout_ms;
        if ((err = sc_kafka_source_poll(p->src, t, wait, 4 * (size_t)p->spec.batch, &n, errstr,
                                        errstr_size)))
                return err;
        if (n) {
                p->st.t_last_record = t;
                if (p->st.t_first_record < 0)
                        p->st.t_first_record = t;
        }
        if (p->jm) {
                if ((err = sc_job_model_poll(p->jm, 0, NULL, errstr, errstr_size)))
                        return err;
                if (sc_job_model_ready(p->jm))
                        sc_pred_follow(p);
        }
        if ((err = sc_pred_drain(p, t, errstr, errstr_size)) ||
            (err = sc_pred_settle(p, t, errstr, errstr_size)))
                return err;
        if (t - p->t_commit >= p->conf.worker.commit_interval) {
                p->t_commit = t;
                if ((err = sc_kafka_source_commit(p->src, 0, errstr, errstr_size)))
                        sc_pred_logf(p, 4, "commit: %s", errstr);
        }
        if (sc_mem_look_due(&p->trim, t)) {
                sc_stream_stats_t s;
                sc_kafka_source_totals(p->src, &s);
                sc_mem_give_back(&p->trim, s.chunks_freed, t);
        }
        sc_pred_metrics(p, t);
        return SC_OK;
}

sc_err_t sc_predictor_finish(sc_predictor_t *p, double t, int timeout_ms, char *errstr,
                             size_t errstr_size)
{
        sc_err_t err = SC_OK;
        sc_batcher_t *bt = sc_kafka_source_batcher(p->src);
        if (bt)
                sc_batcher_drain(bt, 1);
        /* Everything buffered is scored; when every pending slot is taken,
         * the deliveries are waited for first. */
        while (!(err = sc_pred_drain(p, t, errstr, errstr_size)) && bt &&
               sc_batcher_ready(bt, t, NULL) && (!p->jm || sc_job_model_ready(p->jm))) {
                rd_kafka_flush(p->prod, timeout_ms);
                if ((err = sc_pred_settle(p, t, errstr, errstr_size)) ||
                    p->n_pend == SC_PRED_PENDING)
                        break;
        }
        if (!err) {
                rd_kafka_flush(p->prod, timeout_ms);
                err = sc_pred_settle(p, t, errstr, errstr_size);
        }
        if (!err && p->n_pend)
                err = sc_errf(SC_ERR_IO, errstr, errstr_size,
                              "%s: predictions of %zu batch(es) unacknowledged after %d ms",
                              p->spec.out_topic, p->n_pend, timeout_ms);
        char why[512];
        sc_err_t e2 = sc_kafka_source_finish(p->src, timeout_ms, why, sizeof(why));
        if (e2 && !err) {
                snprintf(errstr, errstr_size, "%s", why);
                err = e2;
        }
        return err;
}

void sc_predictor_stats(const sc_predictor_t *p, sc_predictor_stats_t *st)
{
        sc_stream_stats_t sum;
        *st = p->st;
        sc_kafka_source_totals(p->src, &sum);
        st->consumed = sum.consumed;
        st->bad = sum.rejected;
}

int sc_predictor_idle(const sc_predictor_t *p)
{
        return p->n_pend == 0 && !sc_pred_has_records(p);
}

sc_kafka_source_t *sc_predictor_source(sc_predictor_t *p)
{
        return p->src;
}

json_t *sc_predictor_summary(sc_predictor_t *p, int timeout_ms)
{
        char why[512];
        sc_stream_stats_t sum;
        sc_kafka_source_totals(p->src, &sum);
        const sc_kafka_source_stats_t *ks = sc_kafka_source_stats(p->src);
        int ok = sc_kafka_source_check(p->src, why, sizeof(why)) == SC_OK;
        json_t *j =
            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b}",
                      "consumed", (json_int_t)sum.consumed, "predicted",
                      (json_int_t)p->st.predicted, "acknowledged", (json_int_t)p->st.acked, "bad",
                      (json_int_t)sum.rejected, "dead_letters", (json_int_t)ks->ks_dead_letter,
                      "dead_letters_failed", (json_int_t)ks->ks_dead_letter_failed, "returned",
                      (json_int_t)sum.revoked, "buffered", (json_int_t)sum.buffered, "inflight",
                      (json_int_t)sum.inflight, "lost", (json_int_t)ks->ks_lost, "batches",
                      (json_int_t)p->st.batches, "model_version", (json_int_t)p->st.model_version,
                      "model_swaps", (json_int_t)p->st.model_swaps, "identity_ok", ok);
        if (!j)
                return NULL;
        if (!ok)
                json_object_set_new(j, "identity_error", json_string(why));
        double busy = p->st.t_last_ack - p->st.t_first_record;
        if (p->st.t_first_record >= 0 && p->st.t_last_ack >= 0 && busy > 0) {
                json_object_set_new(j, "busy_s", json_real(busy));
                json_object_set_new(j, "records_per_s", json_real((double)p->st.acked / busy));
        }
        json_t *reg = sc_kafka_source_registry_json(p->src);
        if (reg)
                json_object_set_new(j, "schema_registry", reg);
        json_t *parts = sc_kafka_source_partitions(p->src, timeout_ms);
        json_object_set_new(j, "partitions", parts ? parts : json_array());
        return j;
}
