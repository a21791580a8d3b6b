/* kafka_util.c — shared librdkafka helpers: JSON configuration, log bridge,
 * delivery-tracked produce, metadata probe and offset-gap accounting. */
#include "sc_kafka_util.h"
#include "sc_clock.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- configuration ---- */

sc_err_t sc_kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value,
                           const char *where, char *errstr, size_t errstr_size)
{
        char why[512];
        if (!conf || !name || !value)
                return sc_errf(SC_ERR_INVAL, errstr, errstr_size, "%s: missing name or value",
                               where ? where : "kafka");
        if (rd_kafka_conf_set(conf, name, value, why, sizeof(why)) != RD_KAFKA_CONF_OK)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "%s: %s", where ? where : name,
                               why);
        return SC_OK;
}

/* Renders a scalar JSON value as librdkafka expects it; returns 0 when the
 * value has no string form (null, array, object). */
static int sc_kafka_json_scalar(const json_t *v, char *buf, size_t size)
{
        switch (json_typeof(v)) {
        case JSON_STRING:
                snprintf(buf, size, "%s", json_string_value(v));
                return 1;
        case JSON_INTEGER:
                snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                return 1;
        case JSON_REAL: {
                double d = json_real_value(v);
                snprintf(buf, size, "%.17g", d);
                if (strchr(buf, 'e') || strchr(buf, 'E'))
                        snprintf(buf, size, "%.6f", d);
                return 1;
        }
        case JSON_TRUE:
                snprintf(buf, size, "true");
                return 1;
        case JSON_FALSE:
                snprintf(buf, size, "false");
                return 1;
        default:
                return 0;
        }
}

static const char *sc_kafka_json_type_name(const json_t *v)
{
        switch (json_typeof(v)) {
        case JSON_NULL:
                return "null";
        case JSON_ARRAY:
                return "an array";
        case JSON_OBJECT:
                return "an object";
        default:
                return "a scalar";
        }
}

sc_err_t sc_kafka_conf_apply_json(rd_kafka_conf_t *conf, const json_t *obj, const char *path,
                                  char *errstr, size_t errstr_size)
{
        const char *key;
        json_t *val;
        char where[320], buf[1024];
        if (!path)
                path = "$.kafka";
        if (!obj)
                return SC_OK;
        if (!json_is_object(obj))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "%s: expected an object of librdkafka properties", path);
        json_object_foreach((json_t *)obj, key, val)
        {
                snprintf(where, sizeof(where), "%s.%s", path, key);
                if (!sc_kafka_json_scalar(val, buf, sizeof(buf)))
                        return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                       "%s: expected a string, number or boolean, got %s", where,
                                       sc_kafka_json_type_name(val));
                sc_err_t err = sc_kafka_conf_set(conf, key, buf, where, errstr, errstr_size);
                if (err)
                        return err;
        }
        return SC_OK;
}

sc_err_t sc_kafka_conf_from_json(rd_kafka_conf_t **confp, const json_t *obj, const char *path,
                                 char *errstr, size_t errstr_size)
{
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        if (!conf)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        sc_err_t err = sc_kafka_conf_apply_json(conf, obj, path, errstr, errstr_size);
        if (err) {
                rd_kafka_conf_destroy(conf);
                return err;
        }
        *confp = conf;
        return SC_OK;
}

sc_err_t sc_kafka_conf_check(const json_t *obj, const char *path, char *errstr, size_t errstr_size)
{
        rd_kafka_conf_t *conf = NULL;
        sc_err_t err = sc_kafka_conf_from_json(&conf, obj, path, errstr, errstr_size);
        if (conf)
                rd_kafka_conf_destroy(conf);
        return err;
}

/* ---- per-client configuration ---- */

/* librdkafka's own table says which client type reads each property (its
 * C/P column: C consumer, P producer, * both); read once. */
typedef struct sc_kafka_scope {
        char name[96];
        char cp;
} sc_kafka_scope_t;

static sc_kafka_scope_t *sc_kafka_scopes;
static size_t sc_kafka_nscopes;
static pthread_once_t sc_kafka_scope_once = PTHREAD_ONCE_INIT;

static void sc_kafka_scope_load(void)
{
        char *text = NULL, *line, *save = NULL;
        size_t len = 0, cap = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
                return;
        rd_kafka_conf_properties_show(f);
        fclose(f);
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                sc_kafka_scope_t sc;
                char cp[4];
                if (sscanf(line, "%95s | %3s |", sc.name, cp) != 2 || strlen(cp) != 1 ||
                    !strchr("CP*", cp[0]))
                        continue;
                sc.cp = cp[0];
                if (sc_kafka_nscopes == cap) {
                        size_t nc = cap ? 2 * cap : 256;
                        sc_kafka_scope_t *t = realloc(sc_kafka_scopes, nc * sizeof(*t));
                        if (!t)
                                break;
                        sc_kafka_scopes = t;
                        cap = nc;
                }
                sc_kafka_scopes[sc_kafka_nscopes++] = sc;
        }
        free(text);
}

int sc_kafka_conf_applies(const char *name, rd_kafka_type_t type)
{
        pthread_once(&sc_kafka_scope_once, sc_kafka_scope_load);
        for (size_t i = 0; i < sc_kafka_nscopes; i++)
                if (!strcmp(sc_kafka_scopes[i].name, name))
                        return sc_kafka_scopes[i].cp == '*' ||
                               sc_kafka_scopes[i].cp == (type == RD_KAFKA_CONSUMER ? 'C' : 'P');
        return 1; /* unknown: librdkafka itself says why it refuses it */
}

/* What the job's own clients need for rounds at network speed: a fetch
 * answered within 10 ms (the embedded broker holds every fetch for the whole
 * fetch.wait.max.ms, docs/BROKERS.md), produce batches sent at once, no
 * Nagle delay on small messages. */
static const char *const sc_kafka_latency_consumer[] = {"fetch.wait.max.ms",
                                                        "10",
                                                        "fetch.error.backoff.ms",
                                                        "10",
                                                        "socket.nagle.disable",
                                                        "true",
                                                        NULL};
static const char *const sc_kafka_latency_producer[] = {"linger.ms", "0", "socket.nagle.disable",
                                                        "true", NULL};

sc_err_t sc_kafka_client_conf(rd_kafka_conf_t **confp, const sc_conf_t *conf, rd_kafka_type_t type,
                              const char *const *defaults, char *errstr, size_t errstr_size)
{
        int cons = type == RD_KAFKA_CONSUMER;
        const char *sect = cons ? "kafka_consumer" : "kafka_producer";
        const json_t *own = cons ? conf->kafka_consumer : conf->kafka_producer;
        char where[320], buf[1024], path[32];
        const char *key;
        json_t *val;
        sc_err_t err = SC_OK;
        rd_kafka_conf_t *kc = rd_kafka_conf_new();
        if (!kc)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        for (const char *const *kv = cons ? sc_kafka_latency_consumer : sc_kafka_latency_producer;
             !err && kv[0]; kv += 2)
                err = sc_kafka_conf_set(kc, kv[0], kv[1], kv[0], errstr, errstr_size);
        for (const char *const *kv = defaults; !err && kv && kv[0]; kv += 2)
                err = sc_kafka_conf_set(kc, kv[0], kv[1], kv[0], errstr, errstr_size);
        /* kafka.* reaches every client that reads the property. */
        if (!err && conf->kafka)
                json_object_foreach((json_t *)conf->kafka, key, val)
                {
                        if (!sc_kafka_conf_applies(key, type))
                                continue;
                        snprintf(where, sizeof(where), "$.kafka.%s", key);
                        if (!sc_kafka_json_scalar(val, buf, sizeof(buf)))
                                err = sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                                              "%s: expected a string, number or boolean, got %s",
                                              where, sc_kafka_json_type_name(val));
                        else
                                err = sc_kafka_conf_set(kc, key, buf, where, errstr, errstr_size);
                        if (err)
                                break;
                }
        snprintf(path, sizeof(path), "$.%s", sect);
        if (!err)
                err = sc_kafka_conf_apply_json(kc, own, path, errstr, errstr_size);
        if (err) {
                rd_kafka_conf_destroy(kc);
                return err;
        }
        sc_kafka_conf_log_bridge(kc);
        *confp = kc;
        return SC_OK;
}

sc_err_t sc_kafka_conf_set_kv(rd_kafka_conf_t *conf, const char *kv, char *errstr,
                              size_t errstr_size)
{
        char name[256], where[300];
        const char *eq = kv ? strchr(kv, '=') : NULL;
        if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(name))
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size, "-X %s: expected name=value",
                               kv ? kv : "(null)");
        memcpy(name, kv, (size_t)(eq - kv));
        name[eq - kv] = '\0';
        snprintf(where, sizeof(where), "-X %s", name);
        return sc_kafka_conf_set(conf, name, eq + 1, where, errstr, errstr_size);
}

/* ---- logging ---- */

static pthread_mutex_t sc_kafka_log_lock = PTHREAD_MUTEX_INITIALIZER;
static sc_kafka_log_fn sc_kafka_log_sink;
static void *sc_kafka_log_opaque;

void sc_kafka_log_set_sink(sc_kafka_log_fn fn, void *opaque)
{
        pthread_mutex_lock(&sc_kafka_log_lock);
        sc_kafka_log_sink = fn;
        sc_kafka_log_opaque = opaque;
        pthread_mutex_unlock(&sc_kafka_log_lock);
}

static void sc_kafka_on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
        pthread_mutex_lock(&sc_kafka_log_lock);
        sc_kafka_log_fn fn = sc_kafka_log_sink;
        void *opaque = sc_kafka_log_opaque;
        pthread_mutex_unlock(&sc_kafka_log_lock);
        if (fn)
                fn(opaque, level, fac, rk ? rd_kafka_name(rk) : "", buf);
        else
                rd_kafka_log_print(rk, level, fac, buf);
}

/* The first authentication, TLS or fatal failure any bridged client
 * reported, as sc_kafka_fatal_check() words it; empty while there was none. */
static char sc_kafka_fatal_msg[768];

/* Error events: logged as librdkafka logs them without an error callback;
 * an authentication or TLS failure, or a fatal error, is remembered for
 * sc_kafka_fatal_check(). */
static void sc_kafka_on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
        char line[1024], fatal[512];
        const char *name = rk ? rd_kafka_name(rk) : "kafka";
        (void)opaque;
        line[0] = '\0';
        /* A TLS error counts only when the handshake failed (a certificate
         * not verified, no common protocol): an established connection's TLS
         * error (a peer that reset it) is retried like any disconnect. */
        int tls = err == RD_KAFKA_RESP_ERR__SSL && reason && strstr(reason, "handshake");
        if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION || tls ||
            err == RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED)
                snprintf(line, sizeof(line),
                         "Kafka authentication failed: %s: %s (check security.protocol, sasl.* "
                         "and ssl.* in the kafka settings)",
                         name, reason);
        else if (err == RD_KAFKA_RESP_ERR__FATAL && rk &&
                 rd_kafka_fatal_error(rk, fatal, sizeof(fatal)))
                snprintf(line, sizeof(line), "Kafka client %s: fatal error: %s", name, fatal);
        if (line[0]) {
                pthread_mutex_lock(&sc_kafka_log_lock);
                if (!sc_kafka_fatal_msg[0])
                        snprintf(sc_kafka_fatal_msg, sizeof(sc_kafka_fatal_msg), "%s", line);
                pthread_mutex_unlock(&sc_kafka_log_lock);
        }
        snprintf(line, sizeof(line), "%s: %s", name, reason);
        sc_kafka_on_log(rk, 3, "ERROR", line);
}

void sc_kafka_conf_log_bridge(rd_kafka_conf_t *conf)
{
        rd_kafka_conf_set_log_cb(conf, sc_kafka_on_log);
        rd_kafka_conf_set_error_cb(conf, sc_kafka_on_error);
}

sc_err_t sc_kafka_fatal_check(char *errstr, size_t errstr_size)
{
        char msg[sizeof(sc_kafka_fatal_msg)];
        pthread_mutex_lock(&sc_kafka_log_lock);
        memcpy(msg, sc_kafka_fatal_msg, sizeof(msg));
        pthread_mutex_unlock(&sc_kafka_log_lock);
        if (!msg[0])
                return SC_OK;
        return sc_errf(SC_ERR_IO, errstr, errstr_size, "%s", msg);
}

sc_err_t sc_kafka_fatal_or(sc_err_t err, char *errstr, size_t errstr_size)
{
        if (!err || errstr_size == 0)
                return err;
        return sc_kafka_fatal_check(errstr, errstr_size) ? SC_ERR_IO : err;
}

/* ---- produce with delivery tracking ---- */

void sc_kafka_delivery_init(sc_kafka_delivery_t *dv)
{
        memset(dv, 0, sizeof(*dv));
        dv->dv_first_err = RD_KAFKA_RESP_ERR_NO_ERROR;
        dv->dv_last_partition = -1;
        dv->dv_last_offset = -1;
}

static void sc_kafka_on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque)
{
        sc_kafka_delivery_t *dv = msg->_private;
        (void)rk;
        (void)opaque;
        if (!dv)
                return;
        dv->dv_pending--;
        if (msg->err) {
                dv->dv_failed++;
                if (dv->dv_first_err == RD_KAFKA_RESP_ERR_NO_ERROR)
                        dv->dv_first_err = msg->err;
        } else {
                dv->dv_delivered++;
                dv->dv_last_partition = msg->partition;
                dv->dv_last_offset = msg->offset;
        }
}

void sc_kafka_conf_delivery(rd_kafka_conf_t *conf)
{
        rd_kafka_conf_set_dr_msg_cb(conf, sc_kafka_on_delivery);
}

sc_err_t sc_kafka_reach_conf(sc_kafka_reach_t *r, rd_kafka_conf_t *kc, const sc_conf_t *conf,
                             int (*cb)(rd_kafka_t *, char *, size_t, void *), char *errstr,
                             size_t errstr_size)
{
        static const char key[] = "statistics.interval.ms";
        char val[32];
        size_t vs = sizeof(val);
        memset(r, 0, sizeof(*r));
        if (!json_object_get(conf->kafka, key) && !json_object_get(conf->kafka_consumer, key)) {
                sc_err_t err = sc_kafka_conf_set(kc, key, "1000", key, errstr, errstr_size);
                if (err)
                        return err;
        }
        r->on = rd_kafka_conf_get(kc, key, val, &vs) == RD_KAFKA_CONF_OK && atoi(val) > 0;
        rd_kafka_conf_set_stats_cb(kc, cb);
        return SC_OK;
}

const char *sc_kafka_reach_event(sc_kafka_reach_t *r, const char *json, size_t len, int *level)
{
        json_error_t jerr;
        json_t *root = json_loadb(json, len, 0, &jerr);
        json_t *brokers = json_object_get(root, "brokers");
        const char *name;
        json_t *b;
        int up = 0;
        if (!json_is_object(brokers)) { /* not an event this reads: says nothing */
                json_decref(root);
                return NULL;
        }
        json_object_foreach(brokers, name, b)
        {
                json_int_t id = json_integer_value(json_object_get(b, "nodeid"));
                const char *st = json_string_value(json_object_get(b, "state"));
                up += id >= 0 && st && !strcmp(st, "UP");
        }
        json_decref(root);
        r->brokers_up = up;
        r->t_stats = sc_clock_mono();
        if (!up && !r->down) {
                r->down = 1;
                *level = 4;
                return "no broker reachable: idle time does not count until one is";
        }
        if (up && r->down) {
                r->down = 0;
                *level = 5;
                return "a broker is reachable again";
        }
        return NULL;
}

int sc_kafka_cooperative(rd_kafka_t *rk)
{
        const char *proto = rd_kafka_rebalance_protocol(rk);
        return proto && !strcmp(proto, "COOPERATIVE");
}

/* Partitions rk holds now (0 when it cannot tell). */
static int sc_kafka_held(rd_kafka_t *rk)
{
        rd_kafka_topic_partition_list_t *held = NULL;
        int n = 0;
        if (rd_kafka_assignment(rk, &held) == RD_KAFKA_RESP_ERR_NO_ERROR && held)
                n = held->cnt;
        if (held)
                rd_kafka_topic_partition_list_destroy(held);
        return n;
}

void sc_kafka_consumer_leave(rd_kafka_t *rk, int timeout_ms)
{
        double now = sc_clock_mono(), end = now + timeout_ms / 1e3, empty_since = -1;
        rd_kafka_unsubscribe(rk);
        while (now < end) {
                if (sc_kafka_held(rk))
                        empty_since = -1;
                else if (empty_since < 0)
                        empty_since = now;
                else if (now - empty_since >= 0.2)
                        break;
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 50);
                if (m)
                        rd_kafka_message_destroy(m);
                now = sc_clock_mono();
        }
        rd_kafka_consumer_close(rk);
}

int sc_kafka_reach_ok(const sc_kafka_reach_t *r)
{
        if (!r->on)
                return 1;
        if (r->t_stats <= 0 || sc_clock_mono() - r->t_stats > 5.0)
                return 0;
        return r->brokers_up > 0;
}

sc_err_t sc_kafka_produceva_retry(rd_kafka_t *rk, const rd_kafka_vu_t *vu, size_t n,
                                  const char *topic, int32_t partition, int timeout_ms,
                                  char *errstr, size_t errstr_size)
{
        double deadline = sc_clock_mono() + (double)timeout_ms / 1000.0;
        for (;;) {
                rd_kafka_error_t *error = rd_kafka_produceva(rk, vu, n);
                if (!error)
                        return SC_OK;
                rd_kafka_resp_err_t code = rd_kafka_error_code(error);
                if (code != RD_KAFKA_RESP_ERR__QUEUE_FULL || sc_clock_mono() >= deadline) {
                        sc_err_t err =
                            code == RD_KAFKA_RESP_ERR__QUEUE_FULL ? SC_ERR_AGAIN : SC_ERR_IO;
                        sc_errf(err, errstr, errstr_size, "produce to %s [%" PRId32 "]: %s", topic,
                                partition, rd_kafka_error_string(error));
                        rd_kafka_error_destroy(error);
                        return err;
                }
                rd_kafka_error_destroy(error);
                rd_kafka_poll(rk, 10);
        }
}

/* The message's fields common to every produce: topic, partition, value,
 * key (when not NULL), dv as its opaque, copied. Returns the count. */
static size_t sc_kafka_vu_base(rd_kafka_vu_t *vu, const char *topic, int32_t partition,
                               const void *key, size_t key_len, const void *value, size_t value_len,
                               sc_kafka_delivery_t *dv)
{
        size_t n = 0;
        vu[n].vtype = RD_KAFKA_VTYPE_TOPIC;
        vu[n++].u.cstr = topic;
        vu[n].vtype = RD_KAFKA_VTYPE_PARTITION;
        vu[n++].u.i32 = partition;
        vu[n].vtype = RD_KAFKA_VTYPE_VALUE;
        vu[n].u.mem.ptr = (void *)value;
        vu[n++].u.mem.size = value_len;
        if (key) {
                vu[n].vtype = RD_KAFKA_VTYPE_KEY;
                vu[n].u.mem.ptr = (void *)key;
                vu[n++].u.mem.size = key_len;
        }
        vu[n].vtype = RD_KAFKA_VTYPE_OPAQUE;
        vu[n++].u.ptr = dv;
        vu[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
        vu[n++].u.i = RD_KAFKA_MSG_F_COPY;
        return n;
}

sc_err_t sc_kafka_produce(rd_kafka_t *rk, const char *topic, int32_t partition, const void *key,
                          size_t key_len, const void *value, size_t value_len, const char *hdr_name,
                          const void *hdr_value, size_t hdr_len, int64_t timestamp_ms,
                          sc_kafka_delivery_t *dv, int timeout_ms, char *errstr, size_t errstr_size)
{
        rd_kafka_vu_t vu[8];
        memset(vu, 0, sizeof(vu));
        size_t n = sc_kafka_vu_base(vu, topic, partition, key, key_len, value, value_len, dv);
        if (timestamp_ms > 0) {
                vu[n].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
                vu[n++].u.i64 = timestamp_ms;
        }
        if (hdr_name) {
                vu[n].vtype = RD_KAFKA_VTYPE_HEADER;
                vu[n].u.header.name = hdr_name;
                vu[n].u.header.val = hdr_value;
                vu[n++].u.header.size = (ssize_t)hdr_len;
        }
        sc_err_t err =
            sc_kafka_produceva_retry(rk, vu, n, topic, partition, timeout_ms, errstr, errstr_size);
        if (!err && dv)
                dv->dv_pending++;
        return err;
}

sc_err_t sc_kafka_produce_headers(rd_kafka_t *rk, const char *topic, int32_t partition,
                                  const void *key, size_t key_len, const void *value,
                                  size_t value_len, rd_kafka_headers_t *hdrs,
                                  sc_kafka_delivery_t *dv, int timeout_ms, char *errstr,
                                  size_t errstr_size)
{
        rd_kafka_vu_t vu[8];
        memset(vu, 0, sizeof(vu));
        size_t n = sc_kafka_vu_base(vu, topic, partition, key, key_len, value, value_len, dv);
        if (hdrs) {
                vu[n].vtype = RD_KAFKA_VTYPE_HEADERS;
                vu[n++].u.headers = hdrs;
        }
        sc_err_t err =
            sc_kafka_produceva_retry(rk, vu, n, topic, partition, timeout_ms, errstr, errstr_size);
        if (!err && dv)
                dv->dv_pending++;
        return err;
}

sc_err_t sc_kafka_delivery_wait(rd_kafka_t *rk, sc_kafka_delivery_t *dv, int timeout_ms,
                                char *errstr, size_t errstr_size)
{
        double deadline = sc_clock_mono() + (double)timeout_ms / 1000.0;
        while (dv->dv_pending > 0) {
                double left = deadline - sc_clock_mono();
                if (left <= 0)
                        return sc_errf(SC_ERR_AGAIN, errstr, errstr_size,
                                       "%" PRId64 " message(s) still awaiting delivery after %d ms",
                                       dv->dv_pending, timeout_ms);
                rd_kafka_poll(rk, left > 0.1 ? 100 : (int)(left * 1000.0) + 1);
        }
        if (dv->dv_failed > 0)
                return sc_errf(SC_ERR_IO, errstr, errstr_size,
                               "%" PRId64 " message(s) failed delivery; first error: %s",
                               dv->dv_failed, rd_kafka_err2str(dv->dv_first_err));
        return SC_OK;
}

sc_err_t sc_kafka_produce_sync(rd_kafka_t *rk, const char *topic, int32_t partition,
                               const void *key, size_t key_len, const void *value, size_t value_len,
                               int timeout_ms, int32_t *partitionp, int64_t *offsetp, char *errstr,
                               size_t errstr_size)
{
        sc_kafka_delivery_t dv;
        sc_kafka_delivery_init(&dv);
        sc_err_t err = sc_kafka_produce(rk, topic, partition, key, key_len, value, value_len, NULL,
                                        NULL, 0, 0, &dv, timeout_ms, errstr, errstr_size);
        if (err)
                return err;
        err = sc_kafka_delivery_wait(rk, &dv, timeout_ms, errstr, errstr_size);
        if (err == SC_ERR_AGAIN) {
                /* The report still references dv: wait for it without a
                 * deadline (message.timeout.ms bounds this). */
                while (dv.dv_pending > 0)
                        rd_kafka_poll(rk, 100);
        }
        if (err)
                return err;
        if (partitionp)
                *partitionp = dv.dv_last_partition;
        if (offsetp)
                *offsetp = dv.dv_last_offset;
        return SC_OK;
}

/* ---- probe ---- */

sc_err_t sc_kafka_probe(const char *bootstrap, int timeout_ms, int *brokersp, int *topicsp,
                        char *errstr, size_t errstr_size)
{
        char why[512];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        if (!conf)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        sc_err_t err = sc_kafka_conf_set(conf, "bootstrap.servers", bootstrap, "bootstrap", errstr,
                                         errstr_size);
        if (!err)
                err = sc_kafka_conf_set(conf, "log_level", "0", "log_level", errstr, errstr_size);
        if (err) {
                rd_kafka_conf_destroy(conf);
                return err;
        }
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof(why));
        if (!rk) {
                rd_kafka_conf_destroy(conf);
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: %s", bootstrap, why);
        }
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t kerr = rd_kafka_metadata(rk, 1, NULL, &md, timeout_ms);
        if (kerr) {
                err = sc_errf(SC_ERR_IO, errstr, errstr_size, "%s: no metadata within %d ms: %s",
                              bootstrap, timeout_ms, rd_kafka_err2str(kerr));
        } else {
                if (brokersp)
                        *brokersp = md->broker_cnt;
                if (topicsp)
                        *topicsp = md->topic_cnt;
                rd_kafka_metadata_destroy(md);
        }
        rd_kafka_destroy(rk);
        return err;
}

/* ---- offset gaps ---- */

void sc_kafka_gap_init(sc_kafka_gap_t *gp, int64_t start)
{
        gp->gp_next = start;
        gp->gp_lost = 0;
        gp->gp_events = 0;
}

size_t sc_kafka_headers(const rd_kafka_message_t *m, sc_decode_header_t *hd)
{
        rd_kafka_headers_t *rh = NULL;
        const char *name;
        const void *val;
        size_t size, n = 0;

        if (rd_kafka_message_headers(m, &rh) != RD_KAFKA_RESP_ERR_NO_ERROR || !rh)
                return 0;
        while (n <= SC_DECODE_MAX_HEADERS && !rd_kafka_header_get_all(rh, n, &name, &val, &size)) {
                hd[n] = (sc_decode_header_t){name, val, val ? size : 0};
                n++;
        }
        return n;
}

int64_t sc_kafka_gap_observe(sc_kafka_gap_t *gp, int64_t offset)
{
        int64_t lost = 0;
        if (gp->gp_next >= 0 && offset > gp->gp_next) {
                lost = offset - gp->gp_next;
                gp->gp_lost += lost;
                gp->gp_events++;
        }
        gp->gp_next = offset + 1;
        return lost;
}

sc_err_t sc_kafka_gap_resync(rd_kafka_t *rk, const char *topic, int32_t partition,
                             sc_kafka_gap_t *gp, int timeout_ms, int64_t *lostp, char *errstr,
                             size_t errstr_size)
{
        int64_t low = -1, high = -1, lost = 0;
        rd_kafka_resp_err_t kerr =
            rd_kafka_query_watermark_offsets(rk, topic, partition, &low, &high, timeout_ms);
        if (kerr)
                return sc_errf(SC_ERR_IO, errstr, errstr_size,
                               "%s [%" PRId32 "]: watermark query failed: %s", topic, partition,
                               rd_kafka_err2str(kerr));
        if (gp->gp_next >= 0 && low > gp->gp_next) {
                lost = low - gp->gp_next;
                gp->gp_lost += lost;
                gp->gp_events++;
        }
        if (gp->gp_next < 0 || low > gp->gp_next)
                gp->gp_next = low;
        if (lostp)
                *lostp = lost;
        return SC_OK;
}

/* Assigns rk exactly topic [partition] at offset. */
static sc_err_t sc_kafka_assign_one(rd_kafka_t *rk, const char *topic, int32_t partition,
                                    int64_t offset, char *errstr, size_t errstr_size)
{
        rd_kafka_topic_partition_list_t *tp = rd_kafka_topic_partition_list_new(1);
        if (!tp)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        rd_kafka_topic_partition_list_add(tp, topic, partition)->offset = offset;
        rd_kafka_resp_err_t rerr = rd_kafka_assign(rk, tp);
        rd_kafka_topic_partition_list_destroy(tp);
        if (rerr)
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "%s [%" PRId32 "]: assign: %s",
                               topic, partition, rd_kafka_err2str(rerr));
        return SC_OK;
}

sc_err_t sc_kafka_end_offsets(rd_kafka_t *rk, const char *topic, int32_t partition, int timeout_ms,
                              int64_t *lo, int64_t *hi, char *errstr, size_t errstr_size)
{
        rd_kafka_resp_err_t last = RD_KAFKA_RESP_ERR__TIMED_OUT;
        double deadline = sc_clock_mono() + timeout_ms / 1000.0;
        int64_t end = -1;
        *lo = 0;
        *hi = -1;
        sc_err_t aerr =
            sc_kafka_assign_one(rk, topic, partition, RD_KAFKA_OFFSET_END, errstr, errstr_size);
        if (aerr)
                return aerr;
        /* The end: a PARTITION_EOF's offset, or past a record that came first
         * (one produced since); the fetch's cached watermarks may add to it. */
        for (;;) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 50);
                int eof = 0;
                if (m) {
                        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF &&
                            m->partition == partition) {
                                eof = 1;
                                end = m->offset > end ? m->offset : end;
                        } else if (m->err) {
                                last = m->err;
                        } else if (m->partition == partition && m->offset + 1 > end) {
                                end = m->offset + 1;
                        }
                        rd_kafka_message_destroy(m);
                }
                if (eof)
                        break;
                if (sc_clock_mono() >= deadline)
                        break;
        }
        int64_t clo = -1, chi = -1;
        if (end >= 0 && !rd_kafka_get_watermark_offsets(rk, topic, partition, &clo, &chi)) {
                if (chi > end)
                        end = chi;
                if (clo > 0 && clo <= end)
                        *lo = clo;
        }
        rd_kafka_assign(rk, NULL);
        if (end < 0)
                return sc_errf(SC_ERR_IO, errstr, errstr_size,
                               "%s [%" PRId32 "]: no fetch reached the end within %d ms (%s)",
                               topic, partition, timeout_ms, rd_kafka_err2str(last));
        *hi = end;
        return SC_OK;
}

sc_err_t sc_kafka_read_range(rd_kafka_t *rk, const char *topic, int32_t partition, int64_t start,
                             int64_t end, int timeout_ms, sc_kafka_range_fn fn, void *opaque,
                             char *errstr, size_t errstr_size)
{
        if (end <= start)
                return SC_OK;
        sc_err_t aerr = sc_kafka_assign_one(rk, topic, partition, start, errstr, errstr_size);
        if (aerr)
                return aerr;
        sc_err_t err = SC_OK;
        int64_t got = 0;
        double deadline = sc_clock_mono() + timeout_ms / 1000.0;
        for (;;) {
                /* Checked before each poll: errors (a broker down) come as
                 * events, so the poll may never be empty. */
                if (sc_clock_mono() >= deadline) {
                        err = sc_errf(SC_ERR_IO, errstr, errstr_size,
                                      "%s [%" PRId32 "]: offsets [%" PRId64 ", %" PRId64
                                      "): %" PRId64 " record(s) read, then none within %d ms",
                                      topic, partition, start, end, got, timeout_ms);
                        break;
                }
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
                if (!m)
                        continue;
                int stop = 0;
                if (m->partition != partition) {
                        stop = 0; /* an event of a partition read before */
                } else if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF ||
                           m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ||
                           m->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) {
                        stop = 1;
                } else if (m->err) {
                        stop = 0;
                } else if (m->offset >= start && m->offset < end) {
                        got++;
                        deadline = sc_clock_mono() + timeout_ms / 1000.0;
                        stop = fn(opaque, m) || m->offset >= end - 1;
                } else if (m->offset >= end) {
                        stop = 1;
                }
                rd_kafka_message_destroy(m);
                if (stop)
                        break;
        }
        rd_kafka_assign(rk, NULL);
        return err;
}

/* ---- waking on any client ---- */

struct sc_kafka_waker {
        int fd[2]; /* a socket pair: librdkafka writes to fd[1], we read fd[0] */
        int n;
        rd_kafka_queue_t *q[SC_KAFKA_WAKER_MAX];
};

sc_err_t sc_kafka_waker_new(sc_kafka_waker_t **wkp, char *errstr, size_t errstr_size)
{
        sc_kafka_waker_t *wk = calloc(1, sizeof(*wk));
        *wkp = NULL;
        if (!wk)
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "out of memory");
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, wk->fd)) {
                int e = errno;
                free(wk);
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "socketpair: %s", strerror(e));
        }
        *wkp = wk;
        return SC_OK;
}

sc_err_t sc_kafka_waker_watch(sc_kafka_waker_t *wk, rd_kafka_t *rk, char *errstr,
                              size_t errstr_size)
{
        if (!rk)
                return SC_OK;
        if (wk->n == SC_KAFKA_WAKER_MAX)
                return sc_errf(SC_ERR_STATE, errstr, errstr_size, "waker: more than %d clients",
                               SC_KAFKA_WAKER_MAX);
        rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
        if (!q)
                q = rd_kafka_queue_get_main(rk);
        if (!q)
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "waker: %s has no queue",
                               rd_kafka_name(rk));
        rd_kafka_queue_io_event_enable(q, wk->fd[1], "1", 1);
        wk->q[wk->n++] = q;
        return SC_OK;
}

int sc_kafka_waker_wait(sc_kafka_waker_t *wk, int timeout_ms)
{
        struct pollfd pfd = {.fd = wk->fd[0], .events = POLLIN};
        char buf[64];
        if (poll(&pfd, 1, timeout_ms) <= 0)
                return 0;
        while (read(wk->fd[0], buf, sizeof(buf)) > 0)
                ;
        return 1;
}

void sc_kafka_waker_destroy(sc_kafka_waker_t *wk)
{
        if (!wk)
                return;
        for (int i = 0; i < wk->n; i++) {
                rd_kafka_queue_io_event_enable(wk->q[i], -1, NULL, 0);
                rd_kafka_queue_destroy(wk->q[i]);
        }
        close(wk->fd[0]);
        close(wk->fd[1]);
        free(wk);
}

sc_err_t sc_kafka_reader_new(rd_kafka_t **rkp, const sc_conf_t *conf, const char *name,
                             char *errstr, size_t errstr_size)
{
        const char *const def[] = {"client.id",
                                   name,
                                   "group.id",
                                   name,
                                   "enable.auto.commit",
                                   "false",
                                   "enable.partition.eof",
                                   "true",
                                   NULL};
        rd_kafka_conf_t *kc = NULL;
        char why[512];
        sc_err_t err;
        *rkp = NULL;
        if ((err = sc_kafka_client_conf(&kc, conf, RD_KAFKA_CONSUMER, def, errstr, errstr_size)))
                return err;
        if (!(*rkp = rd_kafka_new(RD_KAFKA_CONSUMER, kc, why, sizeof(why)))) {
                rd_kafka_conf_destroy(kc);
                return sc_errf(SC_ERR_IO, errstr, errstr_size, "%s", why);
        }
        rd_kafka_poll_set_consumer(*rkp);
        return SC_OK;
}
