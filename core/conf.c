/* conf.c — defaults, cross-property checks and the helpers callers use on a
 * parsed configuration; the property table itself is conf_table.c. */
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_impl.h"
#include "sc_decode.h"

const sc_conf_prop_t *sc_conf_find(const sc_conf_prop_t *props, size_t n, const char *path)
{
        for (size_t i = 0; i < n; i++)
                if (!strcmp(props[i].path, path))
                        return &props[i];
        return NULL;
}

void sc_conf_defaults(sc_conf_t *conf)
{
        memset(conf, 0, sizeof(*conf));
        snprintf(conf->origin, sizeof(conf->origin), "defaults");
        for (size_t i = 0; i < sc_conf_nprops; i++) {
                const sc_conf_prop_t *p = &sc_conf_props[i];
                if (!p->def)
                        continue;
                json_t *v = json_loads(p->def, JSON_DECODE_ANY, NULL);
                /* A bad default is caught by the unit tests; NOMEM leaves zero. */
                if (v)
                        sc_conf_parse_value(p, v, conf, conf, "default", p->path, NULL, 0);
                json_decref(v);
        }
}

void sc_conf_elem_refs(const sc_conf_list_t *l, void *elem, int take)
{
        for (size_t j = 0; j < l->nprops; j++)
                if (l->props[j].ref)
                        l->props[j].ref((char *)elem + l->props[j].offset, take);
}

void sc_conf_list_refs(const sc_conf_prop_t *p, void *base, int count, int take)
{
        for (int e = 0; e < count; e++)
                sc_conf_elem_refs(p->list,
                                  (char *)base + p->offset + (size_t)e * p->list->elem_size, take);
}

/* Takes or releases the references of every shared value of conf. */
static void sc_conf_refs(sc_conf_t *conf, int take)
{
        for (size_t i = 0; i < sc_conf_nprops; i++) {
                const sc_conf_prop_t *p = &sc_conf_props[i];
                if (p->ref)
                        p->ref((char *)conf + p->offset, take);
                if (p->type == SC_CONF_OBJ_LIST)
                        sc_conf_list_refs(p, conf, *(int *)((char *)conf + p->count_offset), take);
        }
}

void sc_conf_ref_values(sc_conf_t *copy)
{
        sc_conf_refs(copy, 1);
}

void sc_conf_free(sc_conf_t *conf)
{
        if (!conf)
                return;
        sc_conf_refs(conf, 0);
        json_decref((json_t *)conf->kafka);
        json_decref((json_t *)conf->kafka_consumer);
        json_decref((json_t *)conf->kafka_producer);
        conf->kafka = conf->kafka_consumer = conf->kafka_producer = NULL;
}

/* Gives list elements the value of their "inherit" property unless given. */
static void sc_conf_inherit(sc_conf_t *conf)
{
        for (size_t i = 0; i < sc_conf_nprops; i++) {
                const sc_conf_prop_t *p = &sc_conf_props[i];
                if (p->type != SC_CONF_OBJ_LIST)
                        continue;
                const sc_conf_list_t *l = p->list;
                int count = *(int *)((char *)conf + p->count_offset);
                const uint32_t *given = (const uint32_t *)((char *)conf + l->given_offset);
                const sc_conf_prop_t *tag =
                    l->tag ? sc_conf_find(l->props, l->nprops, l->tag) : NULL;
                for (int e = 0; e < count; e++) {
                        char *elem = (char *)conf + p->offset + (size_t)e * l->elem_size;
                        int kind = tag ? *(int *)(elem + tag->offset) : 0;
                        for (size_t j = 0; j < l->nprops; j++) {
                                const sc_conf_prop_t *q = &l->props[j];
                                if (!q->inherit || (given[e] >> j & 1u) ||
                                    (q->kinds && !(q->kinds >> kind & 1u)))
                                        continue;
                                const sc_conf_prop_t *src =
                                    sc_conf_find(sc_conf_props, sc_conf_nprops, q->inherit);
                                if (src && src->type == q->type && q->type == SC_CONF_ENUM)
                                        memcpy(elem + q->offset, (char *)conf + src->offset,
                                               sizeof(int));
                        }
                }
        }
}

/* Gives list elements the value of their "inherit" property unless given,
 * for the non-enum scalar types (sc_conf_inherit does enums). */
static void sc_conf_inherit_scalars(sc_conf_t *conf)
{
        for (size_t i = 0; i < sc_conf_nprops; i++) {
                const sc_conf_prop_t *p = &sc_conf_props[i];
                if (p->type != SC_CONF_OBJ_LIST)
                        continue;
                const sc_conf_list_t *l = p->list;
                int count = *(int *)((char *)conf + p->count_offset);
                const uint32_t *given = (const uint32_t *)((char *)conf + l->given_offset);
                for (int e = 0; e < count; e++) {
                        char *elem = (char *)conf + p->offset + (size_t)e * l->elem_size;
                        for (size_t j = 0; j < l->nprops; j++) {
                                const sc_conf_prop_t *q = &l->props[j];
                                if (!q->inherit || q->kinds || (given[e] >> j & 1u))
                                        continue;
                                const sc_conf_prop_t *src =
                                    sc_conf_find(sc_conf_props, sc_conf_nprops, q->inherit);
                                if (!src || src->type != q->type)
                                        continue;
                                size_t n = 0;
                                switch (q->type) {
                                case SC_CONF_INT:
                                case SC_CONF_BOOL:
                                        n = sizeof(int);
                                        break;
                                case SC_CONF_LONG:
                                        n = sizeof(long);
                                        break;
                                case SC_CONF_DOUBLE:
                                        n = sizeof(double);
                                        break;
                                case SC_CONF_FLOAT:
                                        n = sizeof(float);
                                        break;
                                case SC_CONF_STRING:
                                        n = q->size < src->size ? q->size : src->size;
                                        break;
                                case SC_CONF_CUSTOM:
                                        if (!q->ref || q->ref != src->ref)
                                                break;
                                        q->ref(elem + q->offset, 0);
                                        memcpy(elem + q->offset, (char *)conf + src->offset,
                                               sizeof(void *));
                                        q->ref(elem + q->offset, 1);
                                        break;
                                default:
                                        break;
                                }
                                if (n)
                                        memcpy(elem + q->offset, (char *)conf + src->offset, n);
                                if (q->type == SC_CONF_STRING && n)
                                        elem[q->offset + n - 1] = '\0';
                        }
                }
        }
}

void sc_conf_decode_spec(const sc_conf_decode_t *d, size_t numel, int n_classes,
                         sc_decode_spec_t *ds)
{
        static const sc_decode_label_source_t sources[] = {
            [SC_CONF_LABEL_FIELD] = SC_DECODE_LABEL_FIELD,
            [SC_CONF_LABEL_KEY] = SC_DECODE_LABEL_KEY,
            [SC_CONF_LABEL_HEADER] = SC_DECODE_LABEL_HEADER,
            [SC_CONF_LABEL_OFFSET] = SC_DECODE_LABEL_OFFSET,
        };
        sc_decode_spec_defaults(ds, d->format);
        ds->numel = numel;
        ds->n_classes = n_classes;
        ds->scale = (float)d->scale;
        ds->mean = (float)d->mean;
        ds->std = (float)d->std;
        if (d->label != SC_CONF_LABEL_AUTO && (int)d->label > 0 && d->label <= SC_CONF_LABEL_OFFSET)
                ds->label_source = sources[d->label]; /* auto: the format's default */
        ds->label_encoding = d->label_encoding;
        snprintf(ds->label_header, sizeof(ds->label_header), "%s", d->label_header);
        snprintf(ds->features_path, sizeof(ds->features_path), "%s", d->features_path);
        snprintf(ds->label_path, sizeof(ds->label_path), "%s", d->label_path);
        ds->delimiter = d->delimiter[0];
        ds->label_column = d->label_column;
        ds->first_feature_column = d->first_feature_column;
        ds->columns = d->columns;
        ds->dtype = d->dtype;
        ds->data_offset = (size_t)d->data_offset;
        ds->label_offset = (size_t)d->label_offset;
        ds->fields = d->fields;
        ds->labels = d->labels;
        ds->header = d->header;
}

/* A decoder with named fields as the decode module checks it (paths that
 * overlap, a json field without a path, csv columns against the label's and
 * the header), its message's "decode.<key>" turned into the key's JSON path
 * (fields, labels and header under $.streams when a topic inherits them). */
static sc_err_t sc_conf_check_fields_spec(const sc_conf_t *conf, const sc_conf_decode_t *d,
                                          const char *where, char *errstr, size_t errstr_size)
{
        char why[512], path[SC_CONF_PATH_MAX];
        sc_decode_spec_t s;
        if (!d->fields || d->format == SC_DECODE_RAW)
                return SC_OK;
        sc_conf_decode_spec(d, d->fields->width,
                            d->labels ? (int)sc_vocab_size(d->labels) : 1 << 20, &s);
        if (conf->source.unlabelled)
                sc_decode_spec_unlabelled(&s);
        if (!sc_decode_spec_check(&s, why, sizeof(why)))
                return SC_OK;
        const char *key = !strncmp(why, "decode.", 7) ? why + 7 : why;
        const sc_conf_decode_t *st = &conf->streams.decode;
        int inherited = (!strncmp(key, "fields", 6) && d->fields == st->fields) ||
                        (!strncmp(key, "labels", 6) && d->labels == st->labels) ||
                        (!strncmp(key, "header", 6) && d->header == st->header);
        size_t klen = strcspn(key, ":");
        snprintf(path, sizeof(path), "%s.%.*s", inherited ? "$.streams" : where, (int)klen, key);
        return sc_conf_fail(errstr, errstr_size, conf->origin, path, "%s",
                            key[klen] ? key + klen + (key[klen + 1] == ' ' ? 2 : 1) : "invalid");
}

/* Checks one decoder as configured; where is its JSON path. */
static sc_err_t sc_conf_check_decode(const sc_conf_t *conf, const sc_conf_decode_t *d,
                                     const char *where, char *errstr, size_t errstr_size)
{
        char path[SC_CONF_PATH_MAX];
        if (strlen(d->delimiter) != 1) {
                snprintf(path, sizeof(path), "%s.delimiter", where);
                return sc_conf_fail(errstr, errstr_size, conf->origin, path,
                                    "expected exactly one character, got \"%s\"", d->delimiter);
        }
        if (d->format == SC_DECODE_RAW && d->label == SC_CONF_LABEL_FIELD) {
                snprintf(path, sizeof(path), "%s.label", where);
                return sc_conf_fail(errstr, errstr_size, conf->origin, path,
                                    "raw records have no label field (use key, header or "
                                    "offset)");
        }
        if (d->format != SC_DECODE_RAW && d->label == SC_CONF_LABEL_OFFSET) {
                snprintf(path, sizeof(path), "%s.label", where);
                return sc_conf_fail(errstr, errstr_size, conf->origin, path,
                                    "offset labels are for raw records only");
        }
        if (d->fields && d->fields->width != sc_shape_numel(conf->model.input)) {
                snprintf(path, sizeof(path), "%s.fields", where);
                return sc_conf_fail(errstr, errstr_size, conf->origin, path,
                                    "the fields encode %zu features, model.input takes %zu (set "
                                    "it to [%zu])",
                                    d->fields->width, sc_shape_numel(conf->model.input),
                                    d->fields->width);
        }
        sc_err_t e = sc_conf_check_fields_spec(conf, d, where, errstr, errstr_size);
        if (e)
                return e;
        if (!d->fields && d->format == SC_DECODE_AVRO) {
                snprintf(path, sizeof(path), "%s.fields", where);
                return sc_conf_fail(errstr, errstr_size, conf->origin, path,
                                    "avro records are read by named fields: list them here");
        }
        if (conf->source.registry_url[0] && strncmp(conf->source.registry_url, "http://", 7) &&
            strncmp(conf->source.registry_url, "https://", 8))
                return sc_conf_fail(errstr, errstr_size, conf->origin,
                                    "$.source.schema_registry.url",
                                    "expected http://host[:port][/path] or https://..., got \"%s\"",
                                    conf->source.registry_url);
        if (d->format == SC_DECODE_AVRO && !conf->source.registry_url[0])
                return sc_conf_fail(errstr, errstr_size, conf->origin,
                                    "$.source.schema_registry.url",
                                    "%s.format is avro: give the Schema Registry its records' "
                                    "schemas come from",
                                    where);
        if (d->fields && d->format == SC_DECODE_RAW) {
                snprintf(path, sizeof(path), "%s.fields", where);
                return sc_conf_fail(errstr, errstr_size, conf->origin, path,
                                    "raw records have no named fields");
        }
        if ((d->format == SC_DECODE_JSON || d->format == SC_DECODE_AVRO) &&
            (d->features_path[0] != '$' || d->label_path[0] != '$')) {
                snprintf(path, sizeof(path), "%s.%s", where,
                         d->features_path[0] != '$' ? "features_path" : "label_path");
                return sc_conf_fail(errstr, errstr_size, conf->origin, path,
                                    "a JSON path starts with \"$\"");
        }
        return SC_OK;
}

/* How many nodes glibc's regcomp builds for an extended regex, roughly: it
 * copies a repeated subexpression once per repetition (x+ is x x*, x{n,m}
 * m copies), so nested repetitions multiply. A bound on it keeps a 256-byte
 * pattern like "((a)+)+..." from taking gigabytes and minutes to compile.
 * *adjacent is set for a repetition operator right after another ("a+*",
 * "a++": undefined in POSIX, and the fastest way to blow up glibc's
 * epsilon closures). *backref is set for a back-reference (\1 .. \9
 * outside a bracket expression): glibc matches those by backtracking,
 * exponential in the subject's length (one 56-character topic name took
 * 24 s against "^(.*)(.*)(.*)(.*)(.*)(.*)\6\5\4\3\2\1x"), and a topic
 * pattern never needs one. Counting stops past SC_CONF_REGEX_NODES. */
#define SC_CONF_REGEX_NODES 2000.0
static double sc_conf_regex_nodes(const char *p, int *adjacent, int *backref)
{
        double outer[SC_CONF_TOPIC_MAX], sum = 0, last = 0;
        int depth = 0, rep = 0, prev = 0;
        *adjacent = *backref = 0;
        for (; *p && sum <= SC_CONF_REGEX_NODES; p++, prev = rep) {
                rep = *p == '*' || *p == '+' || *p == '?' ||
                      (*p == '{' && p[1] >= '0' && p[1] <= '9');
                if (rep && prev) {
                        *adjacent = 1;
                        return sum;
                }
                switch (*p) {
                case '\\':
                        if (p[1] >= '1' && p[1] <= '9')
                                *backref = 1;
                        if (p[1])
                                p++;
                        sum += 1, last = 1;
                        break;
                case '[': /* a bracket expression is one node */
                        p++;
                        if (*p == '^')
                                p++;
                        if (*p == ']')
                                p++;
                        while (*p && *p != ']') {
                                if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
                                        char c = p[1];
                                        for (p += 2; *p && !(*p == c && p[1] == ']'); p++)
                                                ;
                                        if (*p)
                                                p++;
                                }
                                if (*p)
                                        p++;
                        }
                        if (!*p)
                                return sum + 1;
                        sum += 1, last = 1;
                        break;
                case '(':
                        outer[depth++] = sum;
                        sum = 0, last = 0;
                        break;
                case ')':
                        if (depth > 0) {
                                last = sum + 1;
                                sum = outer[--depth] + last;
                        } else {
                                sum += 1, last = 1;
                        }
                        break;
                case '+':
                        sum += last, last *= 2;
                        break;
                case '{': {
                        char *end;
                        long n = strtol(p + 1, &end, 10), m = n;
                        if (end == p + 1 || n < 0) {
                                sum += 1, last = 1;
                                break;
                        }
                        if (*end == ',') {
                                if (end[1] == '}') {
                                        m = n + 1;
                                        end++;
                                } else {
                                        m = strtol(end + 1, &end, 10);
                                }
                        }
                        if (*end != '}') {
                                sum += 1, last = 1;
                                break;
                        }
                        double k = (double)(m > n ? m : n);
                        if (k < 1)
                                k = 1;
                        sum += last * (k - 1), last *= k;
                        p = end;
                        break;
                }
                case '*':
                case '?':
                        sum += 1;
                        break;
                case '|':
                        sum += 1, last = 0;
                        break;
                default:
                        sum += 1, last = 1;
                }
        }
        while (depth > 0)
                sum += outer[--depth];
        return sum;
}

/* Cross-property rules of the source, streams and worker sections. */
static sc_err_t sc_conf_validate_streaming(const sc_conf_t *conf, char *errstr, size_t errstr_size)
{
        const char *o = conf->origin;
        const sc_stream_spec_t *st = &conf->streams.buffer;
        const sc_batch_spec_t *w = &conf->worker.batch;
        char path[64]; /* "$.source.topics[i]" */
        sc_err_t err;

        if (st->low_watermark >= st->high_watermark)
                return sc_conf_fail(errstr, errstr_size, o, "$.streams.low_watermark",
                                    "must be less than high_watermark (%g >= %g)",
                                    st->low_watermark, st->high_watermark);
        if (st->keep_min > st->cap)
                return sc_conf_fail(errstr, errstr_size, o, "$.streams.keep_min",
                                    "must be at most cap (%zu > %zu)", st->keep_min, st->cap);
        if (w->b_min > w->b_max)
                return sc_conf_fail(errstr, errstr_size, o, "$.worker.b_min",
                                    "must be at most b_max (%d > %d)", w->b_min, w->b_max);
        if (conf->source.pattern[0] && conf->source.pattern[0] != '^')
                return sc_conf_fail(errstr, errstr_size, o, "$.source.pattern",
                                    "a topic pattern starts with \"^\" (got \"%s\")",
                                    conf->source.pattern);
        if (conf->source.pattern[0]) {
                int adjacent, backref;
                double nodes = sc_conf_regex_nodes(conf->source.pattern, &adjacent, &backref);
                if (adjacent)
                        return sc_conf_fail(errstr, errstr_size, o, "$.source.pattern",
                                            "two repetition operators in a row (as in \"a+*\"; "
                                            "POSIX leaves them undefined): \"%s\"",
                                            conf->source.pattern);
                if (backref)
                        return sc_conf_fail(errstr, errstr_size, o, "$.source.pattern",
                                            "a back-reference (\\1 .. \\9) makes matching a "
                                            "topic name exponential in its length; a topic "
                                            "pattern needs none: \"%s\"",
                                            conf->source.pattern);
                if (nodes > SC_CONF_REGEX_NODES)
                        return sc_conf_fail(errstr, errstr_size, o, "$.source.pattern",
                                            "too many repetitions: compiled, the regex would "
                                            "expand to more than %.0f nodes (a repetition of a "
                                            "repetition multiplies): \"%s\"",
                                            SC_CONF_REGEX_NODES, conf->source.pattern);
                /* Compiled as librdkafka will compile it for the subscription. */
                regex_t re;
                int rc = regcomp(&re, conf->source.pattern, REG_EXTENDED | REG_NOSUB);
                if (rc) {
                        char why[128];
                        regerror(rc, &re, why, sizeof(why));
                        return sc_conf_fail(errstr, errstr_size, o, "$.source.pattern",
                                            "not a POSIX extended regex (%s): \"%s\"", why,
                                            conf->source.pattern);
                }
                regfree(&re);
        }
        if ((err = sc_conf_check_decode(conf, &conf->streams.decode, "$.streams", errstr,
                                        errstr_size)))
                return err;
        for (int i = 0; i < conf->source.n_topics; i++) {
                const sc_conf_topic_t *t = &conf->source.topics[i];
                snprintf(path, sizeof(path), "$.source.topics[%d]", i);
                if ((err = sc_conf_check_decode(conf, &t->decode, path, errstr, errstr_size)))
                        return err;
                for (const char *c = t->topic; *c; c++) {
                        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                              (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-')) {
                                snprintf(path, sizeof(path), "$.source.topics[%d].topic", i);
                                return sc_conf_fail(errstr, errstr_size, o, path,
                                                    "\"%s\" is not a topic name (1..249 of "
                                                    "[a-zA-Z0-9._-])",
                                                    t->topic);
                        }
                }
                if (!t->topic[0] || strlen(t->topic) > 249) {
                        snprintf(path, sizeof(path), "$.source.topics[%d].topic", i);
                        return sc_conf_fail(errstr, errstr_size, o, path,
                                            "a topic name has 1..249 characters");
                }
                for (int j = 0; j < i; j++) {
                        if (strcmp(conf->source.topics[j].topic, t->topic))
                                continue;
                        snprintf(path, sizeof(path), "$.source.topics[%d].topic", i);
                        return sc_conf_fail(errstr, errstr_size, o, path,
                                            "\"%s\" is listed twice (also topics[%d])", t->topic,
                                            j);
                }
        }
        return SC_OK;
}

/* Cross-property rules of the job section. */
static sc_err_t sc_conf_validate_job(const sc_conf_t *conf, char *errstr, size_t errstr_size)
{
        const sc_conf_job_t *j = &conf->job;
        sc_sync_spec_t sync = j->sync;
        char sub[256];

        if (!j->name[0])
                return sc_conf_fail(errstr, errstr_size, conf->origin, "$.job.name",
                                    "a job name has 1..%d characters", SC_CONF_JOB_NAME_MAX - 1);
        for (const char *c = j->name; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                      (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-'))
                        return sc_conf_fail(errstr, errstr_size, conf->origin, "$.job.name",
                                            "\"%s\" is not a topic name prefix (only "
                                            "[a-zA-Z0-9._-])",
                                            j->name);
        if (j->sync.b_min > j->sync.b_max)
                return sc_conf_fail(errstr, errstr_size, conf->origin, "$.job.sync.b_min",
                                    "must be at most b_max (%d > %d)", j->sync.b_min,
                                    j->sync.b_max);
        if (sc_sync_spec_check(&sync, sub, sizeof(sub)))
                return sc_conf_fail(errstr, errstr_size, conf->origin, "$.job", "%s", sub);
        return SC_OK;
}

/* metrics.listen: "" or [host]:port with a port of 0..65535, no blanks,
 * no URL (whether the host resolves is checked when the endpoint starts). */
static sc_err_t sc_conf_validate_listen(const sc_conf_t *conf, char *errstr, size_t errstr_size)
{
        const char *l = conf->metrics.listen;
        if (!l[0])
                return SC_OK;
        const char *colon = strrchr(l, ':');
        char *end = NULL;
        long port = colon ? strtol(colon + 1, &end, 10) : -1;
        int v6 = l[0] == '[';
        if (!colon || !colon[1] || *end || port < 0 || port > 65535 || strpbrk(l, " \t\n/") ||
            (!v6 && memchr(l, ':', (size_t)(colon - l))) ||
            (v6 &&
             (colon - l < 3 || colon[-1] != ']' || memchr(l + 1, ']', (size_t)(colon - l - 2)) ||
              memchr(l + 1, '[', (size_t)(colon - l - 2)))))
                return sc_conf_fail(errstr, errstr_size, conf->origin, "$.metrics.listen",
                                    "\"%s\" is not host:port (port 0-65535; [v6]:port; :port "
                                    "for every interface)",
                                    l);
        return SC_OK;
}

/* The eval section: one held-out source, labels only for IDX, a decoder
 * that names a listed topic. */
static sc_err_t sc_conf_validate_eval(const sc_conf_t *conf, char *errstr, size_t errstr_size)
{
        const sc_conf_eval_t *e = &conf->eval;
        const char *o = conf->origin;
        if (e->file[0] && e->topic[0])
                return sc_conf_fail(errstr, errstr_size, o, "$.eval.topic",
                                    "give eval.file or eval.topic, not both");
        if (e->labels[0] && !e->file[0])
                return sc_conf_fail(errstr, errstr_size, o, "$.eval.labels",
                                    "labels of an IDX eval.file, which is not given");
        if (e->labels[0] && e->format != SC_CONF_EVAL_AUTO && e->format != SC_CONF_EVAL_IDX)
                return sc_conf_fail(errstr, errstr_size, o, "$.eval.labels",
                                    "only an IDX eval.file has a labels file");
        if (e->format == SC_CONF_EVAL_IDX && !e->labels[0])
                return sc_conf_fail(errstr, errstr_size, o, "$.eval.labels",
                                    "an IDX eval.file needs its labels file");
        const sc_conf_decode_t *d = &conf->streams.decode;
        const char *by = e->decoder[0] ? e->decoder : e->topic;
        int found = 0;
        for (int i = 0; i < conf->source.n_topics; i++)
                if (!strcmp(conf->source.topics[i].topic, by)) {
                        d = &conf->source.topics[i].decode;
                        found = 1;
                }
        if (e->decoder[0] && !found)
                return sc_conf_fail(errstr, errstr_size, o, "$.eval.decoder",
                                    "\"%s\" is not a topic of source.topics", e->decoder);
        if (e->topic[0] && d->format == SC_DECODE_AVRO)
                return sc_conf_fail(errstr, errstr_size, o, "$.eval.topic",
                                    "an avro held-out topic is not read yet (its decoder is "
                                    "avro); give eval.file, JSON lines of the same records");
        return SC_OK;
}

sc_err_t sc_conf_validate(sc_conf_t *conf, char *errstr, size_t errstr_size)
{
        const char *o = conf->origin;
        sc_conf_optim_t *op = &conf->optim;
        const sc_sched_spec_t *s = &op->sched;

        if (conf->sim_section && sc_conf_validate_sim(conf, errstr, errstr_size))
                return SC_ERR_CONFIG;
        if (op->nesterov && op->momentum <= 0)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.nesterov",
                                    "needs optim.momentum > 0");
        if (conf->job.auth_key_file[0] && conf->job.auth_key_env[0])
                return sc_conf_fail(errstr, errstr_size, o, "$.job.auth.key_env",
                                    "give job.auth.key_file or job.auth.key_env, not both");
        if (conf->job.auth_none && (conf->job.auth_key_file[0] || conf->job.auth_key_env[0]))
                return sc_conf_fail(errstr, errstr_size, o, "$.job.auth.mode",
                                    "\"none\" with a key named in job.auth: drop one of them");
        if (sc_conf_validate_eval(conf, errstr, errstr_size))
                return SC_ERR_CONFIG;
        if (sc_conf_validate_listen(conf, errstr, errstr_size))
                return SC_ERR_CONFIG;
        if (s->warmup_steps > 0 && op->warmup_epochs > 0)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.schedule.warmup_epochs",
                                    "give warmup_steps or warmup_epochs, not both");
        if (s->total_steps > 0 && op->total_epochs > 0)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.schedule.total_epochs",
                                    "give total_steps or total_epochs, not both");
        if (s->n_milestones > 0 && op->n_milestones_epochs > 0)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.schedule.milestones_epochs",
                                    "give milestones or milestones_epochs, not both");
        if (s->kind == SC_SCHED_MULTISTEP && s->n_milestones == 0 && op->n_milestones_epochs == 0)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.schedule.milestones",
                                    "the multistep schedule needs at least one milestone");
        if (s->kind == SC_SCHED_COSINE && s->min_lr > op->lr)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.schedule.min_lr",
                                    "exceeds optim.lr (%g > %g)", s->min_lr, op->lr);
        if (s->kind == SC_SCHED_COSINE && s->total_steps > 0 && s->warmup_steps >= s->total_steps)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.schedule.warmup_steps",
                                    "must be less than total_steps (%ld >= %ld)", s->warmup_steps,
                                    s->total_steps);
        if (s->kind == SC_SCHED_COSINE && op->total_epochs > 0 &&
            op->warmup_epochs >= op->total_epochs)
                return sc_conf_fail(errstr, errstr_size, o, "$.optim.schedule.warmup_epochs",
                                    "must be less than total_epochs (%g >= %g)", op->warmup_epochs,
                                    op->total_epochs);
        conf->optim.sched.lr = op->lr;
        sc_conf_inherit(conf);
        sc_conf_inherit_scalars(conf);
        sc_err_t err = sc_conf_validate_streaming(conf, errstr, errstr_size);
        return err ? err : sc_conf_validate_job(conf, errstr, errstr_size);
}

sc_err_t sc_conf_sched_steps(const sc_conf_t *conf, long steps_per_epoch, sc_sched_spec_t *out,
                             char *errstr, size_t errstr_size)
{
        const sc_conf_optim_t *op = &conf->optim;
        double spe = (double)steps_per_epoch;

        if (steps_per_epoch < 1)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size,
                               "steps per epoch must be >= 1 (got %ld)", steps_per_epoch);
        *out = op->sched;
        out->lr = op->lr;
        if (op->warmup_epochs > 0)
                out->warmup_steps = lround(op->warmup_epochs * spe);
        if (op->total_epochs > 0)
                out->total_steps = lround(op->total_epochs * spe);
        if (op->n_milestones_epochs > 0) {
                out->n_milestones = op->n_milestones_epochs;
                for (int i = 0; i < op->n_milestones_epochs; i++) {
                        out->milestones[i] = lround(op->milestones_epochs[i] * spe);
                        if (i > 0 && out->milestones[i] <= out->milestones[i - 1])
                                return sc_conf_fail(
                                    errstr, errstr_size, conf->origin,
                                    "$.optim.schedule.milestones_epochs",
                                    "epochs %g and %g fall on the same step with %ld steps "
                                    "per epoch",
                                    op->milestones_epochs[i - 1], op->milestones_epochs[i],
                                    steps_per_epoch);
                }
        }
        if (out->total_steps == 0)
                out->total_steps = (long)conf->train.epochs * steps_per_epoch;
        if (out->kind == SC_SCHED_COSINE && out->warmup_steps >= out->total_steps)
                return sc_conf_fail(errstr, errstr_size, conf->origin,
                                    "$.optim.schedule.warmup_steps",
                                    "warmup (%ld steps) must be shorter than the run (%ld steps)",
                                    out->warmup_steps, out->total_steps);
        return SC_OK;
}

int sc_conf_kafka_secret(const char *key)
{
        static const char *const words[] = {"password", "secret", "key.pem", "oauthbearer.config"};
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
                if (strstr(key, words[i]))
                        return 1;
        return 0;
}

void sc_conf_model_error(const sc_conf_t *conf, char *errstr, size_t errstr_size)
{
        char msg[1024];

        if (!errstr || errstr_size == 0)
                return;
        snprintf(msg, sizeof(msg), "%s", errstr);
        snprintf(errstr, errstr_size, "%s: $.model.%s", conf->origin, msg);
}

int sc_conf_kafka_foreach(const sc_conf_t *conf, sc_conf_kv_fn fn, void *opaque)
{
        const char *key;
        json_t *v;
        char buf[64];

        if (!conf->kafka)
                return 0;
        json_object_foreach((json_t *)conf->kafka, key, v)
        {
                const char *s = buf;
                if (json_is_string(v)) {
                        s = json_string_value(v);
                } else if (json_is_integer(v)) {
                        snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                } else if (json_is_real(v)) {
                        double d = json_real_value(v);
                        /* librdkafka reads integer properties only without an exponent. */
                        if (d == floor(d) && fabs(d) < 1e15) {
                                snprintf(buf, sizeof(buf), "%.0f", d);
                        } else {
                                for (int prec = 1; prec <= 17; prec++) {
                                        snprintf(buf, sizeof(buf), "%.*g", prec, d);
                                        if (strtod(buf, NULL) == d)
                                                break;
                                }
                        }
                } else {
                        s = json_is_true(v) ? "true" : "false";
                }
                int rc = fn(key, s, opaque);
                if (rc)
                        return rc;
        }
        return 0;
}

const char *sc_conf_prop_name(size_t i)
{
        static char names[256][96];
        size_t k = 0;

        for (size_t r = 0; r < sc_conf_nprops; r++) {
                const sc_conf_prop_t *p = &sc_conf_props[r];
                if (k++ == i)
                        return p->path;
                if (p->type != SC_CONF_OBJ_LIST)
                        continue;
                for (size_t j = 0; j < p->list->nprops; j++, k++) {
                        if (k != i)
                                continue;
                        if (k >= 256)
                                return NULL;
                        snprintf(names[k], sizeof(names[k]), "%s[].%s", p->path,
                                 p->list->props[j].path);
                        return names[k];
                }
        }
        return NULL;
}

int sc_conf_section_given(const sc_conf_t *conf, const char *section)
{
        for (size_t s = 0; s < sc_conf_nsections; s++)
                if (!strcmp(sc_conf_sections[s].name, section))
                        return (int)(conf->sections_given >> s & 1u);
        return 0;
}

/* Sets the row named name among those flagged flag from its text value. */
static sc_err_t sc_conf_set_byname(sc_conf_t *conf, unsigned flag, const char *name,
                                   const char *value, int *known, char *errstr, size_t errstr_size)
{
        const sc_conf_prop_t *p = sc_conf_find(sc_conf_props, sc_conf_nprops, name);
        json_t *v = NULL;
        char want[384], scratch[512];

        *known = p && (p->flags & flag);
        if (!*known)
                return SC_OK;
        if (p->type == SC_CONF_INT || p->type == SC_CONF_LONG) {
                char *end;
                errno = 0;
                long x = strtol(value, &end, 10);
                if (!errno && end != value && !*end)
                        v = json_integer(x);
        } else if (p->type == SC_CONF_BOOL) {
                if (!strcmp(value, "true") || !strcmp(value, "1"))
                        v = json_true();
                else if (!strcmp(value, "false") || !strcmp(value, "0"))
                        v = json_false();
        } else {
                v = json_string(value);
        }
        sc_err_t err =
            v ? sc_conf_parse_value(p, v, conf, conf, name, name, scratch, sizeof(scratch))
              : SC_ERR_CONFIG;
        json_decref(v);
        if (err) {
                sc_conf_expect_text(p, want, sizeof(want));
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "%s: \"%s\": expected %s", name,
                               value, want);
        }
        return SC_OK;
}

sc_err_t sc_conf_set_embedding(sc_conf_t *conf, const char *name, const char *value, int *known,
                               char *errstr, size_t errstr_size)
{
        return sc_conf_set_byname(conf, SC_CONF_F_EMBED, name, value, known, errstr, errstr_size);
}

sc_err_t sc_conf_set_plugin(sc_conf_t *conf, const char *name, const char *value, int *known,
                            char *errstr, size_t errstr_size)
{
        return sc_conf_set_byname(conf, SC_CONF_F_PLUGIN, name, value, known, errstr, errstr_size);
}
