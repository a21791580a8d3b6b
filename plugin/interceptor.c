/* interceptor.c — the librdkafka interceptor plugin: a librdkafka client that
 * sets plugin.library.paths=libscadles gets an embedded worker fed with the
 * records the host consumes (on_consume), configured by scadles.* properties
 * (docs/PLUGIN.md) and connecting as the host does (its bootstrap.servers,
 * security.*, ssl.* and sasl.* settings). The host application is not
 * changed. A worker that cannot start puts the host's client in librdkafka's
 * fatal-error state (on_new's own return value is only logged by
 * librdkafka). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

#include "api_impl.h"
#include "sc_decode.h"
#include "sc_kafka_util.h"

#define SC_PLUG_NAME "scadles"
#define SC_PLUG_PREFIX "scadles."
#define SC_PLUG_MAX_SETS 64

/* One rd_kafka_conf_t's plugin settings (ic_opaque of its conf interceptors). */
typedef struct sc_plug_conf {
        scadles_conf_t *conf; /* training + embedding configuration so far */
        char *config_path;
        int n_sets; /* scadles.<key> overrides, replayed over a later config file */
        char *set_names[SC_PLUG_MAX_SETS], *set_values[SC_PLUG_MAX_SETS];
        sc_conf_plugin_t opts; /* scadles.<name> of the "plugin" section (docs/CONFIG.md) */
} sc_plug_conf_t;

/* One consumer instance's embedded worker (ic_opaque of its interceptors). */
typedef struct sc_plug_inst {
        scadles_worker_t *w;
        char *summary_file, *stats_file;
        int log_level, flush_ms;
        FILE *stats;
} sc_plug_inst_t;

static rd_kafka_resp_err_t sc_plug_register(rd_kafka_conf_t *conf, sc_plug_conf_t *pc);

static char *sc_plug_strdup(const char *s)
{
        return s ? strdup(s) : NULL;
}

static void sc_plug_conf_free(sc_plug_conf_t *pc)
{
        if (!pc)
                return;
        scadles_conf_destroy(pc->conf);
        free(pc->config_path);
        for (int i = 0; i < pc->n_sets; i++) {
                free(pc->set_names[i]);
                free(pc->set_values[i]);
        }
        free(pc);
}

static sc_plug_conf_t *sc_plug_conf_new(void)
{
        sc_plug_conf_t *pc = calloc(1, sizeof(*pc));
        if (!pc)
                return NULL;
        pc->conf = scadles_conf_new();
        if (!pc->conf) {
                free(pc);
                return NULL;
        }
        pc->opts = pc->conf->sc.plugin; /* the table's defaults */
        return pc;
}

/* Loads path into a fresh configuration (embedding settings kept) and
 * replays the overrides; pc changes only on success. */
static rd_kafka_conf_res_t sc_plug_load(sc_plug_conf_t *pc, const char *path, char *errstr,
                                        size_t errstr_size)
{
        char err[1024];
        scadles_conf_t *fresh = scadles_conf_dup(pc->conf);
        if (!fresh) {
                snprintf(errstr, errstr_size, "scadles.config: out of memory");
                return RD_KAFKA_CONF_INVALID;
        }
        if (scadles_conf_load(fresh, path, err, sizeof(err)))
                goto bad;
        for (int i = 0; i < pc->n_sets; i++)
                if (scadles_conf_set(fresh, pc->set_names[i], pc->set_values[i], err, sizeof(err)))
                        goto bad;
        /* The job's kafka properties fail here, not when the worker starts. */
        if (sc_kafka_conf_check((const json_t *)fresh->sc.kafka, "$.kafka", err, sizeof(err)))
                goto bad;
        char *p = strdup(path);
        if (!p) {
                scadles_conf_destroy(fresh);
                snprintf(errstr, errstr_size, "scadles.config: out of memory");
                return RD_KAFKA_CONF_INVALID;
        }
        scadles_conf_destroy(pc->conf);
        pc->conf = fresh;
        free(pc->config_path);
        pc->config_path = p;
        return RD_KAFKA_CONF_OK;
bad:
        scadles_conf_destroy(fresh);
        snprintf(errstr, errstr_size, "scadles.config=%s: %s", path, err);
        return RD_KAFKA_CONF_INVALID;
}

/* 1 for a host property the worker's own clients take over: where the
 * cluster is and how to authenticate to it. */
static int sc_plug_inherited(const char *name)
{
        return !strcmp(name, "bootstrap.servers") || !strcmp(name, "metadata.broker.list") ||
               !strncmp(name, "security.", 9) || !strncmp(name, "ssl.", 4) ||
               !strncmp(name, "sasl.", 5);
}

/* 0 if key=val (a scadles.kafka.* override) leaves kafka properties that
 * librdkafka takes; checked on a copy, so pc is unchanged either way. */
static int sc_plug_kafka_check(const sc_plug_conf_t *pc, const char *key, const char *val,
                               char *err, size_t err_size)
{
        scadles_conf_t *t = scadles_conf_dup(pc->conf);
        if (!t) {
                snprintf(err, err_size, "out of memory");
                return -1;
        }
        int bad = scadles_conf_set(t, key, val, err, err_size) ||
                  sc_kafka_conf_check((const json_t *)t->sc.kafka, "$.kafka", err, err_size);
        scadles_conf_destroy(t);
        return bad ? -1 : 0;
}

static rd_kafka_conf_res_t sc_plug_on_conf_set(rd_kafka_conf_t *conf, const char *name,
                                               const char *val, char *errstr, size_t errstr_size,
                                               void *ic_opaque)
{
        sc_plug_conf_t *pc = ic_opaque;
        char err[1024];
        if (strncmp(name, SC_PLUG_PREFIX, strlen(SC_PLUG_PREFIX)))
                return RD_KAFKA_CONF_UNKNOWN;
        const char *key = name + strlen(SC_PLUG_PREFIX);
        if (!val) {
                snprintf(errstr, errstr_size, "%s: cannot be reset", name);
                return RD_KAFKA_CONF_INVALID;
        }
        /* The interceptor's own properties: the table's plugin rows. */
        int known;
        pc->conf->sc.plugin = pc->opts;
        if (sc_conf_set_plugin(&pc->conf->sc, key, val, &known, err, sizeof(err))) {
                snprintf(errstr, errstr_size, "%s%s", SC_PLUG_PREFIX, err);
                return RD_KAFKA_CONF_INVALID;
        }
        if (known) { /* taken once a configuration file named has loaded */
                sc_conf_plugin_t o = pc->conf->sc.plugin;
                rd_kafka_conf_res_t r = strcmp(key, "config")
                                            ? RD_KAFKA_CONF_OK
                                            : sc_plug_load(pc, val, errstr, errstr_size);
                if (r == RD_KAFKA_CONF_OK)
                        pc->opts = o;
                return r;
        }
        if (!strncmp(key, "kafka.plugin.", 13)) {
                snprintf(errstr, errstr_size,
                         "%s: the embedded worker's own clients never load plugins", name);
                return RD_KAFKA_CONF_INVALID;
        }
        if ((!strncmp(key, "kafka.", 6) && sc_plug_kafka_check(pc, key, val, err, sizeof(err))) ||
            scadles_conf_set(pc->conf, key, val, err, sizeof(err))) {
                snprintf(errstr, errstr_size, "%s: %s", name, err);
                return RD_KAFKA_CONF_INVALID;
        }
        if (pc->n_sets == SC_PLUG_MAX_SETS) {
                snprintf(errstr, errstr_size, "%s: more than %d scadles.* overrides", name,
                         SC_PLUG_MAX_SETS);
                return RD_KAFKA_CONF_INVALID;
        }
        char *k = strdup(key), *v = strdup(val);
        if (!k || !v) {
                free(k);
                free(v);
                snprintf(errstr, errstr_size, "%s: out of memory", name);
                return RD_KAFKA_CONF_INVALID;
        }
        pc->set_names[pc->n_sets] = k;
        pc->set_values[pc->n_sets] = v;
        pc->n_sets++;
        return RD_KAFKA_CONF_OK;
}

static rd_kafka_resp_err_t sc_plug_on_conf_destroy(void *ic_opaque)
{
        sc_plug_conf_free(ic_opaque);
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static rd_kafka_resp_err_t sc_plug_on_conf_dup(rd_kafka_conf_t *new_conf,
                                               const rd_kafka_conf_t *old_conf, size_t filter_cnt,
                                               const char **filter, void *ic_opaque)
{
        const sc_plug_conf_t *old = ic_opaque;
        sc_plug_conf_t *pc = calloc(1, sizeof(*pc));
        if (!pc)
                return RD_KAFKA_RESP_ERR__FAIL;
        pc->conf = scadles_conf_dup(old->conf);
        pc->config_path = sc_plug_strdup(old->config_path);
        pc->opts = old->opts;
        int oom = 0;
        for (int i = 0; i < old->n_sets; i++) {
                pc->set_names[i] = sc_plug_strdup(old->set_names[i]);
                pc->set_values[i] = sc_plug_strdup(old->set_values[i]);
                pc->n_sets++;
                oom |= !pc->set_names[i] || !pc->set_values[i];
        }
        if (!pc->conf || oom) {
                sc_plug_conf_free(pc);
                return RD_KAFKA_RESP_ERR__FAIL;
        }
        return sc_plug_register(new_conf, pc);
}

static void sc_plug_log(const scadles_worker_t *w, int level, const char *line, void *opaque)
{
        const sc_plug_inst_t *pi = opaque;
        if (level <= pi->log_level)
                fprintf(stderr, "scadles: %s\n", line);
}

static void sc_plug_stats(scadles_worker_t *w, const char *json, void *opaque)
{
        sc_plug_inst_t *pi = opaque;
        if (pi->stats) {
                fprintf(pi->stats, "%s\n", json);
                fflush(pi->stats);
        }
        if (pi->summary_file && strstr(json, "\"final\":true")) {
                FILE *f = fopen(pi->summary_file, "w");
                if (!f) {
                        fprintf(stderr, "scadles: summary.file %s: cannot write\n",
                                pi->summary_file);
                        return;
                }
                fprintf(f, "%s\n", json);
                fclose(f);
        }
}

static void sc_plug_inst_free(sc_plug_inst_t *pi)
{
        if (!pi)
                return;
        if (pi->stats)
                fclose(pi->stats);
        free(pi->summary_file);
        free(pi->stats_file);
        free(pi);
}

static rd_kafka_resp_err_t sc_plug_on_consume(rd_kafka_t *rk, rd_kafka_message_t *m,
                                              void *ic_opaque)
{
        sc_plug_inst_t *pi = ic_opaque;
        if (m->err || !m->rkt)
                return RD_KAFKA_RESP_ERR_NO_ERROR;      /* EOF and errors are the host's */
        scadles_header_t hs[SC_DECODE_MAX_HEADERS + 1]; /* one past the limit: rejected */
        size_t n = 0;
        rd_kafka_headers_t *hdrs = NULL;
        if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
                const char *name;
                const void *value;
                size_t size;
                while (n <= SC_DECODE_MAX_HEADERS &&
                       rd_kafka_header_get_all(hdrs, n, &name, &value, &size) ==
                           RD_KAFKA_RESP_ERR_NO_ERROR) {
                        hs[n] = (scadles_header_t){name, value, value ? size : 0};
                        n++;
                }
        }
        scadles_push(pi->w, rd_kafka_topic_name(m->rkt), m->partition, m->offset, m->key,
                     m->key ? m->key_len : 0, m->payload, m->payload ? m->len : 0, hs, n,
                     rd_kafka_message_timestamp(m, NULL));
        /* Failures are counted by the worker (dropped / refused) and logged. */
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static rd_kafka_resp_err_t sc_plug_on_destroy(rd_kafka_t *rk, void *ic_opaque)
{
        sc_plug_inst_t *pi = ic_opaque;
        char err[1024];
        if (scadles_flush(pi->w, pi->flush_ms) == SCADLES_ERR_TIMED_OUT)
                fprintf(stderr,
                        "scadles: scadles.flush.timeout.ms (%d) passed before every "
                        "consumed record was trained\n",
                        pi->flush_ms);
        if (scadles_finish(pi->w, 10000, err, sizeof(err)))
                fprintf(stderr, "scadles: %s\n", err);
        scadles_destroy(pi->w);
        sc_plug_inst_free(pi);
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* A consumer whose worker could not start: the reason, raised as the
 * client's fatal error once librdkafka can take one. */
typedef struct sc_plug_fail {
        char why[512];
        int raised;
} sc_plug_fail_t;

/* on_new runs before the client can hold an error, so the main thread's
 * start raises it: the host sees RD_KAFKA_RESP_ERR__FATAL from its error
 * callback or consumer poll, and rd_kafka_fatal_error() gives the reason. */
static rd_kafka_resp_err_t sc_plug_fail_on_thread_start(rd_kafka_t *rk, rd_kafka_thread_type_t type,
                                                        const char *name, void *ic_opaque)
{
        sc_plug_fail_t *f = ic_opaque;
        if (type == RD_KAFKA_THREAD_MAIN && !f->raised) {
                f->raised = 1;
                rd_kafka_test_fatal_error(rk, RD_KAFKA_RESP_ERR__APPLICATION, f->why);
        }
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static rd_kafka_resp_err_t sc_plug_fail_on_destroy(rd_kafka_t *rk, void *ic_opaque)
{
        free(ic_opaque);
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* Prints why and arranges for the host's client to fail with it. */
static rd_kafka_resp_err_t sc_plug_fail(rd_kafka_t *rk, const char *why)
{
        sc_plug_fail_t *f = calloc(1, sizeof(*f));
        fprintf(stderr, "%s (the embedded worker cannot start: failing the consumer)\n", why);
        if (!f)
                return RD_KAFKA_RESP_ERR__APPLICATION;
        snprintf(f->why, sizeof(f->why), "%s", why);
        /* on_destroy first: once it is added, it frees f whatever follows */
        if (rd_kafka_interceptor_add_on_destroy(rk, SC_PLUG_NAME, sc_plug_fail_on_destroy, f))
                free(f); /* nothing added: librdkafka never calls back with f */
        else
                rd_kafka_interceptor_add_on_thread_start(rk, SC_PLUG_NAME,
                                                         sc_plug_fail_on_thread_start, f);
        return RD_KAFKA_RESP_ERR__APPLICATION;
}

/* The value of name in a conf dump (n name, value pairs), or NULL. */
static const char *sc_plug_dump_get(const char **kv, size_t n, const char *name)
{
        for (size_t i = 0; i + 1 < n; i += 2)
                if (!strcmp(kv[i], name))
                        return kv[i + 1];
        return NULL;
}

/* 1 if the job's kafka object sets name or its librdkafka alias. */
static int sc_plug_job_sets(const json_t *kafka, const char *name)
{
        static const char *const alias[][2] = {{"metadata.broker.list", "bootstrap.servers"},
                                               {"sasl.mechanisms", "sasl.mechanism"}};
        if (json_object_get(kafka, name))
                return 1;
        for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
                for (int k = 0; k < 2; k++)
                        if (!strcmp(name, alias[i][k]) && json_object_get(kafka, alias[i][!k]))
                                return 1;
        return 0;
}

/* The worker's kafka object gets the host's connection properties from the
 * host client's final configuration (whatever order they were set in):
 * each inherited property the host set to other than librdkafka's default
 * and the job file does not set (the job file wins). The security
 * properties (security.*, ssl.*, sasl.*) only go where the host's cluster
 * is: when the job names no other bootstrap servers. */
static int sc_plug_inherit(scadles_conf_t *c, const rd_kafka_conf_t *host)
{
        json_t *kafka = c->sc.kafka;
        rd_kafka_conf_t *def = rd_kafka_conf_new();
        size_t nh = 0, nd = 0;
        const char **kv = rd_kafka_conf_dump((rd_kafka_conf_t *)host, &nh);
        const char **dv = def ? rd_kafka_conf_dump(def, &nd) : NULL;
        int rc = -1;
        if (!kv || !dv || (!kafka && !(kafka = c->sc.kafka = json_object())))
                goto out;
        const char *hb = sc_plug_dump_get(kv, nh, "metadata.broker.list");
        const json_t *jb = json_object_get(kafka, "bootstrap.servers");
        if (!jb)
                jb = json_object_get(kafka, "metadata.broker.list");
        int same_cluster = !jb || (hb && json_is_string(jb) && !strcmp(json_string_value(jb), hb));
        for (size_t i = 0; i + 1 < nh; i += 2) {
                const char *name = kv[i], *val = kv[i + 1], *d = sc_plug_dump_get(dv, nd, name);
                if (!sc_plug_inherited(name) || (d && !strcmp(d, val)) ||
                    sc_plug_job_sets(kafka, name))
                        continue;
                if (strcmp(name, "metadata.broker.list") && !same_cluster)
                        continue;
                if (json_object_set_new(kafka, name, json_string(val)))
                        goto out;
        }
        rc = 0;
out:
        if (kv)
                rd_kafka_conf_dump_free(kv, nh);
        if (dv)
                rd_kafka_conf_dump_free(dv, nd);
        if (def)
                rd_kafka_conf_destroy(def);
        return rc;
}

static rd_kafka_resp_err_t sc_plug_on_new(rd_kafka_t *rk, const rd_kafka_conf_t *conf,
                                          void *ic_opaque, char *errstr, size_t errstr_size)
{
        const sc_plug_conf_t *pc = ic_opaque;
        char err[1024];
        if (rd_kafka_type(rk) != RD_KAFKA_CONSUMER)
                return RD_KAFKA_RESP_ERR_NO_ERROR; /* producers: nothing to train on */
        if (!pc->config_path && pc->conf->sc.model.n_layers == 0) {
                snprintf(errstr, errstr_size,
                         "scadles: no scadles.config and no scadles.model: nothing to train");
                return sc_plug_fail(rk, errstr);
        }
        sc_plug_inst_t *pi = calloc(1, sizeof(*pi));
        scadles_conf_t *c = scadles_conf_dup(pc->conf);
        if (!pi || !c)
                goto oom;
        pi->log_level = pc->opts.log_level;
        pi->flush_ms = pc->opts.flush_ms;
        if ((pc->opts.summary_file[0] && !(pi->summary_file = strdup(pc->opts.summary_file))) ||
            (pc->opts.stats_file[0] && !(pi->stats_file = strdup(pc->opts.stats_file))))
                goto oom;
        if (pi->stats_file && !(pi->stats = fopen(pi->stats_file, "a"))) {
                snprintf(errstr, errstr_size, "scadles: scadles.stats.file %s: cannot open",
                         pi->stats_file);
                goto fail;
        }
        if (sc_plug_inherit(c, conf))
                goto oom;
        scadles_conf_set_log_cb(c, sc_plug_log);
        scadles_conf_set_stats_cb(c, sc_plug_stats);
        scadles_conf_set_opaque(c, pi);
        pi->w = scadles_worker_new(c, err, sizeof(err));
        if (!pi->w) {
                snprintf(errstr, errstr_size, "scadles: %s", err);
                goto fail;
        }
        c = NULL; /* the worker's */
        if (scadles_start(pi->w)) {
                snprintf(errstr, errstr_size, "scadles: cannot start the training thread");
                goto fail;
        }
        /* on_destroy first: once it is added, it owns pi (a failed on_consume
         * then only fails the consumer) */
        if (rd_kafka_interceptor_add_on_destroy(rk, SC_PLUG_NAME, sc_plug_on_destroy, pi)) {
                snprintf(errstr, errstr_size, "scadles: cannot add interceptors");
                goto fail;
        }
        if (rd_kafka_interceptor_add_on_consume(rk, SC_PLUG_NAME, sc_plug_on_consume, pi)) {
                snprintf(errstr, errstr_size, "scadles: cannot add interceptors");
                return sc_plug_fail(rk, errstr);
        }
        return RD_KAFKA_RESP_ERR_NO_ERROR;
oom:
        snprintf(errstr, errstr_size, "scadles: out of memory");
fail:
        if (pi)
                scadles_destroy(pi->w);
        scadles_conf_destroy(c);
        sc_plug_inst_free(pi);
        return sc_plug_fail(rk, errstr);
}

static rd_kafka_resp_err_t sc_plug_register(rd_kafka_conf_t *conf, sc_plug_conf_t *pc)
{
        rd_kafka_resp_err_t err;
        /* on_conf_destroy first: if a later add fails, pc is still freed. */
        if ((err = rd_kafka_conf_interceptor_add_on_conf_destroy(conf, SC_PLUG_NAME,
                                                                 sc_plug_on_conf_destroy, pc))) {
                sc_plug_conf_free(pc);
                return err;
        }
        if ((err = rd_kafka_conf_interceptor_add_on_conf_set(conf, SC_PLUG_NAME,
                                                             sc_plug_on_conf_set, pc)) ||
            (err = rd_kafka_conf_interceptor_add_on_conf_dup(conf, SC_PLUG_NAME,
                                                             sc_plug_on_conf_dup, pc)) ||
            (err = rd_kafka_conf_interceptor_add_on_new(conf, SC_PLUG_NAME, sc_plug_on_new, pc)))
                return err;
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* The plugin's entry point, called by librdkafka for each configuration that
 * names the library in plugin.library.paths. */
SCADLES_EXPORT rd_kafka_resp_err_t conf_init(rd_kafka_conf_t *conf, void **plug_opaquep,
                                             char *errstr, size_t errstr_size)
{
        sc_plug_conf_t *pc = sc_plug_conf_new();
        if (!pc) {
                snprintf(errstr, errstr_size, "scadles: out of memory");
                return RD_KAFKA_RESP_ERR__FAIL;
        }
        rd_kafka_resp_err_t err = sc_plug_register(conf, pc);
        if (err) {
                snprintf(errstr, errstr_size, "scadles: cannot add interceptors: %s",
                         rd_kafka_err2str(err));
                return err;
        }
        if (plug_opaquep)
                *plug_opaquep = pc;
        return RD_KAFKA_RESP_ERR_NO_ERROR;
}
