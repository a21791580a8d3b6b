/* eval_set.c — loads the held-out set named by the eval section (a file of
 * lines, IDX files, or a topic to its end) or Fashion-MNIST's test set
 * (sc_eval_set.h). */
#include "sc_eval_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "sc_file.h"
#include "sc_idx.h"
#include "sc_kafka_source.h"
#include "sc_kafka_util.h"

/* Largest held-out file read (bytes). */
#define SC_ES_FILE_MAX ((size_t)1 << 36)

#define SC_ES_TOPIC_TIMEOUT_MS 30000
#define SC_ES_TOPIC_MAX_BYTES (4.0 * 1024 * 1024 * 1024) /* features of a topic's held-out set */

int sc_eval_set_configured(const sc_conf_t *conf)
{
        return conf->eval.file[0] || conf->eval.topic[0];
}

void sc_eval_set_decoder(const sc_conf_t *conf, size_t numel, int n_classes, sc_decode_spec_t *ds)
{
        const char *name = conf->eval.decoder[0] ? conf->eval.decoder : conf->eval.topic;
        sc_ks_decode_spec(conf, name, numel, n_classes, ds);
}

static int sc_es_blank(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
                        return 0;
        return 1;
}

/* 1 if none of the columns of the csv line [p, p + n) is a number (a
 * header line: names). */
static int sc_es_csv_names(const char *p, size_t n, char delimiter)
{
        const char *end = p + n;
        while (p <= end) {
                const char *e = memchr(p, delimiter, (size_t)(end - p));
                if (!e)
                        e = end;
                const char *a = p, *b = e;
                while (b > a && (b[-1] == '\r' || b[-1] == ' ' || b[-1] == '\t'))
                        b--;
                char num[64], *stop;
                size_t len = (size_t)(b - a);
                if (len == 0)
                        return 0;
                if (len < sizeof(num)) {
                        memcpy(num, a, len);
                        num[len] = '\0';
                        (void)strtod(num, &stop);
                        if (stop == num + len)
                                return 0;
                }
                p = e + 1;
        }
        return 1;
}

/* Decodes every non-blank line of text with dspec into ds. */
static sc_err_t sc_es_lines(const char *path, const char *text, size_t len,
                            const sc_decode_spec_t *dspec, const sc_conf_t *conf, sc_dataset_t *ds,
                            char *errstr, size_t errstr_size)
{
        size_t lines = 1, n = 0, numel = dspec->numel;
        char why[512];
        for (size_t i = 0; i < len; i++)
                lines += text[i] == '\n';
        sc_err_t err =
            sc_dataset_alloc(ds, lines, conf->model.input, dspec->n_classes, errstr, errstr_size);
        if (err)
                return err;
        size_t lineno = 0;
        for (const char *p = text, *end = text + len; p < end;) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
                lineno++;
                if (!sc_es_blank(p, ll)) {
                        sc_record_t rec = {.value = p, .value_size = ll};
                        sc_decode_fault_t f = sc_decode_record(dspec, &rec, ds->x + n * numel,
                                                               ds->y + n, why, sizeof(why));
                        if (f != SC_DECODE_OK && dspec->format == SC_DECODE_CSV && n == 0 &&
                            lineno == 1 && sc_es_csv_names(p, ll, dspec->delimiter)) {
                                /* a header line */
                        } else if (f != SC_DECODE_OK) {
                                sc_dataset_free(ds);
                                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                                               "%s:%zu: %s record (%s): %s", path, lineno,
                                               sc_decode_format_name(dspec->format),
                                               sc_decode_fault_name(f), why);
                        } else {
                                n++;
                        }
                }
                p += ll + 1;
        }
        if (n == 0) {
                sc_dataset_free(ds);
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size, "%s: no records", path);
        }
        ds->n = n;
        return SC_OK;
}

static sc_err_t sc_es_file(const sc_conf_t *conf, const sc_decode_spec_t *dspec, sc_dataset_t *ds,
                           char *errstr, size_t errstr_size)
{
        const sc_conf_eval_t *e = &conf->eval;
        char *text = NULL;
        size_t len = 0;
        sc_err_t err = sc_file_read_all(e->file, SC_ES_FILE_MAX, &text, &len, errstr, errstr_size);
        if (err)
                return err;
        int format = e->format;
        if (format == SC_CONF_EVAL_AUTO) {
                const unsigned char *u = (const unsigned char *)text;
                int idx = len >= 4 && ((u[0] == 0x1f && u[1] == 0x8b) ||
                                       (u[0] == 0 && u[1] == 0 && u[2] == 0x08));
                format = idx                               ? SC_CONF_EVAL_IDX
                         : dspec->format == SC_DECODE_CSV  ? SC_CONF_EVAL_CSV
                         : dspec->format == SC_DECODE_JSON ? SC_CONF_EVAL_JSON
                         : dspec->format == SC_DECODE_AVRO ? SC_CONF_EVAL_JSON
                                                           : -1;
        }
        if (format == -1) {
                free(text);
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: $.eval.format: %s is not IDX and the decoder's format is raw; "
                               "set eval.format (csv, json or idx)",
                               conf->origin, e->file);
        }
        if (format == SC_CONF_EVAL_IDX) {
                free(text);
                if (!e->labels[0])
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "%s: $.eval.labels: %s is IDX and needs its labels file",
                                       conf->origin, e->file);
                err = sc_idx_load_norm(ds, e->file, e->labels, dspec->n_classes, dspec->scale,
                                       dspec->mean, dspec->std, errstr, errstr_size);
                if (!err && sc_shape_numel(ds->shape) != dspec->numel) {
                        err =
                            sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                    "%s: $.model.input: %zu features, but %s has %zu per image",
                                    conf->origin, dspec->numel, e->file, sc_shape_numel(ds->shape));
                        sc_dataset_free(ds);
                }
                if (!err)
                        ds->shape = conf->model.input;
                return err;
        }
        sc_decode_spec_t ls = *dspec;
        if (format == SC_CONF_EVAL_JSON && ls.format == SC_DECODE_AVRO) {
                /* Avro records' JSON: the same named fields and label path */
                ls.format = SC_DECODE_JSON;
                ls.avro = NULL;
        }
        if (format == SC_CONF_EVAL_CSV && ls.format != SC_DECODE_CSV)
                sc_decode_spec_defaults(&ls, SC_DECODE_CSV);
        else if (format == SC_CONF_EVAL_JSON && ls.format != SC_DECODE_JSON)
                sc_decode_spec_defaults(&ls, SC_DECODE_JSON);
        if (ls.format != dspec->format) {
                /* another format than the decoder's: its normalization and classes */
                ls.numel = dspec->numel;
                ls.n_classes = dspec->n_classes;
                ls.scale = dspec->scale;
                ls.mean = dspec->mean;
                ls.std = dspec->std;
        }
        err = sc_es_lines(e->file, text, len, &ls, conf, ds, errstr, errstr_size);
        free(text);
        return err;
}

/* The reading of eval.topic: its partitions (md), per partition the range
 * [next, hi) as of now, and while decoding the data set and the fault. */
typedef struct sc_es_range {
        const char *topic;
        rd_kafka_t *rk;
        const struct rd_kafka_metadata *md;
        int np;
        int64_t *hi, *next;
        size_t total;
        const sc_decode_spec_t *dspec;
        sc_dataset_t *ds;
        size_t n;
        sc_err_t err;
        char *errstr;
        size_t errstr_size;
} sc_es_range_t;

/* The topic's partitions and, per partition, its range as of now (learnt
 * by a fetch: sc_kafka_end_offsets). */
static sc_err_t sc_es_topic_ends(const sc_conf_t *conf, sc_es_range_t *r, char *errstr,
                                 size_t errstr_size)
{
        char why[512];
        sc_err_t err;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(r->rk, r->topic, NULL);
        rd_kafka_resp_err_t rerr = rd_kafka_metadata(r->rk, 0, rkt, &r->md, 10000);
        rd_kafka_topic_destroy(rkt);
        if (rerr || r->md->topic_cnt != 1 || r->md->topics[0].err ||
            r->md->topics[0].partition_cnt < 1)
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: $.eval.topic: %s: %s",
                               conf->origin, r->topic,
                               rd_kafka_err2str(rerr ? rerr
                                                : r->md->topic_cnt == 1 && r->md->topics[0].err
                                                    ? r->md->topics[0].err
                                                    : RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION));
        r->np = r->md->topics[0].partition_cnt;
        r->hi = calloc((size_t)r->np, sizeof(int64_t));
        r->next = calloc((size_t)r->np, sizeof(int64_t));
        if (!r->hi || !r->next)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        for (int p = 0; p < r->np; p++) {
                int32_t id = r->md->topics[0].partitions[p].id;
                int64_t lo = 0;
                if ((err = sc_kafka_end_offsets(r->rk, r->topic, id, 10000, &lo, &r->hi[p], why,
                                                sizeof(why))))
                        return sc_errf(err, errstr, errstr_size, "end offset: %s", why);
                r->next[p] = lo;
                r->total += (size_t)(r->hi[p] - lo);
        }
        if (r->total == 0)
                return sc_errf(SC_ERR_DECODE, errstr, errstr_size,
                               "%s: $.eval.topic: %s holds no records", conf->origin, r->topic);
        return SC_OK;
}

/* Decodes one record of the range into the data set's next row
 * (sc_kafka_range_fn); a malformed one ends the read with r->err. */
static int sc_es_topic_record(void *opaque, const rd_kafka_message_t *m)
{
        sc_es_range_t *r = opaque;
        const sc_decode_spec_t *dspec = r->dspec;
        char why[512];
        if (r->n >= r->total)
                return 1; /* more than the ends promised: the data set is full */
        sc_decode_header_t hd[SC_DECODE_MAX_HEADERS + 1];
        size_t nh = sc_kafka_headers(m, hd);
        sc_record_t rec = {.key = m->key,
                           .key_size = m->key_len,
                           .value = m->payload,
                           .value_size = m->len,
                           .headers = hd,
                           .n_headers = nh};
        sc_decode_fault_t f = sc_decode_record(dspec, &rec, r->ds->x + r->n * dspec->numel,
                                               r->ds->y + r->n, why, sizeof(why));
        if (f != SC_DECODE_OK) {
                r->err =
                    sc_errf(SC_ERR_DECODE, r->errstr, r->errstr_size,
                            "%s [%d] offset %lld: %s record (%s): %s", r->topic, (int)m->partition,
                            (long long)m->offset, sc_decode_format_name(dspec->format),
                            sc_decode_fault_name(f), why);
                return 1;
        }
        r->n++;
        return 0;
}

/* Reads each partition's range into ds (allocated for r->total samples). */
static sc_err_t sc_es_topic_read(sc_es_range_t *r, const sc_decode_spec_t *dspec, sc_dataset_t *ds,
                                 char *errstr, size_t errstr_size)
{
        r->dspec = dspec;
        r->ds = ds;
        r->errstr = errstr;
        r->errstr_size = errstr_size;
        for (int p = 0; p < r->np && !r->err; p++) {
                int32_t id = r->md->topics[0].partitions[p].id;
                sc_err_t err = sc_kafka_read_range(r->rk, r->topic, id, r->next[p], r->hi[p],
                                                   SC_ES_TOPIC_TIMEOUT_MS, sc_es_topic_record, r,
                                                   errstr, errstr_size);
                if (err && !r->err)
                        r->err = err;
        }
        ds->n = r->n;
        return r->err;
}

/* Reads every partition of eval.topic from its start to its end offset as
 * of now. */
static sc_err_t sc_es_topic(const sc_conf_t *conf, const sc_decode_spec_t *dspec, sc_dataset_t *ds,
                            char *errstr, size_t errstr_size)
{
        sc_es_range_t r = {.topic = conf->eval.topic};
        char why[512];
        sc_err_t err;
        if ((err = sc_kafka_reader_new(&r.rk, conf, "scadles-eval-reader", why, sizeof(why))))
                return sc_errf(err, errstr, errstr_size, "eval topic %s: %s", r.topic, why);
        if (!(err = sc_es_topic_ends(conf, &r, errstr, errstr_size))) {
                if ((double)r.total * (double)dspec->numel * sizeof(float) > SC_ES_TOPIC_MAX_BYTES)
                        err = sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                      "%s: $.eval.topic: %s holds %zu records, more than a "
                                      "held-out set kept in memory (%.0f MiB of features at most)",
                                      conf->origin, r.topic, r.total,
                                      SC_ES_TOPIC_MAX_BYTES / 1048576.0);
                else if (!(err = sc_dataset_alloc(ds, r.total, conf->model.input, dspec->n_classes,
                                                  errstr, errstr_size)))
                        err = sc_es_topic_read(&r, dspec, ds, errstr, errstr_size);
        }
        if (err)
                sc_dataset_free(ds);
        if (r.md)
                rd_kafka_metadata_destroy(r.md);
        free(r.hi);
        free(r.next);
        rd_kafka_consumer_close(r.rk);
        rd_kafka_destroy(r.rk);
        return err;
}

sc_err_t sc_eval_set_load(const sc_conf_t *conf, int n_classes, sc_dataset_t *ds, char *errstr,
                          size_t errstr_size)
{
        char why[512];
        size_t numel = sc_shape_numel(conf->model.input);
        memset(ds, 0, sizeof(*ds));
        if (!sc_eval_set_configured(conf)) {
                if (strcmp(conf->data.source, "fashion-mnist"))
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "%s: $.eval: no held-out set (set eval.file or eval.topic; "
                                       "data.source %s has no test file)",
                                       conf->origin, conf->data.source);
                if (sc_fmnist_load(conf->data.dir, NULL, ds, why, sizeof(why)))
                        return sc_errf(SC_ERR_IO, errstr, errstr_size,
                                       "Fashion-MNIST test set: %s (set eval.file or eval.topic "
                                       "for another held-out set)",
                                       why);
                if (sc_dataset_normalize(ds, (float)conf->data.mean, (float)conf->data.std, why,
                                         sizeof(why)) ||
                    sc_shape_numel(ds->shape) != numel || ds->n_classes != n_classes) {
                        sc_err_t e =
                            sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                    "%s: $.model: does not fit the Fashion-MNIST test "
                                    "set (%zu features, %d classes); set eval.file or "
                                    "eval.topic for a held-out set of your own",
                                    conf->origin, sc_shape_numel(ds->shape), ds->n_classes);
                        sc_dataset_free(ds);
                        return e;
                }
                return SC_OK;
        }
        sc_decode_spec_t dspec;
        sc_eval_set_decoder(conf, numel, n_classes, &dspec);
        if (sc_decode_spec_check(&dspec, why, sizeof(why)))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "%s: $.eval: %s", conf->origin,
                               why);
        if (conf->eval.file[0])
                return sc_es_file(conf, &dspec, ds, errstr, errstr_size);
        return sc_es_topic(conf, &dspec, ds, errstr, errstr_size);
}
